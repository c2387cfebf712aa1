# mrcd's client side: control socket, clients, rings.  Linked only into
# mrcd (daemon/daemon.mk adds MRCD_SRCS to mrcd_SRCS): these need the
# daemon core's mrcd.h functions.
MRCD_SRCS += daemon/ctlsock.c daemon/clients.c daemon/client_cm.c daemon/rings.c

# mrcd's client side (daemon/clients/): the client socket, clients, their
# connection requests and rings.  Built on the core's mrcd.h only; linked
# into mrcd (daemon/daemon.mk).
MRCD_CLIENTS_SRCS := daemon/clients/clisock.c daemon/clients/clients.c \
                     daemon/clients/client_mr.c daemon/clients/client_qp.c \
                     daemon/clients/client_cm.c daemon/clients/rings.c \
                     daemon/clients/sidown.c daemon/clients/notify.c \
                     daemon/clients/strag.c

# mrcd: the core (loop, node, connection manager) plus the client side,
# whose sources daemon/clients.mk lists in MRCD_SRCS.
MRCD_SRCS ?=
PROGS += mrcd
mrcd_SRCS = daemon/main.c daemon/core.c daemon/node.c daemon/cm.c daemon/reload.c $(MRCD_SRCS)
ROOT_TESTS += tests/root/mrcd.sh

# mrcd: main.c wires the three rooms together: the core library
# (daemon/core.mk), the client side (daemon/clients.mk) and the operator
# interface (daemon/oper.mk).
PROGS += mrcd
mrcd_SRCS = daemon/main.c $(MRCD_CLIENTS_SRCS) $(MRCD_OPER_SRCS) $(MRCD_CORE_LIB)
ROOT_TESTS += tests/root/mrcd.sh tests/root/admin_state.sh tests/root/self.sh
ROOT_TESTS += tests/root/systemd_boot.sh

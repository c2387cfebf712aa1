PROGS += mrc-xfer
# The daemon core library (daemon/core.mk): the loop, node glue and
# connection manager, without clients or operator interface.
mrc-xfer_SRCS = tools/xfer/xfer.c tools/xfer/flow.c $(MRCD_CORE_LIB)
ROOT_TESTS += tests/root/xfer.sh

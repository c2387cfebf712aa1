PROGS += mrc-xfer
mrc-xfer_SRCS = tools/xfer/xfer.c tools/xfer/flow.c daemon/core.c daemon/node.c daemon/cm.c
ROOT_TESTS += tests/root/xfer.sh

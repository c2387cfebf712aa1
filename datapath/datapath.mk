CORE_SRCS += datapath/datapath.c datapath/udp.c datapath/af_xdp.c datapath/dpdk.c datapath/verbs.c

# The verbs provider builds when libibverbs-dev (rdma-core) is installed
# (scripts/deps.sh installs it); without it, verbs.c is the 'not built in'
# stub.  --as-needed keeps libibverbs out of the programs that never reach
# a datapath.
MRC_HAVE_VERBS := $(shell pkg-config --exists libibverbs && echo 1)
ifeq ($(MRC_HAVE_VERBS),1)
CORE_SRCS += datapath/verbs_io.c datapath/verbs_ops.c
$(B)/datapath/verbs.o $(B)/datapath/verbs_io.o $(B)/datapath/verbs_ops.o \
$(B)/tests/test_dp_verbs.o $(B)/tests/test_dp_verbs_dev.o: CFLAGS_ALL += -DMRC_HAVE_VERBS=1
LDLIBS_ALL += -Wl,--as-needed -libverbs -Wl,--no-as-needed
# The fuzzing build (build/fuzz: FZ is set after this file is read).
build/fuzz/datapath/verbs.o build/fuzz/datapath/verbs_io.o \
build/fuzz/fuzz/fuzz_verbs.o: FUZZ_CFLAGS += -DMRC_HAVE_VERBS=1
endif

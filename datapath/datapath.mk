CORE_SRCS += datapath/datapath.c datapath/udp.c datapath/udp_urgent.c datapath/udp_args.c datapath/af_xdp.c datapath/dpdk.c datapath/verbs.c

# The verbs provider builds when libibverbs-dev (rdma-core) is installed
# (scripts/deps.sh installs it); without it, verbs.c is the 'not built in'
# stub.  --as-needed keeps libibverbs out of the programs that never reach
# a datapath.
MRC_HAVE_VERBS := $(shell pkg-config --exists libibverbs && echo 1)
ifeq ($(MRC_HAVE_VERBS),1)
CORE_SRCS += datapath/verbs_io.c datapath/verbs_ops.c
$(B)/datapath/verbs.o $(B)/datapath/verbs_io.o $(B)/datapath/verbs_ops.o \
$(B)/tests/test_dp_verbs.o $(B)/tests/test_dp_verbs_dev.o $(B)/tests/test_dp_verbs_peer.o \
$(B)/tests/support/fake_verbs.o: CFLAGS_ALL += -DMRC_HAVE_VERBS=1
LDLIBS_ALL += -Wl,--as-needed -libverbs -Wl,--no-as-needed
# The fuzzing build (build/fuzz: FZ is set after this file is read).
build/fuzz/datapath/verbs.o build/fuzz/datapath/verbs_io.o \
build/fuzz/fuzz/fuzz_verbs.o: FUZZ_CFLAGS += -DMRC_HAVE_VERBS=1
endif
# Frame datapaths' shared parts (dpdk; af_xdp can use them) and the dpdk
# options: no DPDK needed, always built and tested.
CORE_SRCS += datapath/frame.c datapath/nexthop.c datapath/dpdk_args.c

# DPDK (Debian libdpdk-dev, scripts/deps.sh) when pkg-config finds it;
# otherwise the dpdk provider is the not-built-in form.  Its headers are
# system headers (-isystem), so -Wall -Wextra -Werror stays for our code.
MRC_DPDK ?= $(shell pkg-config --exists libdpdk 2>/dev/null && echo 1)
ifeq ($(MRC_DPDK),1)
DPDK_CFLAGS := -DMRC_HAVE_DPDK $(patsubst -I%,-isystem %,$(shell pkg-config --cflags libdpdk))
$(B)/datapath/dpdk.o: CFLAGS_ALL += $(DPDK_CFLAGS)
LDLIBS_ALL += $(shell pkg-config --libs libdpdk)
endif
# tests/root/xfer.sh and mrcd.sh on the dpdk datapath at 1 GiB, and dpdk <-> udp
# (skip without DPDK).
ROOT_TESTS += tests/root/xfer_dpdk.sh tests/root/xfer_dpdk_mix.sh tests/root/mrcd_dpdk.sh


# af_xdp: built in when libxdp/libbpf (pkg-config) and clang (for its XDP
# program) are there; otherwise af_xdp.c compiles to the "not built in"
# provider.  The XDP program is embedded in af_xdp_prog.o.
MRC_HAVE_AF_XDP := $(shell pkg-config --exists libxdp libbpf 2>/dev/null && \
                     command -v clang >/dev/null && echo 1)
ifeq ($(MRC_HAVE_AF_XDP),1)
CORE_SRCS += datapath/af_xdp_nd.c datapath/af_xdp_prog.c
EXTRA_LDLIBS += $(shell pkg-config --libs libxdp libbpf)
AF_XDP_BPF_OBJ := $(B)/bpf/af_xdp.bpf.o
$(AF_XDP_BPF_OBJ): datapath/af_xdp.bpf.c
	@mkdir -p $(dir $@)
	clang -O2 -g -target bpf -Wall -Werror \
		-I/usr/include/$(shell gcc -dumpmachine) -c $< -o $@
$(B)/datapath/af_xdp_prog.o: $(AF_XDP_BPF_OBJ)
$(B)/datapath/af_xdp_prog.o: EXTRA_CFLAGS += -DMRC_AF_XDP_BPF_OBJ='"$(AF_XDP_BPF_OBJ)"'
$(B)/datapath/af_xdp.o: EXTRA_CFLAGS += -DMRC_HAVE_AF_XDP
# The fuzz build (build/fuzz: FZ is not set yet when this is read) compiles
# the core with its own flags: same object, same define.
build/fuzz/datapath/af_xdp_prog.o: $(AF_XDP_BPF_OBJ)
build/fuzz/datapath/af_xdp_prog.o: FUZZ_CFLAGS += -DMRC_AF_XDP_BPF_OBJ='"$(AF_XDP_BPF_OBJ)"'
endif
ROOT_TESTS += tests/root/af_xdp.sh tests/root/mrcd_af_xdp.sh

CORE_SRCS += datapath/datapath.c datapath/udp.c datapath/af_xdp.c datapath/dpdk.c datapath/verbs.c
CORE_SRCS += datapath/af_xdp_frame.c

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
ROOT_TESTS += tests/root/af_xdp.sh

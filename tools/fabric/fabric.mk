# tools/fabric/: mrc-fabric, the emulated SRv6 fabric in network namespaces,
# with its tc BPF trimmer (compiled with clang -target bpf and embedded in
# the binary), and the root integration tests that use it.
PROGS += mrc-fabric
mrc-fabric_SRCS := tools/fabric/main.c tools/fabric/util.c tools/fabric/ns.c \
                   tools/fabric/plan.c tools/fabric/state.c tools/fabric/up.c \
                   tools/fabric/fault.c tools/fabric/query.c tools/fabric/probe.c \
                   tools/fabric/trim_load.c tools/fabric/trim_obj.c
mrc-fabric_LDLIBS := -lbpf

FABRIC_BPF_OBJ := $(B)/bpf/trim.bpf.o
# -I for <asm/types.h>, which Debian keeps under the multiarch directory.
$(FABRIC_BPF_OBJ): tools/fabric/trim.bpf.c topology/addr.h
	@mkdir -p $(dir $@)
	clang -O2 -g -target bpf -Wall -Werror -I. \
		-I/usr/include/$(shell gcc -dumpmachine) -c $< -o $@
$(B)/tools/fabric/trim_obj.o: $(FABRIC_BPF_OBJ)
$(B)/tools/fabric/trim_obj.o: EXTRA_CFLAGS += -DMRC_TRIM_BPF_OBJ='"$(FABRIC_BPF_OBJ)"'

ROOT_TESTS += tests/root/fabric.sh

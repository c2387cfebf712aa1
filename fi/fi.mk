# The libfabric provider "mrc" (docs/libfabric.md): build/lib/libmrc-fi.so,
# libfabric's external-provider form (lib<name>-fi.so exporting only
# fi_prov_ini, found through FI_PROVIDER_PATH or libfabric's provider
# directory), with libmrc linked in (its PIC archive) so that it is one
# self-contained file.
FI_PROV_SRCS := fi/prov.c fi/info.c fi/mr.c fi/av.c fi/cq.c fi/cntr.c fi/eq.c fi/wait.c fi/ep.c fi/ep_tx.c fi/ep_rx.c fi/ep_rz.c fi/ep_prog.c fi/epops.c fi/epops_rma.c fi/trace.c \
	fi/proto.c
FI_PROV_OBJS := $(FI_PROV_SRCS:%.c=$(B)/lib/pic/%.o)
FI_PROV_SO := $(B)/lib/libmrc-fi.so
all: $(FI_PROV_SO)
$(FI_PROV_SO): $(FI_PROV_OBJS) $(B)/lib/libmrc.a fi/fi.map
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_ALL) -shared -Wl,--version-script=fi/fi.map -Wl,--no-undefined \
		-o $@ $(FI_PROV_OBJS) $(B)/lib/libmrc.a -lfabric -lpthread

# The tests open the provider through libfabric (FI_PROVIDER_PATH).
$(B)/tests/test_fi_%: LDLIBS_ALL += -lfabric
# (Explicit targets: a pattern rule without a recipe adds no prerequisite.)
$(B)/tests/test_fi_prov $(B)/tests/test_fi_msg $(B)/tests/test_fi_rma $(B)/tests/test_fi_proc \
	$(B)/tests/test_fi_pingpong $(B)/tests/test_fi_multi $(B)/tests/test_fi_compact: | $(FI_PROV_SO)
CORE_SRCS += fi/proto.c
# The provider runs a progress and an accept thread beside the
# application's: ThreadSanitizer too (make check-tsan).
TSAN_TESTS += test_fi_prov test_fi_msg test_fi_rma test_fi_proc test_fi_multi test_fi_compact
check-tsan: $(FI_PROV_SO)

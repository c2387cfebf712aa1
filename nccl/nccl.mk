# The NCCL net plugin (docs/nccl.md): build/lib/libnccl-net-mrc.so, with
# libmrc linked in (its PIC archive) so the plugin is one self-contained
# file, exporting only ncclNetPlugin_v11/_v10/_v9/_v8.  Its harness,
# mrc-nccl-harness, drives it as NCCL's proxy thread does.
NCCL_PLUGIN_SRCS := nccl/plugin.c nccl/arena.c
NCCL_PLUGIN_SO := $(B)/lib/libnccl-net-mrc.so
all: $(NCCL_PLUGIN_SO)
$(NCCL_PLUGIN_SO): $(NCCL_PLUGIN_SRCS:%.c=$(B)/lib/pic/%.o) $(B)/lib/libmrc.a nccl/plugin.map
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_ALL) -shared -Wl,--version-script=nccl/plugin.map -Wl,--no-undefined \
		-o $@ $(NCCL_PLUGIN_SRCS:%.c=$(B)/lib/pic/%.o) $(B)/lib/libmrc.a -lpthread

PROGS += mrc-nccl-harness
mrc-nccl-harness_SRCS := nccl/harness.c nccl/drive.c
$(B)/bin/mrc-nccl-harness: $(B)/lib/libmrc.a | $(NCCL_PLUGIN_SO)

# The unit tests load the plugin the way NCCL does.
$(B)/tests/test_nccl_plugin: | $(NCCL_PLUGIN_SO)
TEST_SUPPORT_SRCS += nccl/arena.c nccl/drive.c

ROOT_TESTS += tests/root/nccl.sh

.PHONY: install-nccl
install: install-nccl
install-nccl: $(NCCL_PLUGIN_SO)
	install -d $(DESTDIR)$(PREFIX)/lib
	install -m 755 $(NCCL_PLUGIN_SO) $(DESTDIR)$(PREFIX)/lib/libnccl-net-mrc.so

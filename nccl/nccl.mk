# The NCCL net plugin (docs/nccl.md): build/lib/libnccl-net-mrc.so, with
# libmrc linked in (its PIC archive) so the plugin is one self-contained
# file, exporting only ncclNetPlugin_v11/_v10/_v9/_v8.  Its harness,
# mrc-nccl-harness (tools/nccl-harness.mk), drives it as NCCL's proxy
# thread does.
#
# CUDA buffers (docs/nccl.md, "CUDA buffers"): with nvcc found (gpu/cuda.mk)
# the plugin links libmrc-gpu's CUDA copy engine and the CUDA runtime
# statically (as NCCL links it: nothing to find on the library path);
# without, gpu/cuda_none.c says -ENOSYS and the plugin is host-only.
NCCL_PLUGIN_SRCS := nccl/conn.c nccl/log.c nccl/data.c nccl/send.c nccl/recv.c nccl/eager.c nccl/reg.c nccl/tables.c nccl/stage.c nccl/arena.c nccl/tclass.c
NCCL_PLUGIN_OBJS := $(NCCL_PLUGIN_SRCS:%.c=$(B)/lib/pic/%.o)
ifeq ($(HAVE_CUDA),1)
NCCL_CUDA_OBJS := $(B)/gpu/pic/gpu/cuda_ops.o $(B)/gpu/pic/gpu/cuda_err.o
NCCL_CUDA_LIBS := -L$(CUDA_HOME)/lib64 -lcudart_static -ldl -lrt
else
NCCL_CUDA_OBJS := $(B)/gpu/pic/gpu/cuda_none.o
NCCL_CUDA_LIBS :=
endif
NCCL_PLUGIN_SO := $(B)/lib/libnccl-net-mrc.so
all: $(NCCL_PLUGIN_SO)
$(NCCL_PLUGIN_SO): $(NCCL_PLUGIN_OBJS) $(NCCL_CUDA_OBJS) $(B)/lib/libmrc.a nccl/plugin.map
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_ALL) -shared -Wl,--version-script=nccl/plugin.map -Wl,--no-undefined \
		-o $@ $(NCCL_PLUGIN_OBJS) $(NCCL_CUDA_OBJS) $(B)/lib/libmrc.a $(NCCL_CUDA_LIBS) -lpthread

# The same plugin with a fake copy engine in place of CUDA's (host memcpy
# run at the event wait, injected delays and failures, counters;
# tests/support/nccl_fake_cuda.c), for tests/test_nccl_cuda.c without a
# GPU.  Exports the plugin's tables and the fake's controls.
NCCL_FAKE_SO := $(B)/tests/libnccl-net-mrcfake.so
$(NCCL_FAKE_SO): $(NCCL_PLUGIN_OBJS) $(B)/lib/pic/tests/support/nccl_fake_cuda.o \
		$(B)/lib/libmrc.a tests/support/nccl_fake.map
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_ALL) -shared -Wl,--version-script=tests/support/nccl_fake.map \
		-Wl,--no-undefined -o $@ $(NCCL_PLUGIN_OBJS) \
		$(B)/lib/pic/tests/support/nccl_fake_cuda.o $(B)/lib/libmrc.a -lpthread
$(B)/tests/test_nccl_cuda: | $(NCCL_PLUGIN_SO) $(NCCL_FAKE_SO)
$(B)/tests/test_nccl_eager: | $(NCCL_PLUGIN_SO) $(NCCL_FAKE_SO)
$(B)/tests/test_nccl_tags: | $(NCCL_PLUGIN_SO) $(NCCL_FAKE_SO)
$(B)/tests/test_nccl_hostile: | $(NCCL_PLUGIN_SO) $(NCCL_FAKE_SO)
$(B)/tests/test_nccl_pieces: | $(NCCL_PLUGIN_SO) $(NCCL_FAKE_SO)

# The unit tests load the plugin the way NCCL does.
$(B)/tests/test_nccl_plugin: | $(NCCL_PLUGIN_SO)
$(B)/tests/test_nccl_tclass: | $(NCCL_PLUGIN_SO)
TEST_SUPPORT_SRCS += nccl/arena.c tools/nccl-harness/drive.c tests/support/nccl_pairs.c

ROOT_TESTS += tests/root/nccl.sh

.PHONY: install-nccl
install: install-nccl
install-nccl: $(NCCL_PLUGIN_SO)
	install -d $(DESTDIR)$(PREFIX)/lib
	install -m 755 $(NCCL_PLUGIN_SO) $(DESTDIR)$(PREFIX)/lib/libnccl-net-mrc.so

# libmrc-gpu, host side (C, no CUDA): producer channels on a QP's rings
# and the daemon watchdog (mrc/gpu.h).  Shared and static like libmrc
# (lib/lib.mk); the shared one links libmrc.  The CUDA part is gpu/cuda.mk.
LIBMRCGPU_VERSION := 1.0.0
LIBMRCGPU_SRCS := gpu/chan.c gpu/watch.c $(MRC_GPU_CUDA_SRCS)   # the latter: gpu/cuda.mk
LIBMRCGPU_PIC  := $(LIBMRCGPU_SRCS:%.c=$(B)/gpu/pic/%.o)
LIBMRCGPU_A    := $(B)/gpu/libmrc-gpu.a
LIBMRCGPU_SO   := $(B)/gpu/libmrc-gpu.so

all: $(LIBMRCGPU_SO) $(LIBMRCGPU_A)

$(B)/gpu/pic/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -fPIC -MMD -MP -c $< -o $@

$(LIBMRCGPU_A): $(LIBMRCGPU_PIC)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(LIBMRCGPU_SO): $(LIBMRCGPU_PIC) gpu/libmrc-gpu.map $(B)/lib/libmrc.so
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_ALL) -shared -Wl,-soname,libmrc-gpu.so.1 \
		-Wl,--version-script=gpu/libmrc-gpu.map -Wl,--no-undefined \
		-o $@ $(LIBMRCGPU_PIC) -L$(B)/lib -lmrc $(CUDA_LDLIBS) -lpthread

# Headers (mrc/gpu.h) and man pages (man/mrc_gpu.3) come with
# scripts/install.sh, which installs every include/mrc/*.h and man/*.3.
.PHONY: install-gpu
install: install-gpu
install-gpu: $(LIBMRCGPU_SO) $(LIBMRCGPU_A)
	install -d $(DESTDIR)$(PREFIX)/lib
	install -m 644 $(LIBMRCGPU_A) $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(LIBMRCGPU_SO) $(DESTDIR)$(PREFIX)/lib/libmrc-gpu.so.$(LIBMRCGPU_VERSION)
	ln -sf libmrc-gpu.so.$(LIBMRCGPU_VERSION) $(DESTDIR)$(PREFIX)/lib/libmrc-gpu.so.1
	ln -sf libmrc-gpu.so.1 $(DESTDIR)$(PREFIX)/lib/libmrc-gpu.so

# Tests and benchmarks find the objects in the test support library.
TEST_SUPPORT_SRCS += $(LIBMRCGPU_SRCS)
# Producer threads under ThreadSanitizer (make check-san runs them).
TSAN_TESTS += test_gpu_chan

# tests/gpu/gpu_selftest.cu built as host C++ with gpu.h's cuda::atomic_ref
# primitives (MRC_GPU_CCCL), where CUDA's CCCL headers exist: its kernels
# run on host threads against the stand-in consumer.  A test binary of
# make check (and of the TSan stage); nvcc builds the same file for GPUs.
CUDA_HOME ?= /usr/local/cuda
ifneq ($(wildcard $(CUDA_HOME)/include/cccl/cuda/atomic),)
$(B)/tests/gpu_selftest_cccl: tests/gpu/gpu_selftest.cu include/mrc/gpu.h include/mrc/ring.h
	@mkdir -p $(dir $@)
	g++ -std=c++17 -g -O2 -Wall -Wextra -Werror -DMRC_GPU_CCCL -x c++ -Iinclude \
		-isystem $(CUDA_HOME)/include/cccl $(filter -fsanitize=% -fno-sanitize-recover=all \
		-Wno-tsan,$(CFLAGS_ALL)) -o $@ $< -lpthread
EXTRA_TEST_BINS += $(B)/tests/gpu_selftest_cccl
TSAN_TESTS += gpu_selftest_cccl
endif

# gpu/: the CUDA build (docs/gpu.md, "Build").
#
# CUDA_HOME (default /usr/local/cuda) is used when $(CUDA_HOME)/bin/nvcc
# exists: gpu/*.cu and examples/*.cu compile with nvcc for sm_90, the PTX
# probe (a kernel calling mrc/gpu.h's producer) is emitted into
# $(B)/gpu/*.ptx for tests/test_gpu_ptx.c, and libmrc-gpu's CUDA host code
# (plain C against the runtime API) links -lcudart.  Without nvcc, one
# line says so and the rest builds: libmrc-gpu's CUDA entry points then
# return -ENOSYS (gpu/cuda_none.c) and the GPU tests skip.
#
# MRC_GPUDIRECT=1 (off by default) also builds the dmabuf export of
# device memory for an RDMA datapath (gpu/gpudirect.c: the driver API
# through cudart; the registration is the verbs datapath's mem_reg).

CUDA_HOME ?= /usr/local/cuda
MRC_GPUDIRECT ?= 0
NVCC := $(CUDA_HOME)/bin/nvcc
HAVE_CUDA := $(if $(wildcard $(NVCC)),1,)

# libmrc-gpu's GPU-memory and CUDA parts: the staging pipeline and its
# libmrc glue build everywhere; then the CUDA backend or its -ENOSYS
# stand-in.  gpu/host.mk (read after this file) puts them in the library
# (static and shared) and the test support library with its own sources.
MRC_GPU_CUDA_SRCS := gpu/stage.c gpu/gpumem.c
ifeq ($(HAVE_CUDA),1)
MRC_GPU_CUDA_SRCS += gpu/cuda_err.c gpu/cuda_ops.c gpu/cuda_chan.c
ifeq ($(MRC_GPUDIRECT),1)
MRC_GPU_CUDA_SRCS += gpu/gpudirect.c
endif
else
MRC_GPU_CUDA_SRCS += gpu/cuda_none.c
ifeq ($(MRC_GPUDIRECT),1)
$(error MRC_GPUDIRECT=1 needs CUDA: no nvcc at $(NVCC) (set CUDA_HOME))
endif
endif
CUDA_LDLIBS :=

ifeq ($(HAVE_CUDA),1)
CUDA_CFLAGS := -isystem $(CUDA_HOME)/include -DMRC_HAVE_CUDA=1
CUDA_LDLIBS := -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudart
ifeq ($(MRC_GPUDIRECT),1)
CUDA_CFLAGS += -DMRC_GPUDIRECT=1
endif
# Host C that calls the CUDA runtime, and the programs and tests that link
# libmrc-gpu (target-specific: nothing else links cudart).
$(MRC_GPU_CUDA_SRCS:%.c=$(B)/%.o) $(MRC_GPU_CUDA_SRCS:%.c=$(B)/gpu/pic/%.o) \
$(B)/tests/test_gpu_cuda.o: CFLAGS_ALL += $(CUDA_CFLAGS)
$(B)/tests/test_gpu_stage $(B)/tests/test_gpu_cuda: LDLIBS_ALL += $(CUDA_LDLIBS)

# nvcc: C++17, device code for sm_90 (H100/H200), host side with the
# project's warnings as errors.
NVCC_FLAGS := -std=c++17 -arch=sm_90 -O2 -g -Iinclude -I. --Werror all-warnings \
	-Xcompiler -Wall,-Wextra,-Werror,-Wno-unused-parameter -DMRC_HAVE_CUDA=1
$(B)/%.cu.o: %.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCC_FLAGS) -MMD -MP -c $< -o $@

# The PTX probe and the checker's reference producer, each also in a
# deliberately broken variant (no fence before the publication) that
# tests/test_gpu_ptx.c must reject.  The probe needs mrc/gpu.h's producer
# (gpu/ptx_probe.cu); until the header has one, only the reference builds.
GPU_PTX := $(B)/gpu/ptx_ref.ptx $(B)/gpu/ptx_ref_broken.ptx
GPU_PRODUCER_RE := ^(MRC_GPU_FN[^(]*)?mrc_gpu_post[(]
ifneq ($(shell grep -lE '$(GPU_PRODUCER_RE)' include/mrc/gpu.h),)
GPU_PTX += $(B)/gpu/ptx_probe.ptx $(B)/gpu/ptx_probe_broken.ptx
endif
$(B)/gpu/ptx_ref.ptx: tests/support/ptx_ref.cu
$(B)/gpu/ptx_ref_broken.ptx: tests/support/ptx_ref.cu
$(B)/gpu/ptx_probe.ptx $(B)/gpu/ptx_probe_broken.ptx: gpu/ptx_probe.cu include/mrc/gpu.h include/mrc/ring.h
$(GPU_PTX):
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCC_FLAGS) $(if $(findstring _broken,$@),-DMRC_PTX_BROKEN=1) -ptx \
		$(firstword $(filter %.cu,$^)) -o $@
all: $(GPU_PTX)
$(B)/tests/test_gpu_ptx: | $(GPU_PTX)

# Every .cu in gpu/ and examples/ compiles; ptx_*.cu are PTX-only probes.
GPU_CU_OBJS := $(patsubst %.cu,$(B)/%.cu.o,$(filter-out gpu/ptx_%.cu,$(wildcard gpu/*.cu examples/*.cu)))
all: $(GPU_CU_OBJS)

# examples/gpu_put in kernel mode: gpu_put_host.c with -DGPU_PUT_CUDA and
# the kernel of gpu_put.cu, against libmrc-gpu (with its CUDA part), libmrc
# and cudart.
$(B)/examples/gpu_put_host_cuda.o: examples/gpu_put_host.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -DGPU_PUT_CUDA -MMD -MP -c $< -o $@
# (libmrc by path: lib/lib.mk, which names it, is read after this file.)
$(B)/bin/mrc_gpu_put_cuda: $(B)/examples/gpu_put_host_cuda.o $(B)/examples/gpu_put.cu.o \
		$(MRC_GPU_CUDA_SRCS:%.c=$(B)/%.o) $(B)/gpu/chan.o $(B)/gpu/watch.o $(B)/lib/libmrc.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(CUDA_LDLIBS) -lstdc++ $(LDLIBS_ALL)
all: $(B)/bin/mrc_gpu_put_cuda

# The GPU-machine check (scripts/gpu-check.sh builds the same there without
# make): built here so that it always compiles; it skips without a GPU.
GPUCHECK_SRCS := gpu/stage.c gpu/cuda_err.c gpu/cuda_ops.c gpu/cuda_chan.c
$(B)/tests/gpu/gpucheck: $(B)/tests/gpu/gpucheck.o $(B)/tests/gpu/gpucheck_kern.cu.o \
		$(GPUCHECK_SRCS:%.c=$(B)/%.o)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(CUDA_LDLIBS) -lstdc++ -lpthread
$(B)/tests/gpu/gpucheck.o: CFLAGS_ALL += $(CUDA_CFLAGS)
all: $(B)/tests/gpu/gpucheck
# The producer's GPU self-test (one .cu with its main), for a GPU machine.
$(B)/tests/gpu/gpu_selftest: tests/gpu/gpu_selftest.cu include/mrc/gpu.h include/mrc/ring.h
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCC_FLAGS) -o $@ $< -lpthread
all: $(B)/tests/gpu/gpu_selftest

else
# Said once per top-level make (sub-makes inherit MRC_CUDA_SAID).
ifeq ($(MRC_CUDA_SAID),)
$(info gpu/: CUDA not found at $(CUDA_HOME): skipped; set CUDA_HOME)
export MRC_CUDA_SAID := 1
endif
endif

/* CUDA runtime errors as negative errnos, and the one "is there a GPU"
 * test every CUDA entry point of libmrc-gpu starts with (gpu/cuda_err.c). */
#ifndef MRC_GPU_CUDA_ERR_H
#define MRC_GPU_CUDA_ERR_H

#include <cuda_runtime_api.h>

int mrc__gpu_cuda_errno(cudaError_t e);
/* 0 when cudaGetDeviceCount finds a device; -ENODEV otherwise (no GPU,
 * or no driver: the reason goes to stderr once). */
int mrc__gpu_cuda_have_device(void);

#endif

/* CUDA runtime error codes -> negative errno (gpu/cuda_err.h). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>

#include "gpu/cuda_err.h"

int mrc__gpu_cuda_errno(cudaError_t e)
{
	switch (e) {
	case cudaSuccess:
		return 0;
	case cudaErrorMemoryAllocation:
		return -ENOMEM;
	case cudaErrorInvalidValue:
	case cudaErrorInvalidDevicePointer:
	case cudaErrorInvalidMemcpyDirection:
		return -EINVAL;
	case cudaErrorHostMemoryAlreadyRegistered:
		return -EEXIST;
	case cudaErrorHostMemoryNotRegistered:
		return -ENOENT;
	case cudaErrorNoDevice:
	case cudaErrorInsufficientDriver:
		return -ENODEV;
	case cudaErrorNotSupported:
		return -EOPNOTSUPP;
	default:
		return -EIO;
	}
}

static int have_dev;
static pthread_once_t have_once = PTHREAD_ONCE_INIT;

static void probe(void)
{
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);
	if (e != cudaSuccess || n <= 0) {
		fprintf(stderr, "mrc-gpu: no CUDA device (cudaGetDeviceCount: %s)\n",
			e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
		have_dev = -ENODEV;
	}
}

int mrc__gpu_cuda_have_device(void)
{
	pthread_once(&have_once, probe);
	return have_dev;
}

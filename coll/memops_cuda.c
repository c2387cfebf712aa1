/* The CUDA backend of libmrc-coll's device table (coll/devmem.h): copies
 * with cudaMemcpyAsync (any direction: unified addressing) and the
 * reduction kernels of coll/reduce_cuda.cu, on one non-blocking stream per
 * communicator so they neither wait for nor hold up the application's
 * work on the legacy default stream; every operation ends with the
 * stream's synchronisation, because the executor reuses the staging slot
 * right after.  Receive chunks to combine are copied host -> device into a
 * scratch buffer first (the kernels read device memory only).  Plain C
 * against the CUDA runtime API, built only when nvcc is found. */
#include <errno.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

#include "coll/devmem.h"
#include "gpu/cuda_err.h"
#include "mrc/coll.h"

struct cuda_be {
	cudaStream_t s;
	void *scratch;             /* device copy of a receive chunk */
	size_t scratch_len;
};

/* CUDA errors as negative errno: libmrc-gpu's mapping. */
#define cu_err mrc__gpu_cuda_errno

static int cu_open(void **out)
{
	struct cuda_be *b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	int r = cu_err(cudaStreamCreateWithFlags(&b->s, cudaStreamNonBlocking));
	if (r) {
		free(b);
		return r;
	}
	*out = b;
	return 0;
}

static void cu_close(void *be)
{
	struct cuda_be *b = be;
	if (b->scratch)
		cudaFree(b->scratch);
	cudaStreamDestroy(b->s);
	free(b);
}

static int cu_where(void *be, const void *p)
{
	struct cudaPointerAttributes a;
	if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
		(void)cudaGetLastError();   /* not sticky: plain host memory */
		return 0;
	}
	return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

static int cu_copy(void *be, void *dst, const void *src, size_t n)
{
	struct cuda_be *b = be;
	int r = cu_err(cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, b->s));
	return r ? r : cu_err(cudaStreamSynchronize(b->s));
}

static int cu_reduce(void *be, void *dst, const void *a, const void *src, size_t count,
		     int dtype, int op)
{
	struct cuda_be *b = be;
	size_t n = count * mrc_coll_dtype_size(dtype);
	if (n > b->scratch_len) {
		if (b->scratch)
			cudaFree(b->scratch);
		b->scratch = NULL;
		b->scratch_len = 0;
		int r = cu_err(cudaMalloc(&b->scratch, n));
		if (r)
			return r;
		b->scratch_len = n;
	}
	int r = cu_err(cudaMemcpyAsync(b->scratch, src, n, cudaMemcpyDefault, b->s));
	if (!r)
		r = cu_err((cudaError_t)mrc__coll_cuda_reduce(dst, a, b->scratch, count, dtype, op,
							      b->s));
	return r ? r : cu_err(cudaStreamSynchronize(b->s));
}

static int cu_alloc(void *be, void **p, size_t n)
{
	return cu_err(cudaMalloc(p, n ? n : 1));
}

static void cu_free(void *be, void *p)
{
	cudaFree(p);
}

static int cu_pin(void *be, void *p, size_t n)
{
	return cu_err(cudaHostRegister(p, n, cudaHostRegisterDefault));
}

static void cu_unpin(void *be, void *p)
{
	(void)cudaHostUnregister(p);
}

static const struct mrc__coll_devops cuda_devops = {
	.open = cu_open, .close = cu_close, .where = cu_where, .copy = cu_copy,
	.reduce = cu_reduce, .alloc = cu_alloc, .free = cu_free, .pin = cu_pin, .unpin = cu_unpin,
};

int mrc__coll_cuda_devops(const struct mrc__coll_devops **out)
{
	int r = mrc__gpu_cuda_have_device();
	if (r)
		return r;
	*out = &cuda_devops;
	return 0;
}

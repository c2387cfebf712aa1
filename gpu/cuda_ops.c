/* The CUDA copy engine of the staging pipeline (gpu/stage.h): one
 * non-blocking stream per region, so staging copies neither wait for nor
 * hold up the application's work on the legacy default stream, and one
 * event per pipeline slot.  Plain C against the CUDA runtime API (built
 * only when CUDA is found, gpu/cuda.mk). */
#include <errno.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

#include "gpu/cuda_err.h"
#include "gpu/stage.h"

struct cuda_be {
	cudaStream_t stream;
	cudaEvent_t ev[MRC__GPU_STAGE_DEPTH];
};

static int cu_d2h(void *be, void *dst, const void *src, uint64_t n)
{
	struct cuda_be *c = be;
	return mrc__gpu_cuda_errno(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost, c->stream));
}

static int cu_h2d(void *be, void *dst, const void *src, uint64_t n)
{
	struct cuda_be *c = be;
	return mrc__gpu_cuda_errno(cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, c->stream));
}

static int cu_mark(void *be, unsigned slot)
{
	struct cuda_be *c = be;
	return mrc__gpu_cuda_errno(cudaEventRecord(c->ev[slot], c->stream));
}

static int cu_wait(void *be, unsigned slot)
{
	struct cuda_be *c = be;
	return mrc__gpu_cuda_errno(cudaEventSynchronize(c->ev[slot]));
}

static int cu_host_register(void *be, void *p, uint64_t n)
{
	return mrc__gpu_cuda_errno(cudaHostRegister(p, n, cudaHostRegisterDefault));
}

static void cu_host_unregister(void *be, void *p)
{
	(void)cudaHostUnregister(p);
}

static void cu_destroy(void *be)
{
	struct cuda_be *c = be;
	for (unsigned i = 0; i < MRC__GPU_STAGE_DEPTH; i++)
		if (c->ev[i])
			cudaEventDestroy(c->ev[i]);
	if (c->stream)
		cudaStreamDestroy(c->stream);
	free(c);
}

static const struct mrc__gpu_copy_ops cuda_ops = {
	.d2h = cu_d2h, .h2d = cu_h2d, .mark = cu_mark, .wait = cu_wait,
	.host_register = cu_host_register, .host_unregister = cu_host_unregister,
	.destroy = cu_destroy,
};

int mrc__gpu_cuda_backend(const struct mrc__gpu_copy_ops **ops, void **be)
{
	int r = mrc__gpu_cuda_have_device();
	if (r)
		return r;
	struct cuda_be *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	r = mrc__gpu_cuda_errno(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
	for (unsigned i = 0; !r && i < MRC__GPU_STAGE_DEPTH; i++)
		r = mrc__gpu_cuda_errno(cudaEventCreateWithFlags(&c->ev[i], cudaEventDisableTiming));
	if (r) {
		cu_destroy(c);
		return r;
	}
	*ops = &cuda_ops;
	*be = c;
	return 0;
}

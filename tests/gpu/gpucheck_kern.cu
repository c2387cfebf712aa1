// The kernel of tests/gpu/gpucheck.c: one GPU thread posts n puts through
// mrc/gpu.h's producer into a ring the host consumes, then flushes.
#include "mrc/gpu.h"

__global__ void gpucheck_post(struct mrc_gpu_chan ch, int n, uint32_t rkey, uint32_t lkey,
			      int *rc, unsigned long long *ns)
{
	uint64_t t0 = mrc__now_ns();
	int r = 0;
	for (int i = 0; i < n && !r; i++)
		r = mrc_gpu_put(&ch, rkey, (uint64_t)i * 64, lkey, (uint64_t)i * 64, 64);
	if (!r)
		r = mrc_gpu_flush(&ch);
	*ns = mrc__now_ns() - t0;
	*rc = r;
}

// Launches and waits: 0 and the kernel's rc and time, or a CUDA error.
extern "C" int gpucheck_kernel_post(const struct mrc_gpu_chan *dev, int n, uint32_t rkey,
				    uint32_t lkey, int *rc, double *secs)
{
	int *d_rc;
	unsigned long long *d_ns, ns = 0;
	if (cudaMalloc(&d_rc, sizeof(int)) || cudaMalloc(&d_ns, sizeof(ns)))
		return -1;
	gpucheck_post<<<1, 1>>>(*dev, n, rkey, lkey, d_rc, d_ns);
	cudaError_t e = cudaDeviceSynchronize();
	if (e == cudaSuccess)
		e = cudaMemcpy(rc, d_rc, sizeof(int), cudaMemcpyDeviceToHost);
	if (e == cudaSuccess)
		e = cudaMemcpy(&ns, d_ns, sizeof(ns), cudaMemcpyDeviceToHost);
	cudaFree(d_rc);
	cudaFree(d_ns);
	*secs = ns / 1e9;
	return e == cudaSuccess ? 0 : -(int)e;
}

/* mrc_gpu_put's kernel mode: the rounds of examples/gpu_put_flow.h run by
 * one GPU thread, posting through the QP's rings mapped into the device.
 * The host program is examples/gpu_put_host.c built with -DGPU_PUT_CUDA:
 *
 *   nvcc -arch=sm_90 -Iinclude -I. -c examples/gpu_put.cu
 *   gcc -DGPU_PUT_CUDA -Iinclude -I. -c examples/gpu_put_host.c
 *   nvcc -o mrc_gpu_put_cuda gpu_put.o gpu_put_host.o libmrc-gpu (with its
 *        CUDA part, mrc_gpu_chan_to_device) libmrc -lcudart
 *
 * The channel lives in device memory between launches (its indices carry
 * over); the semaphore is read through the device address of the mapped
 * target region. */
#include <cuda_runtime.h>

#include "examples/gpu_put_flow.h"

/* What the kernel reports: its round's status and how long the round
 * took inside it (%globaltimer), which leaves out the launch, the
 * synchronisation and the host's byte check around it. */
struct gpu_put_res {
	int rc;
	uint64_t ns;
};

static struct mrc_gpu_chan *d_ch;
static const uint64_t *d_sem;
static struct gpu_put_res *d_res;

__global__ void gpu_put_kernel(struct mrc_gpu_chan *ch, uint32_t rkey, uint64_t roff, uint32_t lkey,
			       uint64_t bytes, const uint64_t *sem, uint64_t r, struct gpu_put_res *res)
{
	if (threadIdx.x == 0 && blockIdx.x == 0) {
		uint64_t t0 = mrc__now_ns();
		res->rc = gpu_put_round(ch, rkey, roff, lkey, 0, bytes, sem, r);
		res->ns = mrc__now_ns() - t0;
	}
}

static int cu(cudaError_t e)
{
	return e == cudaSuccess ? 0 : -EIO;
}

/* dst: the target region (semaphore at 0), src: the source; both are
 * registered mapped so the kernel may read the semaphore (the source is
 * read by mrcd, but a CUDA producer filling it would need it mapped). */
extern "C" int gpu_put_cuda_init(const struct mrc_gpu_chan *ch, void *dst, uint64_t dst_len,
				 void *src, uint64_t src_len)
{
	struct mrc_gpu_chan dev;
	int rc = mrc_gpu_chan_to_device(ch, &dev);
	if (rc < 0)
		return rc;
	void *p;
	if (cu(cudaHostRegister(dst, dst_len, cudaHostRegisterMapped)) ||
	    cu(cudaHostRegister(src, src_len, cudaHostRegisterMapped)) ||
	    cu(cudaHostGetDevicePointer(&p, dst, 0)) ||
	    cu(cudaMalloc((void **)&d_ch, sizeof(*d_ch))) || cu(cudaMalloc((void **)&d_res, sizeof(*d_res))) ||
	    cu(cudaMemcpy(d_ch, &dev, sizeof(dev), cudaMemcpyHostToDevice)))
		return -EIO;
	d_sem = (const uint64_t *)p;
	return 0;
}

extern "C" int gpu_put_cuda_round(uint32_t rkey, uint64_t roff, uint32_t lkey, uint64_t bytes,
				  uint64_t r, uint64_t *kernel_ns)
{
	struct gpu_put_res res;
	gpu_put_kernel<<<1, 1>>>(d_ch, rkey, roff, lkey, bytes, d_sem, r, d_res);
	if (cu(cudaDeviceSynchronize()) || cu(cudaMemcpy(&res, d_res, sizeof(res), cudaMemcpyDeviceToHost)))
		return -EIO;
	*kernel_ns = res.ns;
	return res.rc;
}

// The PTX probe (gpu/cuda.mk -> $(B)/gpu/ptx_probe.ptx, checked by
// tests/test_gpu_ptx.c): kernels that run mrc/gpu.h's producer exactly as
// a collective kernel would (post, put_with_signal, wait, flush), so the
// ordering of the code nvcc generates for it is what the test reads.
// Built with MRC_PTX_BROKEN, gpu.h's system releases become relaxed and
// its fences vanish (MRC_GPU_PTX_BROKEN there), and the check must fail.
#ifdef MRC_PTX_BROKEN
#define MRC_GPU_PTX_BROKEN 1
#endif
#include "mrc/gpu.h"

__global__ void mrc_probe_post(struct mrc_gpu_chan *ch, struct mrc_sqe s, int *rc)
{
	*rc = mrc_gpu_post(ch, &s);
}

__global__ void mrc_probe_put_signal(struct mrc_gpu_chan *ch, uint32_t rkey, uint64_t roff,
				     uint32_t lkey, uint64_t loff, uint64_t bytes, int *rc)
{
	*rc = mrc_gpu_put_with_signal(ch, rkey, roff, lkey, loff, bytes);
}

__global__ void mrc_probe_wait_flush(struct mrc_gpu_chan *ch, const uint64_t *sem,
				     uint64_t expected, int *rc)
{
	int r = mrc_gpu_wait(ch, sem, expected);
	*rc = r ? r : mrc_gpu_flush(ch);
}

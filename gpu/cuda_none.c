/* libmrc-gpu built without CUDA (gpu/cuda.mk found no nvcc): the CUDA
 * entry points exist and say so, so that programs link either way. */
#include <errno.h>

#include "mrc/gpu.h"
#include "gpu/stage.h"

int mrc__gpu_cuda_backend(const struct mrc__gpu_copy_ops **ops, void **be)
{
	return -ENOSYS;
}

int mrc_gpu_chan_to_device(const struct mrc_gpu_chan *host, struct mrc_gpu_chan *dev)
{
	return -ENOSYS;
}

void mrc_gpu_chan_release(const struct mrc_gpu_chan *host)
{
}

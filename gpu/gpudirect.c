/* GPUDirect RDMA registration through dmabuf (gpu/gpudirect.h), built
 * with make MRC_GPUDIRECT=1: libcuda (driver API, for
 * cuMemGetHandleForAddressRange) and libibverbs (rdma-core >= 34 has
 * ibv_reg_dmabuf_mr; Debian 12 ships 44). */
#include <errno.h>
#include <unistd.h>

#include <cuda.h>
#include <infiniband/verbs.h>

#include "gpu/cuda_err.h"
#include "gpu/gpudirect.h"

static int cu_errno(CUresult e)
{
	switch (e) {
	case CUDA_SUCCESS:
		return 0;
	case CUDA_ERROR_INVALID_VALUE:
		return -EINVAL;
	case CUDA_ERROR_NOT_SUPPORTED:
		return -EOPNOTSUPP;
	case CUDA_ERROR_NO_DEVICE:
	case CUDA_ERROR_NOT_INITIALIZED:
		return -ENODEV;
	default:
		return -EIO;
	}
}

int mrc__gpu_dmabuf_export(void *devptr, uint64_t len, struct mrc__gpu_dmabuf *out)
{
	int r = mrc__cuda_have_device();
	if (r)
		return r;
	if (!devptr || !len)
		return -EINVAL;
	/* The runtime's primary context is current once any runtime call
	 * made it so; cudaFree(NULL) is the documented way to force it. */
	cudaFree(NULL);
	int ord = -1, ok = 0;
	CUdevice dev;
	r = cu_errno(cuPointerGetAttribute(&ord, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
					   (CUdeviceptr)(uintptr_t)devptr));
	if (!r)
		r = cu_errno(cuDeviceGet(&dev, ord));
	if (!r)
		r = cu_errno(cuDeviceGetAttribute(&ok, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, dev));
	if (!r && !ok)
		r = -EOPNOTSUPP;
	if (r)
		return r;
	/* cuMemGetHandleForAddressRange wants host-page alignment; the
	 * allocation is at least that aligned (cudaMalloc: 256 B start, but
	 * whole pages of VA), so the rounded range stays inside it. */
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t a = (uint64_t)(uintptr_t)devptr & ~(pg - 1);
	uint64_t e = ((uint64_t)(uintptr_t)devptr + len + pg - 1) & ~(pg - 1);
	int fd = -1;
	r = cu_errno(cuMemGetHandleForAddressRange(&fd, (CUdeviceptr)a, e - a,
						   CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0));
	if (r)
		return r;
	*out = (struct mrc__gpu_dmabuf){ .fd = fd, .off = (uint64_t)(uintptr_t)devptr - a,
					 .span = e - a };
	return 0;
}

int mrc__gpu_dmabuf_reg(struct ibv_pd *pd, const struct mrc__gpu_dmabuf *d, uint64_t iova,
			uint64_t len, int access, struct ibv_mr **mr)
{
	if (d->off > d->span || len > d->span - d->off)
		return -ERANGE;
	struct ibv_mr *m = ibv_reg_dmabuf_mr(pd, d->off, len, iova, d->fd, access);
	if (!m)
		return errno ? -errno : -EIO;
	*mr = m;
	return 0;
}

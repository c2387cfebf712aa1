/* GPUDirect RDMA through dmabuf, the client half (gpu/gpudirect.h),
 * built with make MRC_GPUDIRECT=1: the driver API's
 * cuMemGetHandleForAddressRange.  The daemon half, ibv_reg_dmabuf_mr, is
 * the verbs datapath's mem_reg (datapath/verbs_io.c).  The driver functions come
 * from cudart's cudaGetDriverEntryPointByVersion rather than -lcuda, so
 * the programs still start where no driver is installed (libcuda.so.1 is
 * the driver's, not the toolkit's) and fail with -ENODEV instead. */
#include <errno.h>
#include <unistd.h>

#include <cuda.h>
#include <cudaTypedefs.h>

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

static int entry(const char *sym, unsigned ver, void **fn)
{
	enum cudaDriverEntryPointQueryResult q;
	int r = mrc__gpu_cuda_errno(cudaGetDriverEntryPointByVersion(sym, fn, ver, cudaEnableDefault, &q));
	return r ? r : q == cudaDriverEntryPointSuccess ? 0 : -ENOSYS;
}

int mrc__gpu_dmabuf_export(void *devptr, uint64_t len, struct mrc__gpu_dmabuf *out)
{
	int r = mrc__gpu_cuda_have_device();
	if (r)
		return r;
	if (!devptr || !len)
		return -EINVAL;
	PFN_cuDeviceGet_v2000 dev_get;
	PFN_cuDeviceGetAttribute_v2000 dev_attr;
	PFN_cuMemGetHandleForAddressRange_v11070 get_handle;
	r = entry("cuDeviceGet", 2000, (void **)&dev_get);
	if (!r)
		r = entry("cuDeviceGetAttribute", 2000, (void **)&dev_attr);
	if (!r)
		r = entry("cuMemGetHandleForAddressRange", 11070, (void **)&get_handle);
	if (r)
		return r;
	/* The pointer's device (this also makes the runtime's primary
	 * context current, which the driver call below works in). */
	struct cudaPointerAttributes pa;
	r = mrc__gpu_cuda_errno(cudaPointerGetAttributes(&pa, devptr));
	if (!r && pa.type != cudaMemoryTypeDevice)
		r = -EINVAL;
	int ok = 0;
	CUdevice dev;
	if (!r)
		r = cu_errno(dev_get(&dev, pa.device));
	if (!r)
		r = cu_errno(dev_attr(&ok, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, dev));
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
	r = cu_errno(get_handle(&fd, (CUdeviceptr)a, e - a,
						   CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0));
	if (r)
		return r;
	*out = (struct mrc__gpu_dmabuf){ .fd = fd, .off = (uint64_t)(uintptr_t)devptr - a,
					 .span = e - a };
	return 0;
}

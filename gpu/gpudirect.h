/* GPUDirect RDMA for a verbs datapath (make MRC_GPUDIRECT=1; docs/gpu.md,
 * "GPUDirect").  Device memory is exported by the client, which owns the
 * CUDA context, as a dmabuf fd (cuMemGetHandleForAddressRange); the fd
 * travels to mrcd like a region's memfd (SCM_RIGHTS), and mrcd registers
 * it with its protection domain (ibv_reg_dmabuf_mr), so the NIC reads and
 * writes GPU memory directly and mrcd never links CUDA.  Only the first
 * half is here: the second is the verbs datapath's (mrc_dp_mem_reg with a
 * dmabuf fd, datapath/datapath.h), one registration for host and GPU
 * memory; this library runs in the client, which has no protection domain
 * of mrcd's to register with. */
#ifndef MRC_GPU_GPUDIRECT_H
#define MRC_GPU_GPUDIRECT_H

#include <stdint.h>

/* The dmabuf of the page-aligned range around [devptr, devptr+len):
 * fd (the caller closes it), off: devptr's offset in it, span: its
 * length.  -ENODEV: no device/driver; -EOPNOTSUPP: the device or the
 * kernel has no dmabuf support for this memory (cudaMalloc'd memory on a
 * recent open kernel module is supported; see docs/gpu.md). */
struct mrc__gpu_dmabuf {
	int fd;
	uint64_t off, span;
};
int mrc__gpu_dmabuf_export(void *devptr, uint64_t len, struct mrc__gpu_dmabuf *out);

#endif

/* GPUDirect RDMA for a verbs datapath (make MRC_GPUDIRECT=1; docs/gpu.md,
 * "GPUDirect").  Device memory is exported by the client, which owns the
 * CUDA context, as a dmabuf fd (cuMemGetHandleForAddressRange); the fd
 * travels to mrcd like a region's memfd (SCM_RIGHTS), and mrcd registers
 * it with its protection domain (ibv_reg_dmabuf_mr), so the NIC reads and
 * writes GPU memory directly and mrcd never links CUDA.  mrc has no verbs
 * datapath yet: both halves live here until it does, and the second moves
 * into it then. */
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

/* Daemon side: registers len bytes at d->off of the dmabuf with pd, with
 * iova = the device address (so remote keys address it as the client
 * does).  Returns 0 and *mr, or a negative errno (errno of rdma-core). */
struct ibv_pd;
struct ibv_mr;
int mrc__gpu_dmabuf_reg(struct ibv_pd *pd, const struct mrc__gpu_dmabuf *d, uint64_t iova,
			uint64_t len, int access, struct ibv_mr **mr);

#endif

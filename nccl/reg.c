/* libnccl-net-mrc.so, memory registration (docs/nccl.md): NCCL's buffers
 * described for the data path, host buffers registered in place where
 * libmrc can (mrc_reg_mem), CUDA buffers where the copy engine is. */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <mrc/mrc.h>

#include "nccl/plugin.h"

/* A send comm's host buffer that mrcd can map (a memfd mapping: NCCL's
 * cudaHostAlloc buffers are not) is registered itself, so that isend
 * WRITEs from it without the bounce copy (docs/client.md "Application
 * memory").  Never moved (no MRC_REG_MOVE): NCCL's host memory is pinned
 * by CUDA, and moving would leave CUDA the old pages.  Anything else, or
 * a refusal (limits), takes the bounce path as before. */
static void reg_zero_copy(struct comm *c, struct mhandle *m)
{
	static _Atomic int told;
	if (m->type != NCCL_PTR_HOST || !c || c->kind != K_SEND || !m->size ||
	    atomic_load(&c->ready) != 1 || !c->ctx)
		return;
	int r = mrc_reg_mem(c->ctx, m->data, m->size, MRC_MR_LOCAL_READ, 0, &m->mr);
	if (r) {
		m->mr = NULL;
		if (!atomic_exchange(&told, 1))
			INFO("regMr: host buffer %p not registered in place (%s: %s): sends from "
			     "such buffers are copied through the bounce region", m->data,
			     mrc_strerror(r), mrc_last_error(c->ctx));
	}
}

static ncclResult_t reg(struct comm *c, void *data, size_t size, int type, void **mhandle)
{
	/* CUDA memory only where init found a device and the copy engine
	 * (nccl/stage.c); anything else is refused rather than read as host
	 * memory. */
	if (type != NCCL_PTR_HOST && !(type == NCCL_PTR_CUDA && mrcn_cuda_ok)) {
		WARN("regMr: pointer type %d refused: %s", type,
		     type == NCCL_PTR_CUDA ? "no CUDA device at init, or a build without CUDA: "
					     "only host memory (NCCL_PTR_HOST)"
					   : "only host and CUDA memory are supported");
		return ncclInternalError;
	}
	struct mhandle *m = malloc(sizeof(*m));
	if (!m)
		return ncclSystemError;
	*m = (struct mhandle){ .data = data, .size = size, .type = type, .c = c };
	reg_zero_copy(c, m);
	*mhandle = m;
	return ncclSuccess;
}

ncclResult_t mrcn_regmr(void *comm, void *data, size_t size, int type, void **mhandle)
{
	return reg(comm, data, size, type, mhandle);
}

/* A dma-buf lets a NIC reach GPU memory itself (GPUDirect RDMA): mrc's
 * datapath is mrcd's UDP sockets, which cannot, and gpu/gpudirect.c's
 * export is for a verbs datapath mrc does not have yet.  So
 * NCCL_PTR_DMABUF is never advertised and an fd is refused; without an fd
 * this is regMr. */
ncclResult_t mrcn_regmr_dmabuf(void *comm, void *data, size_t size, int type,
				      uint64_t offset, int fd, void **mhandle)
{
	(void)offset;
	if (fd >= 0) {
		WARN("regMrDmaBuf: dma-buf (fd %d, pointer type %d) refused: mrc has no GPUDirect "
		     "(verbs) datapath; device memory is staged through host memory instead",
		     fd, type);
		return ncclInternalError;
	}
	return reg(comm, data, size, type, mhandle);
}

ncclResult_t mrcn_deregmr(void *comm, void *mhandle)
{
	struct mhandle *m = mhandle;
	if (m && m->mr) {
		int r = mrc_dereg_mr(m->mr);
		if (r == -EBUSY && comm == m->c) {
			/* NCCL waits for its requests, but a send's WRITE may
			 * still be queued in mrcd: let it finish. */
			mrcn_send_drain(m->c, MRCN_CLOSE_DRAIN_MS);
			r = mrc_dereg_mr(m->mr);
		}
		if (r) {
			/* m->c may be closed by now: not read here */
			WARN("deregMr: %p: %s: left registered", m->data, mrc_strerror(r));
			return ncclInternalError;
		}
	}
	free(m);
	return ncclSuccess;
}

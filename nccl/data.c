/* libnccl-net-mrc.so, the data path (docs/nccl.md): memory
 * registration, isend/irecv/test/iflush over the comms' bounce regions,
 * and the exported tables (v11, and the v10/v9/v8 adapters).
 *
 * Protocol (receiver-driven, like a CTS): irecv reserves, per grouped
 * receive, an id and room in the receiver's bounce arena, and SENDs a
 * clear-to-send {id, tag, size, offset} to the sender's posted RECVs.  isend
 * takes the oldest CTS of its tag (none yet: a NULL request, NCCL retries),
 * copies, and WRITE_IMMs the data to that offset with imm = id; the
 * receiver's RECV_WRITE_IMM completion gives the size.  Messages up to
 * MRC_NCCL_EAGER_BYTES with no CTS there yet go at once into the
 * receiver's eager ring instead (credits; docs/nccl.md "Eager messages"),
 * and each receive's CTS then pairs with its eager send.  Host buffers are
 * copied with memcpy, CUDA buffers by the comm's copy engine
 * (nccl/stage.c), each finished before the data moves on. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mrc/mrc.h>

#include "common/trace.h"
#include "nccl/plugin.h"

/* The comm, as the trace's QP field (common/trace.h). */
#define TRC(c) ((uint32_t)(uintptr_t)(c))

#define EXPORT __attribute__((visibility("default")))

/* ---- memory ------------------------------------------------------------ */
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

static ncclResult_t mrcn_regmr(void *comm, void *data, size_t size, int type, void **mhandle)
{
	return reg(comm, data, size, type, mhandle);
}

/* A dma-buf lets a NIC reach GPU memory itself (GPUDirect RDMA): mrc's
 * datapath is mrcd's UDP sockets, which cannot, and gpu/gpudirect.c's
 * export is for a verbs datapath mrc does not have yet.  So
 * NCCL_PTR_DMABUF is never advertised and an fd is refused; without an fd
 * this is regMr. */
static ncclResult_t mrcn_regmr_dmabuf(void *comm, void *data, size_t size, int type,
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

static ncclResult_t mrcn_deregmr(void *comm, void *mhandle)
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

/* ---- data path --------------------------------------------------------- */
static int64_t now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static struct req *req_get(struct comm *c)
{
	for (int i = 0; i < MRCN_MAX_REQS; i++)
		if (!c->reqs[i].used) {
			struct req *r = &c->reqs[i];
			memset(r, 0, sizeof(*r));
			r->used = 1;
			r->c = c;
			return r;
		}
	return NULL;
}

/* An id is free again once its receive has its data (or was satisfied
 * eagerly) and its CTS SEND completed: a CTS may still be (re)sent from
 * its buffer until then. */
static void id_release(struct comm *c, int id)
{
	if (!c->ids[id].r && !c->cts_busy[id])
		c->free_ids[c->nfree_ids++] = id;
}

static void refuse(struct comm *c, const char *why, uint64_t v)
{
	if (!c->err)
		c->err = -EPROTO;
	c->st.refused++;
	WARN("eager message from host %u refused: %s (%llu)", c->host, why, (unsigned long long)v);
}

/* Eager slots are freed in ring order (credits are a count): a slot
 * whose message waits for its irecv holds the ones after it. */
static void eg_reclaim(struct comm *c)
{
	while (c->eg_freed != c->eg_rcvd && c->eg[c->eg_freed % c->eg_slots].state == 2) {
		c->eg[c->eg_freed % c->eg_slots].state = 0;
		c->eg_freed++;
	}
}

/* Eager message in slot k satisfies receive (r, s): copied out (sizes
 * were checked at arrival against the slot), its CTS room and id let go. */
static void eg_deliver(struct comm *c, uint32_t k, struct req *r, int s)
{
	uint32_t size = c->eg[k].size;
	uint64_t off = c->eg_off + k * c->eg_stride + sizeof(struct mrcn_eg_hdr);
	if (size > r->sub[s].size) {
		WARN("eager message of %u bytes for a receive of %llu (tag %d)", size,
		     (unsigned long long)r->sub[s].size, r->sub[s].tag);
		r->err = -EMSGSIZE;
	} else if (size && r->sub[s].cuda) {
		int ce = mrcn_cuda_copy(c, 1, r->sub[s].data, off, size);
		if (ce) {
			r->err = ce;
			r->cuda_fail = 1;
		}
	} else if (size) {
		memcpy(r->sub[s].data, c->base + off, size);
	}
	r->sub[s].got = size;
	r->sub[s].pending = 0;
	if (r->sub[s].alloc >= 0)
		mrcn_arena_free(&c->arena, r->sub[s].alloc);
	r->sub[s].alloc = -1;
	if (r->sub[s].id >= 0 && c->ids[r->sub[s].id].r == r) {
		c->ids[r->sub[s].id].r = NULL;
		id_release(c, r->sub[s].id);
	}
	r->ndone++;
	c->eg[k].state = 2;
	MRC_TRACE(MRC_TR_N_DATA, TRC(c), MRCN_IMM_EAGER | k, size);
	eg_reclaim(c);
}

/* An eager message landed: checked against our own ring (never the
 * peer's header alone), then given to the oldest receive of its tag
 * still waiting, or kept until irecv asks for it. */
static void eg_arrived(struct comm *c, const struct mrc_completion *e)
{
	uint32_t k = e->imm & ~MRCN_IMM_EAGER;
	if (!c->eg_slots || k >= c->eg_slots)
		{
		refuse(c, "no such slot", k);
		return;
	}
	if (k != c->eg_rcvd % c->eg_slots || c->eg[k].state)
		{
		refuse(c, "slot out of turn, or not freed yet", k);
		return;
	}
	struct mrcn_eg_hdr h;
	if (e->byte_len < sizeof(h) || e->byte_len > c->eg_stride)
		{
		refuse(c, "length beyond the slot", e->byte_len);
		return;
	}
	memcpy(&h, c->base + c->eg_off + k * c->eg_stride, sizeof(h));
	if (h.magic != MRCN_EG_HDR_MAGIC || h.seq != c->eg_rcvd ||
	    (uint64_t)h.size + sizeof(h) != e->byte_len)
		{
		refuse(c, "bad header (magic, sequence, or size not the length written)",
			      h.size);
		return;
	}
	c->eg_rcvd++;
	c->eg[k].tag = h.tag;
	c->eg[k].size = h.size;
	c->eg[k].state = 1;
	struct req *best = NULL;
	int bs = -1;
	for (int i = 0; i < MRCN_MAX_REQS; i++) {
		struct req *r = &c->reqs[i];
		if (!r->used || (best && r->seq > best->seq))
			continue;
		for (int j = 0; j < r->n; j++)
			if (r->sub[j].pending && r->sub[j].tag == h.tag) {
				best = r;
				bs = j;
				break;
			}
	}
	if (best)
		eg_deliver(c, k, best, bs);
	else
		c->st.unexpected++;
}

/* A CTS (or void CTS) of tag t pairs with the oldest eager send of that
 * tag still unpaired: that send was its receive's message. */
static int eg_pair(struct comm *c, int32_t tag)
{
	for (int i = 0; i < c->eg_nunpaired; i++)
		if (c->eg_unpaired[i] == tag) {
			memmove(&c->eg_unpaired[i], &c->eg_unpaired[i + 1],
				(size_t)(c->eg_nunpaired - i - 1) * sizeof(c->eg_unpaired[0]));
			c->eg_nunpaired--;
			return 1;
		}
	return 0;
}

static void on_cqe(struct comm *c, const struct mrc_completion *e)
{
	if (e->status) {
		if (!c->err)
			c->err = e->status;
		WARN("%s completion failed: %s", mrc_cqe_op_name(e->op), mrc_strerror(e->status));
		/* A failed data WRITE_IMM's request was reported done at
		 * its post: the comm's error fails every later call. */
		if ((e->wr_id >> 32) == (MRCN_WR_DATA >> 32))
			c->data_inflight--;
		return;
	}
	switch (e->op) {
	case MRC_CQE_WRITE_IMM: {       /* a send's data arrived: its bounce room is free */
		uint32_t a = (uint32_t)e->wr_id;
		if (a != MRCN_WR_NOALLOC && (a & MRCN_WR_ZC)) {
			struct req *r = &c->reqs[a & ~MRCN_WR_ZC & (MRCN_MAX_REQS - 1)];
			r->ndone = r->n;    /* its buffer is NCCL's again */
		} else if (a != MRCN_WR_NOALLOC) {
			mrcn_arena_free(&c->arena, (int)a);
		}
		c->data_inflight--;
		break;
	}
	case MRC_CQE_RECV: {            /* a CTS, void CTS or eager advertisement arrived */
		int slot = (int)(e->wr_id & 0xffff);
		struct mrcn_cts in;
		if (slot >= MRCN_NRECV || mrcn_cts_parse(CTS_IN(c, slot), e->byte_len, &in) ||
		    (in.magic == MRCN_CTS_MAGIC && c->ncts == MRCN_NCTS)) {
			if (!c->err)
				c->err = -EPROTO;
			WARN("malformed clear-to-send from host %u", c->host);
			break;
		}
		/* Credits are a count, so a late or repeated one is harmless;
		 * more than was ever sent is not. */
		if ((int32_t)(in.credits - c->eg_credit) > 0) {
			if ((int32_t)(in.credits - c->eg_sent) > 0) {
				if (!c->err)
					c->err = -EPROTO;
				WARN("host %u returned %u eager credits, %u sent", c->host, in.credits,
				     c->eg_sent);
				break;
			}
			c->eg_credit = in.credits;
		}
		if (in.magic == MRCN_EGR_MAGIC) {
			if (!c->eg_slots) {
				c->eg_slots = in.id;
				c->eg_stride = in.size;
				c->eg_off = in.off;
			} else if (c->eg_slots != in.id || c->eg_stride != in.size ||
				   c->eg_off != in.off) {
				if (!c->err)
					c->err = -EPROTO;
				WARN("host %u changed its eager ring", c->host);
				break;
			}
		} else if (in.magic == MRCN_VOID_MAGIC) {
			if (!eg_pair(c, in.tag)) {
				if (!c->err)
					c->err = -EPROTO;
				WARN("void clear-to-send from host %u for no eager send (tag %d)",
				     c->host, in.tag);
				break;
			}
			c->st.void_cts++;
		} else if (eg_pair(c, in.tag)) {
			c->st.paired++;     /* its message went eagerly */
		} else {
			c->cts[c->ncts++] = in;
			MRC_TRACE(MRC_TR_N_CTS, TRC(c), in.id, in.size);
		}
		int r = mrcn_post_cts_recv(c, slot);
		if (r && !c->err)
			c->err = r;
		break;
	}
	case MRC_CQE_RECV_WRITE_IMM: {  /* data landed */
		if (e->imm & MRCN_IMM_EAGER) {
			eg_arrived(c, e);
			break;
		}
		uint32_t id = e->imm;
		if (id >= MRCN_NCTS || !c->ids[id].r) {
			if (!c->err)
				c->err = -EPROTO;
			WARN("data for unknown id %u", id);
			break;
		}
		struct req *r = c->ids[id].r;
		int s = c->ids[id].sub;
		c->ids[id].r = NULL;
		id_release(c, (int)id);
		r->sub[s].pending = 0;
		if (e->byte_len > r->sub[s].size) {
			r->err = -EMSGSIZE;
		} else if (e->byte_len && r->sub[s].cuda) {
			/* Landed in the arena: to the device before test says done. */
			int ce = mrcn_cuda_copy(c, 1, r->sub[s].data,
						mrcn_arena_off(&c->arena, r->sub[s].alloc), e->byte_len);
			if (ce) {
				r->err = ce;
				r->cuda_fail = 1;
			}
		} else if (e->byte_len) {
			memcpy(r->sub[s].data, c->base + mrcn_arena_off(&c->arena, r->sub[s].alloc),
			       e->byte_len);
		}
		r->sub[s].got = e->byte_len;
		MRC_TRACE(MRC_TR_N_DATA, TRC(c), id, e->byte_len);
		if (r->sub[s].alloc >= 0)
			mrcn_arena_free(&c->arena, r->sub[s].alloc);
		r->sub[s].alloc = -1;
		r->ndone++;
		break;
	}
	default:                        /* our CTS and advertisement SENDs */
		if (e->wr_id == MRCN_WR_EGR) {
			c->egr_busy = 0;
		} else if ((e->wr_id >> 32) == (MRCN_WR_CTS >> 32) &&
			   (e->wr_id & 0xffffffffu) < MRCN_NCTS) {
			int id = (int)(e->wr_id & 0xffffffffu);
			c->cts_busy[id] = 0;
			id_release(c, id);
		}
		break;
	}
}

static int progress(struct comm *c)
{
	struct mrc_completion e[16];
	int n;
	do {
		n = mrc_poll_cq(c->qp, e, 16);
		if (n < 0) {
			if (!c->err)
				c->err = n;
			return n;
		}
		for (int i = 0; i < n; i++)
			on_cqe(c, &e[i]);
	} while (n == 16);
	/* Credits ride on CTSs; a message of their own once half the ring
	 * is free and nobody told the sender (no CTS went meanwhile). */
	if (!c->err && c->kind == K_RECV && c->eg_slots && !c->egr_busy &&
	    c->eg_freed - c->eg_told >= (c->eg_slots + 1) / 2) {
		int r = mrcn_post_egr(c);
		if (r && r != -ENOSPC)
			c->err = r;
	}
	return c->err;
}

int mrcn_send_drain(struct comm *c, int ms)
{
	int64_t end = now_ms() + ms;
	while (c->data_inflight > 0 && !c->err && now_ms() < end) {
		if (progress(c))
			break;
		if (c->data_inflight > 0)
			mrc_wait(c->qp, 10);
	}
	return c->data_inflight > 0 ? -ETIMEDOUT : 0;
}

static ncclResult_t comm_failed(struct comm *c, const char *what)
{
	WARN("%s: the connection to host %u failed: %s", what, c->host, mrc_strerror(c->err));
	return ncclRemoteError;
}

/* Posts request r's data for the CTS at c->cts[k] (WRITE_IMM from lkey at
 * off), and on success takes the CTS and hands r to NCCL: done at once
 * for a bounce-region send (alloc: its arena block, or -1 for none), at
 * the completion for a zero-copy one (zc).  Out of room
 * is no error: NCCL retries with a NULL request. */
static ncclResult_t post_data(struct comm *c, struct req *r, int k, void **request,
			      uint64_t wr_id, uint32_t lkey, uint64_t off, size_t size, int alloc,
			      int zc)
{
	struct mrcn_cts cts = c->cts[k];
	int e = mrc_post_write_imm(c->qp, wr_id, lkey, off, size, c->rkey, cts.off, cts.id);
	if (e) {
		if (alloc >= 0)
			mrcn_arena_free(&c->arena, alloc);
		r->used = 0;
		if (e == -ENOSPC)
			return ncclSuccess;
		c->err = e;
		return comm_failed(c, "isend");
	}
	memmove(&c->cts[k], &c->cts[k + 1], (size_t)(c->ncts - k - 1) * sizeof(c->cts[0]));
	c->ncts--;
	c->data_inflight++;
	c->zc_sends += zc;
	c->st.cts_sends++;
	r->n = 1;
	r->ndone = !zc;
	r->sub[0].size = size;
	r->sub[0].alloc = -1;
	*request = r;
	c->tr_waiting = 0;
	MRC_TRACE(MRC_TR_N_ISEND, TRC(c), cts.id, size);
	return ncclSuccess;
}

/* An eager send: header and payload copied into our arena, one
 * WRITE_IMM into the next slot of the receiver's ring (imm: the slot),
 * done at the post like a bounce send.  The caller checked size and
 * credit.  Out of room or ring space: a NULL request, NCCL retries. */
static ncclResult_t eager_send(struct comm *c, void *data, size_t size, int tag, int cuda,
			       void **request)
{
	struct req *r = req_get(c);
	if (!r)
		return ncclSuccess;
	struct mrcn_eg_hdr h = { .magic = MRCN_EG_HDR_MAGIC, .tag = tag, .size = (uint32_t)size,
				 .seq = c->eg_sent };
	int a = mrcn_arena_alloc(&c->arena, sizeof(h) + size);
	if (a < 0) {
		r->used = 0;
		return ncclSuccess;
	}
	uint64_t off = mrcn_arena_off(&c->arena, a);
	memcpy(c->base + off, &h, sizeof(h));
	if (size && cuda) {
		int ce = mrcn_cuda_copy(c, 0, data, off + sizeof(h), size);
		if (ce) {
			mrcn_arena_free(&c->arena, a);
			WARN("isend: device to host copy of %zu bytes failed: %s", size, mrc_strerror(ce));
			*r = (struct req){ .c = c, .used = 1, .n = 1, .err = ce, .cuda_fail = 1 };
			r->sub[0].alloc = -1;
			*request = r;
			return ncclSuccess;
		}
	} else if (size) {
		memcpy(c->base + off + sizeof(h), data, size);
	}
	uint32_t k = c->eg_sent % c->eg_slots;
	int e = mrc_post_write_imm(c->qp, MRCN_WR_DATA | (uint32_t)a, c->lkey, off, sizeof(h) + size,
				   c->rkey, c->eg_off + k * c->eg_stride, MRCN_IMM_EAGER | k);
	if (e) {
		mrcn_arena_free(&c->arena, a);
		r->used = 0;
		if (e == -ENOSPC)
			return ncclSuccess;
		c->err = e;
		return comm_failed(c, "isend");
	}
	c->eg_sent++;
	c->eg_unpaired[c->eg_nunpaired++] = tag;
	c->data_inflight++;
	c->st.eager_sends++;
	r->n = 1;
	r->ndone = 1;
	r->sub[0].size = size;
	r->sub[0].alloc = -1;
	*request = r;
	c->tr_waiting = 0;
	MRC_TRACE(MRC_TR_N_ISEND, TRC(c), MRCN_IMM_EAGER | k, size);
	return ncclSuccess;
}

static ncclResult_t mrcn_isend(void *sendComm, void *data, size_t size, int tag,
				   void *mhandle, void *phandle, void **request)
{
	(void)phandle;
	struct comm *c = sendComm;
	struct mhandle *m = mhandle;
	*request = NULL;
	int cuda = m && m->type == NCCL_PTR_CUDA;
	if (m && m->type != NCCL_PTR_HOST && !cuda)
		return ncclInternalError;
	if (cuda && mrcn_cuda_attach(c))
		return ncclUnhandledCudaError;
	if (size > mrcn_max_msg) {
		WARN("isend: %zu bytes above maxP2pBytes %llu", size, (unsigned long long)mrcn_max_msg);
		return ncclInvalidArgument;
	}
	if (progress(c))
		return comm_failed(c, "isend");
	int k = 0;
	while (k < c->ncts && c->cts[k].tag != tag)
		k++;
	uint8_t *d8 = data;
	int zc_ok = size >= MRCN_ZC_MIN && !cuda && m && m->mr && d8 >= (uint8_t *)m->data &&
		    size <= m->size - (size_t)(d8 - (uint8_t *)m->data);
	if (k == c->ncts) {
		/* No receive of this tag told us its room: small messages go
		 * at once into the receiver's eager ring (not from a
		 * registered buffer: those are large and sent in place). */
		if (c->eg_slots && size <= mrcn_eg_bytes &&
		    size <= c->eg_stride - sizeof(struct mrcn_eg_hdr) && !zc_ok) {
			if (c->eg_sent - c->eg_credit < c->eg_slots &&
			    c->eg_nunpaired < MRCN_EG_MAX_SLOTS)
				return eager_send(c, data, size, tag, cuda, request);
			c->st.eager_no_credit++;    /* the CTS path then */
		}
		/* the first retry only: NCCL retries in a loop */
		if (!c->tr_waiting) {
			c->tr_waiting = 1;
			MRC_TRACE(MRC_TR_N_ISEND_WAIT, TRC(c), (uint64_t)tag, size);
		}
		return ncclSuccess;     /* no receive posted for it yet */
	}
	struct mrcn_cts cts = c->cts[k];
	if (size > cts.size) {
		WARN("isend: %zu bytes into a receive of %llu (tag %d): truncated", size,
		     (unsigned long long)cts.size, tag);
		return ncclInvalidUsage;
	}
	struct req *r = req_get(c);
	if (!r)
		return ncclSuccess;
	/* From the buffer itself when regMr registered it (reg_zero_copy). */
	if (zc_ok) {
		/* Done at the WRITE_IMM's completion (on_cqe): until then
		 * mrcd may still read the buffer. */
		uint32_t rix = (uint32_t)(r - c->reqs);
		return post_data(c, r, k, request, MRCN_WR_DATA | MRCN_WR_ZC | rix,
				 mrc_mr_key(m->mr), (uint64_t)(d8 - (uint8_t *)m->data), size, -1, 1);
	}
	int a = -1;
	if (size && (a = mrcn_arena_alloc(&c->arena, size)) < 0) {
		r->used = 0;
		return ncclSuccess;     /* bounce full until sends complete */
	}
	uint64_t off = a >= 0 ? mrcn_arena_off(&c->arena, a) : 0;
	if (size && cuda) {
		/* Device -> arena, finished before the post.  A failed copy
		 * is the request's error (test reports it), nothing is sent,
		 * and the CTS stays for NCCL's abort to discard. */
		int ce = mrcn_cuda_copy(c, 0, data, off, size);
		if (ce) {
			mrcn_arena_free(&c->arena, a);
			WARN("isend: device to host copy of %zu bytes failed: %s", size, mrc_strerror(ce));
			*r = (struct req){ .c = c, .used = 1, .n = 1, .err = ce, .cuda_fail = 1 };
			r->sub[0].alloc = -1;
			*request = r;
			return ncclSuccess;
		}
	} else if (size) {
		memcpy(c->base + off, data, size);
	}
	/* Done now: the data is in the bounce region (copied above, a CUDA
	 * copy finished), so NCCL may reuse its buffer, as a socket send is
	 * done once written.  Waiting for the WRITE_IMM's completion (the
	 * peer's ACK) put an ACK round trip, or a held ACK's delay, into
	 * every send (docs/nccl.md "Send completion"); the bounce room is
	 * freed by that completion (on_cqe), and a failure fails the comm. */
	return post_data(c, r, k, request, MRCN_WR_DATA | (a >= 0 ? (uint32_t)a : MRCN_WR_NOALLOC),
			 c->lkey, off, size, a, 0);
}

static ncclResult_t mrcn_irecv(void *recvComm, int n, void **data, size_t *sizes, int *tags,
				   void **mhandles, void **phandles, void **request)
{
	(void)phandles;
	struct comm *c = recvComm;
	*request = NULL;
	if (n < 1 || n > MRCN_MAX_RECVS) {
		WARN("irecv: %d grouped receives (1..%d)", n, MRCN_MAX_RECVS);
		return ncclInvalidArgument;
	}
	for (int i = 0; i < n; i++) {
		struct mhandle *m = mhandles ? mhandles[i] : NULL;
		if (m && m->type != NCCL_PTR_HOST && m->type != NCCL_PTR_CUDA)
			return ncclInternalError;
		if (m && m->type == NCCL_PTR_CUDA && mrcn_cuda_attach(c))
			return ncclUnhandledCudaError;
		if (sizes[i] > mrcn_max_msg) {
			WARN("irecv: %zu bytes above maxP2pBytes", sizes[i]);
			return ncclInvalidArgument;
		}
	}
	if (progress(c))
		return comm_failed(c, "irecv");
	if (c->nfree_ids < n)
		return ncclSuccess;
	struct req *r = req_get(c);
	if (!r)
		return ncclSuccess;
	r->n = n;
	/* Eager messages already here, oldest first per tag: those receives
	 * are satisfied now and need no room. */
	int match[MRCN_MAX_RECVS];
	uint8_t taken[MRCN_EG_MAX_SLOTS] = { 0 };
	for (int i = 0; i < n; i++) {
		match[i] = -1;
		for (uint32_t q = c->eg_freed; q != c->eg_rcvd && match[i] < 0; q++) {
			uint32_t k = q % c->eg_slots;
			if (c->eg[k].state == 1 && !taken[k] && c->eg[k].tag == tags[i]) {
				match[i] = (int)k;
				taken[k] = 1;
			}
		}
	}
	for (int i = 0; i < n; i++) {
		r->sub[i].alloc = -1;
		if (match[i] < 0 && sizes[i] &&
		    (r->sub[i].alloc = mrcn_arena_alloc(&c->arena, sizes[i])) < 0) {
			for (int j = 0; j <= i; j++)
				if (r->sub[j].alloc >= 0)
					mrcn_arena_free(&c->arena, r->sub[j].alloc);
			r->used = 0;
			return ncclSuccess;   /* bounce full until data is consumed */
		}
	}
	r->seq = c->rseq++;
	for (int i = 0; i < n; i++) {
		int id = c->free_ids[--c->nfree_ids];
		r->sub[i].id = id;
		r->sub[i].data = data[i];
		r->sub[i].size = sizes[i];
		r->sub[i].tag = tags[i];
		r->sub[i].cuda = mhandles && mhandles[i] &&
				 ((struct mhandle *)mhandles[i])->type == NCCL_PTR_CUDA;
		struct mrcn_cts *out = CTS_IN(c, id);
		if (match[i] >= 0) {
			/* Every receive sends one CTS, so that the sender
			 * pairs each eager send with its receive; this one
			 * offers no room. */
			eg_deliver(c, (uint32_t)match[i], r, i);
			*out = (struct mrcn_cts){ .magic = MRCN_VOID_MAGIC, .id = (uint32_t)id,
						  .tag = tags[i], .credits = c->eg_freed };
			c->st.void_cts++;
		} else {
			c->ids[id].r = r;
			c->ids[id].sub = i;
			r->sub[i].pending = 1;
			*out = (struct mrcn_cts){ .magic = MRCN_CTS_MAGIC, .id = (uint32_t)id,
				.tag = tags[i], .credits = c->eg_freed, .size = sizes[i],
				.off = r->sub[i].alloc >= 0 ? mrcn_arena_off(&c->arena, r->sub[i].alloc)
							    : 0 };
		}
		/* The SQ has room: at most MRCN_NCTS CTS are outstanding. */
		int e = mrc_post_send(c->qp, MRCN_WR_CTS | (uint64_t)id, c->lkey,
				      mrcn_arena_bytes + (uint64_t)id * sizeof(*out), sizeof(*out));
		if (e) {
			c->err = e;
			return comm_failed(c, "irecv");
		}
		c->cts_busy[id] = 1;
		c->eg_told = c->eg_freed;
	}
	*request = r;
	MRC_TRACE(MRC_TR_N_IRECV, TRC(c), r->sub[0].id, n);
	return ncclSuccess;
}

/* Nothing is ever left to flush: host buffers are written by the CPU, and
 * CUDA buffers by a device copy that test waited for (its event) before
 * it reported the receive done, so the data is visible to every later
 * GPU operation by then.  A NULL request means "done at once" to NCCL,
 * as net_ib returns when it needs no flush. */
static ncclResult_t mrcn_iflush(void *recvComm, int n, void **data, int *sizes,
				    void **mhandles, void **request)
{
	(void)recvComm;
	(void)n;
	(void)data;
	(void)sizes;
	(void)mhandles;
	*request = NULL;
	return ncclSuccess;
}

static ncclResult_t mrcn_test(void *request, int *done, int *sizes)
{
	struct req *r = request;
	struct comm *c = r->c;
	*done = 0;
	if (progress(c) && r->ndone < r->n)
		return comm_failed(c, "test");
	if (r->err) {
		WARN("request failed: %s", mrc_strerror(r->err));
		r->used = 0;
		return r->cuda_fail ? ncclUnhandledCudaError
		       : r->err == -EMSGSIZE ? ncclInvalidUsage : ncclRemoteError;
	}
	if (r->ndone < r->n)
		return ncclSuccess;
	*done = 1;
	MRC_TRACE(MRC_TR_N_TEST_DONE, TRC(c), (uint64_t)(r - c->reqs), c->kind == K_SEND);
	if (sizes)
		for (int i = 0; i < r->n; i++)
			sizes[i] = (int)(c->kind == K_SEND ? r->sub[i].size : r->sub[i].got);
	r->used = 0;
	return ncclSuccess;
}


/* The comm's counters (struct mrcn_stats), for tests: the test build of
 * the plugin (tests/support/nccl_fake.map) exports it, the real one only
 * its tables.  Called on NCCL's (the test's) thread; polls the comm's
 * completions first, as test does. */
int mrcn_comm_stats(void *comm, struct mrcn_stats *out);
EXPORT int mrcn_comm_stats(void *comm, struct mrcn_stats *out)
{
	struct comm *c = comm;
	if (!c || (c->kind != K_SEND && c->kind != K_RECV))
		return -EINVAL;
	progress(c);
	*out = c->st;
	out->ring_slots = c->eg_slots;
	return 0;
}

/* ---- exported tables --------------------------------------------------- */
#define DATA_ENTRIES                                                              \
	.accept = mrcn_accept, .regMr = mrcn_regmr,                       \
	.regMrDmaBuf = mrcn_regmr_dmabuf, .deregMr = mrcn_deregmr,        \
	.iflush = mrcn_iflush, .test = mrcn_test,                         \
	.closeSend = mrcn_close_send, .closeRecv = mrcn_close_recv,       \
	.closeListen = mrcn_close_listen, .getDeviceMr = NULL,                \
	.irecvConsumed = NULL, .makeVDevice = mrcn_make_vdevice

EXPORT const ncclNet_v11_t ncclNetPlugin_v11 = {
	.name = "mrc", .init = mrcn_init, .devices = mrcn_devices,
	.getProperties = mrcn_props, .listen = mrcn_listen,
	.connect = mrcn_connect, .isend = mrcn_isend, .irecv = mrcn_irecv,
	DATA_ENTRIES, .finalize = mrcn_finalize, .setNetAttr = mrcn_set_attr,
};

/* v10 and v9 (and v8 below): NCCL 2.19-2.27.  No finalize there: the state lives until
 * the process exits. */
static ncclResult_t v10_init(ncclDebugLogger_t log, ncclProfilerCallback_t prof)
{
	return mrcn_init(NULL, 0, NULL, log, prof);
}
static ncclResult_t v9_init(ncclDebugLogger_t log)
{
	return mrcn_init(NULL, 0, NULL, log, NULL);
}
static ncclResult_t v9_props(int dev, ncclNetProperties_v9_t *p)
{
	ncclNetProperties_v11_t p11;
	ncclResult_t r = mrcn_props(dev, &p11);
	if (r == ncclSuccess)
		memcpy(p, &p11, sizeof(*p));   /* v9/v10 are v11's prefix */
	return r;
}
static ncclResult_t v9_listen(int dev, void *handle, void **lc)
{
	return mrcn_listen(NULL, dev, handle, lc);
}
static ncclResult_t v10_connect(int dev, ncclNetCommConfig_t *cfg, void *handle, void **sc,
				ncclNetDeviceHandle_t **dc)
{
	(void)cfg;
	return mrcn_connect(NULL, dev, handle, sc, dc);
}
static ncclResult_t v9_connect(int dev, void *handle, void **sc, ncclNetDeviceHandle_t **dc)
{
	return mrcn_connect(NULL, dev, handle, sc, dc);
}
static ncclResult_t v9_isend(void *sc, void *data, size_t size, int tag, void *mh, void **req)
{
	return mrcn_isend(sc, data, size, tag, mh, NULL, req);
}
static ncclResult_t v9_irecv(void *rc, int n, void **data, size_t *sizes, int *tags, void **mh,
			     void **req)
{
	return mrcn_irecv(rc, n, data, sizes, tags, mh, NULL, req);
}

/* v8: int sizes, and properties without the size limits, which NCCL of
 * that age does not know: it must keep its messages within mrcn_max_msg
 * (its defaults do: 512 KiB steps), or isend refuses them. */
static ncclResult_t v8_props(int dev, ncclNetProperties_v8_t *p)
{
	ncclNetProperties_v11_t q;
	ncclResult_t r = mrcn_props(dev, &q);
	if (r != ncclSuccess)
		return r;
	*p = (ncclNetProperties_v8_t){ .name = q.name, .pciPath = q.pciPath, .guid = q.guid,
		.ptrSupport = q.ptrSupport, .regIsGlobal = q.regIsGlobal, .speed = q.speed,
		.port = q.port, .latency = q.latency, .maxComms = q.maxComms,
		.maxRecvs = q.maxRecvs, .netDeviceType = q.netDeviceType,
		.netDeviceVersion = q.netDeviceVersion };
	return ncclSuccess;
}
static ncclResult_t v8_isend(void *sc, void *data, int size, int tag, void *mh, void **req)
{
	*req = NULL;
	if (size < 0)
		return ncclInvalidArgument;
	return mrcn_isend(sc, data, (size_t)size, tag, mh, NULL, req);
}
static ncclResult_t v8_irecv(void *rc, int n, void **data, int *sizes, int *tags, void **mh,
			     void **req)
{
	size_t sz[MRCN_MAX_RECVS];
	*req = NULL;
	if (n < 1 || n > MRCN_MAX_RECVS)
		return ncclInvalidArgument;
	for (int i = 0; i < n; i++) {
		if (sizes[i] < 0)
			return ncclInvalidArgument;
		sz[i] = (size_t)sizes[i];
	}
	return mrcn_irecv(rc, n, data, sz, tags, mh, NULL, req);
}

EXPORT const ncclNet_v8_t ncclNetPlugin_v8 = {
	.name = "mrc", .init = v9_init, .devices = mrcn_devices, .getProperties = v8_props,
	.listen = v9_listen, .connect = v9_connect, .accept = mrcn_accept,
	.regMr = mrcn_regmr, .regMrDmaBuf = mrcn_regmr_dmabuf, .deregMr = mrcn_deregmr,
	.isend = v8_isend, .irecv = v8_irecv, .iflush = mrcn_iflush, .test = mrcn_test,
	.closeSend = mrcn_close_send, .closeRecv = mrcn_close_recv,
	.closeListen = mrcn_close_listen, .getDeviceMr = NULL, .irecvConsumed = NULL,
};

EXPORT const ncclNet_v10_t ncclNetPlugin_v10 = {
	.name = "mrc", .init = v10_init, .devices = mrcn_devices, .getProperties = v9_props,
	.listen = v9_listen, .connect = v10_connect, .isend = mrcn_isend,
	.irecv = mrcn_irecv, DATA_ENTRIES,
};

EXPORT const ncclNet_v9_t ncclNetPlugin_v9 = {
	.name = "mrc", .init = v9_init, .devices = mrcn_devices, .getProperties = v9_props,
	.listen = v9_listen, .connect = v9_connect, .isend = v9_isend, .irecv = v9_irecv,
	DATA_ENTRIES,
};

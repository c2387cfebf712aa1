/* libnccl-net-mrc.so, isend (docs/nccl.md; the protocol: data.c): a
 * message goes by its receive's clear-to-send (from the bounce region, or
 * zero-copy from a registered buffer), or with none yet, when it fits a
 * slot of the receiver's eager ring and a credit is left, at once into
 * that ring. */
#include <errno.h>
#include <string.h>

#include <mrc/mrc.h>

#include "common/trace.h"
#include "nccl/plugin.h"

/* Message number n of tag t went (eagerly or by its CTS): the count
 * moves on, and any CTS kept for a number below it (a peer's repeat) is
 * dropped so that it cannot fill the CTS list. */
static void tag_sent(struct comm *c, int32_t tag)
{
	uint32_t *n = mrcn_tag_count(c, tag, 1);    /* isend entered it */
	++*n;
	for (int i = 0; i < c->ncts;)
		if (c->cts[i].tag == tag && c->cts[i].tseq < *n) {
			memmove(&c->cts[i], &c->cts[i + 1],
				(size_t)(c->ncts - i - 1) * sizeof(c->cts[0]));
			c->ncts--;
			c->st.paired++;
		} else {
			i++;
		}
}

/* Posts request r's data for the CTS at c->cts[k] (WRITE_IMM from lkey at
 * off; the first skip bytes went as pieces already), and on success takes
 * the CTS and hands r to NCCL: done at once for a bounce-region send
 * (alloc: its arena block, or -1 for none), at the completion for a
 * zero-copy one (zc).  Out of room is no error (NCCL retries with a NULL
 * request) unless pieces went. */
static ncclResult_t post_data(struct comm *c, struct req *r, int k, void **request,
			      uint64_t wr_id, uint32_t lkey, uint64_t off, size_t size, uint64_t skip,
			      int alloc, int zc)
{
	struct mrcn_cts cts = c->cts[k];
	int e = mrc_post_write_imm(c->qp, wr_id, lkey, off + skip, size - skip, c->rkey,
				   cts.off + skip, cts.id);
	if (e) {
		if (alloc >= 0)
			mrcn_arena_free(&c->arena, alloc);
		r->used = 0;
		if (e == -ENOSPC && !skip)
			return ncclSuccess;
		c->err = e;
		return mrcn_comm_failed(c, "isend");
	}
	memmove(&c->cts[k], &c->cts[k + 1], (size_t)(c->ncts - k - 1) * sizeof(c->cts[0]));
	c->ncts--;
	tag_sent(c, cts.tag);
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

/* The send's data into the bounce region at off: memcpy, or for a CUDA
 * buffer a device-to-host copy finished before the post.  A failed copy
 * is the request's error (test reports it), nothing is sent, and a CTS
 * stays for NCCL's abort to discard: 1, with *request the failed one. */
static int copy_in(struct comm *c, struct req *r, int a, uint64_t off, void *data, size_t size,
		   int cuda, void **request)
{
	if (size && cuda) {
		int ce = mrcn_cuda_copy(c, 0, data, off, size);
		if (ce) {
			mrcn_arena_free(&c->arena, a);
			WARN("isend: device to host copy of %zu bytes failed: %s", size, mrc_strerror(ce));
			*r = (struct req){ .c = c, .used = 1, .n = 1, .err = ce, .cuda_fail = 1 };
			r->sub[0].alloc = -1;
			*request = r;
			return 1;
		}
	} else if (size) {
		memcpy(c->base + off, data, size);
	}
	return 0;
}

/* An eager send: header and payload copied into our arena, one
 * WRITE_IMM into the next slot of the receiver's ring (imm: the slot),
 * done at the post like a bounce send.  The caller checked size and
 * credit.  Out of room or ring space: a NULL request, NCCL retries. */
static ncclResult_t eager_send(struct comm *c, void *data, size_t size, int tag, uint32_t tseq,
			       int cuda, void **request)
{
	struct req *r = mrcn_req_get(c);
	if (!r)
		return ncclSuccess;
	struct mrcn_eg_hdr h = { .magic = MRCN_EG_HDR_MAGIC, .tag = tag, .size = (uint32_t)size,
				 .seq = c->eg_sent, .tseq = tseq };
	/* Without the header when the receiver can do without it (proto.h) */
	int compact = c->eg_compact && c->eg_ctag_set && c->eg_ctag == tag && size;
	uint32_t hl = compact ? 0 : (uint32_t)sizeof(h);
	int a = mrcn_arena_alloc(&c->arena, hl + size);
	if (a < 0) {
		r->used = 0;
		return ncclSuccess;
	}
	uint64_t off = mrcn_arena_off(&c->arena, a);
	memcpy(c->base + off, &h, hl);
	if (copy_in(c, r, a, off + hl, data, size, cuda, request))
		return ncclSuccess;
	uint32_t k = c->eg_sent % c->eg_slots;
	uint32_t imm = MRCN_IMM_EAGER | k;
	if (compact)
		imm |= MRCN_IMM_COMPACT | (tseq & MRCN_IMM_TSEQ_MASK) << MRCN_IMM_TSEQ_SHIFT;
	int e = mrc_post_write_imm(c->qp, MRCN_WR_DATA | (uint32_t)a, c->lkey, off, hl + size, c->rkey,
				   c->eg_off + k * c->eg_stride + sizeof(h) - hl, imm);
	if (e) {
		mrcn_arena_free(&c->arena, a);
		r->used = 0;
		if (e == -ENOSPC)
			return ncclSuccess;
		c->err = e;
		return mrcn_comm_failed(c, "isend");
	}
	c->eg_sent++;
	tag_sent(c, tag);
	c->data_inflight++;
	c->st.eager_sends++;
	c->st.eager_compact += compact;
	if (!c->eg_ctag_set) {
		c->eg_ctag = tag;
		c->eg_ctag_set = 1;
	}
	r->n = 1;
	r->ndone = 1;
	r->sub[0].size = size;
	r->sub[0].alloc = -1;
	*request = r;
	c->tr_waiting = 0;
	MRC_TRACE(MRC_TR_N_ISEND, TRC(c), MRCN_IMM_EAGER | k, size);
	return ncclSuccess;
}

/* No receive of this tag told us its room: a message that fits a slot of
 * the receiver's eager ring goes there at once (the receiver's
 * advertisement decides, not our own MRC_NCCL_EAGER_BYTES: its receives
 * that small send no CTS while it has a credit to give); else a NULL
 * request, and NCCL retries. */
static ncclResult_t send_no_cts(struct comm *c, void *data, size_t size, int tag, uint32_t tseq,
				int cuda, void **request)
{
	if (c->eg_slots && size <= c->eg_stride - sizeof(struct mrcn_eg_hdr)) {
		if (c->eg_sent - c->eg_credit < c->eg_slots)
			return eager_send(c, data, size, tag, tseq, cuda, request);
		c->st.eager_no_credit++;    /* the CTS path then */
	}
	/* the first retry only: NCCL retries in a loop */
	if (!c->tr_waiting) {
		c->tr_waiting = 1;
		MRC_TRACE(MRC_TR_N_ISEND_WAIT, TRC(c), (uint64_t)tag, size);
	}
	return ncclSuccess;     /* no receive posted for it yet */
}

/* Every piece of a host buffer's message but its last (proto.h), copied
 * into the arena at off and posted one by one, so that mrcd sends each
 * while the next is copied; *done: the bytes posted.  Only to a receiver
 * that takes pieces, and only while the SQ surely holds them all and the
 * last WRITE_IMM: its entries in use are at most the RECVs kept posted
 * and the data WRITEs not completed, so no post can meet a full SQ
 * halfway through a message. */
static int post_pieces(struct comm *c, const struct mrcn_cts *cts, uint64_t off,
		       const uint8_t *data, size_t size, uint64_t *done)
{
	*done = 0;
	if (!c->eg_pieces || size <= MRCN_PIECE ||
	    MRCN_NRECV + c->data_inflight + (size - 1) / MRCN_PIECE + 1 > MRCN_SQ)
		return 0;
	for (; size - *done > MRCN_PIECE; *done += MRCN_PIECE) {
		memcpy(c->base + off + *done, data + *done, MRCN_PIECE);
		int e = mrc_post_write_imm(c->qp, MRCN_WR_PIECE, c->lkey, off + *done, MRCN_PIECE,
					   c->rkey, cts->off + *done, MRCN_IMM_PIECE | cts->id);
		if (e)
			return e;
		c->data_inflight++;
		c->st.pieces++;
	}
	return 0;
}

/* A send by the CTS at c->cts[k] through the bounce region. */
static ncclResult_t bounce_send(struct comm *c, struct req *r, int k, void *data, size_t size,
				int cuda, void **request)
{
	int a = -1;
	if (size && (a = mrcn_arena_alloc(&c->arena, size)) < 0) {
		r->used = 0;
		return ncclSuccess;     /* bounce full until sends complete */
	}
	uint64_t off = a >= 0 ? mrcn_arena_off(&c->arena, a) : 0, skip = 0;
	int e = cuda ? 0 : post_pieces(c, &c->cts[k], off, data, size, &skip);
	if (e) {
		r->used = 0;
		c->err = e;
		return mrcn_comm_failed(c, "isend");
	}
	if (copy_in(c, r, a, off + skip, (uint8_t *)data + skip, size - skip, cuda, request))
		return ncclSuccess;
	/* Done now: the data is in the bounce region (copied above, a CUDA
	 * copy finished), so NCCL may reuse its buffer, as a socket send is
	 * done once written.  Waiting for the WRITE_IMM's completion (the
	 * peer's ACK) put an ACK round trip, or a held ACK's delay, into
	 * every send (docs/nccl.md "Send completion"); the bounce room is
	 * freed by that completion (data.c, on_cqe), and a failure fails
	 * the comm. */
	return post_data(c, r, k, request, MRCN_WR_DATA | (a >= 0 ? (uint32_t)a : MRCN_WR_NOALLOC),
			 c->lkey, off, size, skip, a, 0);
}

ncclResult_t mrcn_isend(void *sendComm, void *data, size_t size, int tag,
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
	if (mrcn_progress(c))
		return mrcn_comm_failed(c, "isend");
	/* The message's number among its tag's: the CTS for it, if come. */
	uint32_t *tn = mrcn_tag_count(c, tag, 1);
	if (!tn) {
		WARN("isend: no room for tag %d (at most %d tags on one comm)", tag,
		     MRCN_MAX_TAGS * 3 / 4);
		return ncclInternalError;
	}
	int k = 0;
	while (k < c->ncts && (c->cts[k].tag != tag || c->cts[k].tseq != *tn))
		k++;
	if (k == c->ncts)
		return send_no_cts(c, data, size, tag, *tn, cuda, request);
	struct mrcn_cts cts = c->cts[k];
	if (size > cts.size) {
		WARN("isend: %zu bytes into a receive of %llu (tag %d): truncated", size,
		     (unsigned long long)cts.size, tag);
		return ncclInvalidUsage;
	}
	struct req *r = mrcn_req_get(c);
	if (!r)
		return ncclSuccess;
	/* From the buffer itself when regMr registered it (reg_zero_copy). */
	uint8_t *d8 = data;
	if (size >= MRCN_ZC_MIN && !cuda && m && m->mr && d8 >= (uint8_t *)m->data &&
	    size <= m->size - (size_t)(d8 - (uint8_t *)m->data)) {
		/* Done at the WRITE_IMM's completion (data.c, on_cqe): until then
		 * mrcd may still read the buffer. */
		uint32_t rix = (uint32_t)(r - c->reqs);
		return post_data(c, r, k, request, MRCN_WR_DATA | MRCN_WR_ZC | rix,
				 mrc_mr_key(m->mr), (uint64_t)(d8 - (uint8_t *)m->data), size, 0, -1, 1);
	}
	return bounce_send(c, r, k, data, size, cuda, request);
}

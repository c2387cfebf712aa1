/* libnccl-net-mrc.so, the data path (docs/nccl.md): isend/irecv/test/
 * iflush over the comms' bounce regions (memory registration: reg.c; the
 * exported tables: tables.c).
 *
 * Protocol (receiver-driven, like a CTS): irecv reserves, per grouped
 * receive, an id and room in the receiver's bounce arena, and SENDs a
 * clear-to-send {id, tag, size, offset} to the sender's posted RECVs.  isend
 * takes the oldest CTS of its tag (none yet: a NULL request, NCCL retries),
 * copies, and WRITE_IMMs the data to that offset with imm = id; the
 * receiver's RECV_WRITE_IMM completion gives the size.  A receive no
 * larger than an eager slot sends no CTS: its message comes at once into
 * the receiver's eager ring (credits; docs/nccl.md "Eager messages"),
 * paired with it by tag and per-tag number, and a CTS goes only when the
 * ring is full.  Host buffers are
 * copied with memcpy, CUDA buffers by the comm's copy engine
 * (nccl/stage.c), each finished before the data moves on. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mrc/mrc.h>

#include "common/clock.h"
#include "common/trace.h"
#include "nccl/plugin.h"

/* ---- data path --------------------------------------------------------- */
/* The peer broke the protocol: the comm fails with -EPROTO (a first error
 * stays) and the log says why, at the caller's line (WARN's __LINE__). */
#define PROTO_ERR(c, ...)                       \
	do {                                    \
		if (!(c)->err)                  \
			(c)->err = -EPROTO;     \
		WARN(__VA_ARGS__);              \
	} while (0)

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
void mrcn_id_release(struct comm *c, int id)
{
	if (!c->ids[id].r && !c->cts_busy[id])
		c->free_ids[c->nfree_ids++] = id;
}

void mrcn_refuse(struct comm *c, const char *why, uint64_t v)
{
	c->st.refused++;
	PROTO_ERR(c, "eager message from host %u refused: %s (%llu)", c->host, why,
		  (unsigned long long)v);
}

/* A CTS or the eager ring's advertisement from the receiver: its credits
 * taken, and a CTS kept for isend unless its message already went
 * eagerly (its number below the tag's sends). */
static void cts_arrived(struct comm *c, const struct mrc_completion *e)
{
	int slot = (int)(e->wr_id & 0xffff);
	struct mrcn_cts in;
	if (slot >= MRCN_NRECV || mrcn_cts_parse(CTS_IN(c, slot), e->byte_len, &in) ||
	    (in.magic == MRCN_CTS_MAGIC && c->ncts == MRCN_NCTS)) {
		PROTO_ERR(c, "malformed clear-to-send from host %u", c->host);
		return;
	}
	/* Credits are a count, so a late or repeated one is harmless;
	 * more than was ever sent is not. */
	if ((int32_t)(in.credits - c->eg_credit) > 0) {
		if ((int32_t)(in.credits - c->eg_sent) > 0) {
			PROTO_ERR(c, "host %u returned %u eager credits, %u sent", c->host,
				  in.credits, c->eg_sent);
			return;
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
			PROTO_ERR(c, "host %u changed its eager ring", c->host);
			return;
		}
	} else {
		const uint32_t *sent = mrcn_tag_count(c, in.tag, 0);
		if (sent && in.tseq < *sent) {
			c->st.paired++;     /* its message went eagerly */
			goto repost;
		}
		c->cts[c->ncts++] = in;
		MRC_TRACE(MRC_TR_N_CTS, TRC(c), in.id, in.size);
	}
repost:;
	int r = mrcn_post_cts_recv(c, slot);
	if (r && !c->err)
		c->err = r;
}

/* A message landed in the bounce region for one of our receives (or in
 * the eager ring): copied out to NCCL's buffer, its room freed. */
static void data_arrived(struct comm *c, const struct mrc_completion *e)
{
	if (e->imm & MRCN_IMM_EAGER) {
		mrcn_eg_arrived(c, e);
		return;
	}
	uint32_t id = e->imm;
	if (id >= MRCN_NCTS || !c->ids[id].r) {
		PROTO_ERR(c, "data for unknown id %u", id);
		return;
	}
	struct req *r = c->ids[id].r;
	int s = c->ids[id].sub;
	if (r->sub[s].deferred) {
		/* no CTS offered it room: the peer guessed the id */
		PROTO_ERR(c, "data for id %u, whose clear-to-send was never sent", id);
		return;
	}
	c->ids[id].r = NULL;
	mrcn_id_release(c, (int)id);
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
	case MRC_CQE_RECV:              /* a CTS or the eager advertisement arrived */
		cts_arrived(c, e);
		break;
	case MRC_CQE_RECV_WRITE_IMM:    /* data landed */
		data_arrived(c, e);
		break;
	default:                        /* our CTS and advertisement SENDs */
		if (e->wr_id == MRCN_WR_EGR) {
			c->egr_busy = 0;
		} else if ((e->wr_id >> 32) == (MRCN_WR_CTS >> 32) &&
			   (e->wr_id & 0xffffffffu) < MRCN_NCTS) {
			int id = (int)(e->wr_id & 0xffffffffu);
			c->cts_busy[id] = 0;
			mrcn_id_release(c, id);
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
	/* Credits ride on CTSs, else a message of their own in batches; a
	 * full ring sends the deferred receives' CTSs. */
	int r = mrcn_eg_check(c);
	if (r && !c->err)
		c->err = r;
	return c->err;
}

int mrcn_send_drain(struct comm *c, int ms)
{
	int64_t end = mrc__mono_ms() + ms;
	while (c->data_inflight > 0 && !c->err && mrc__mono_ms() < end) {
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
	struct req *r = req_get(c);
	if (!r)
		return ncclSuccess;
	struct mrcn_eg_hdr h = { .magic = MRCN_EG_HDR_MAGIC, .tag = tag, .size = (uint32_t)size,
				 .seq = c->eg_sent, .tseq = tseq };
	int a = mrcn_arena_alloc(&c->arena, sizeof(h) + size);
	if (a < 0) {
		r->used = 0;
		return ncclSuccess;
	}
	uint64_t off = mrcn_arena_off(&c->arena, a);
	memcpy(c->base + off, &h, sizeof(h));
	if (copy_in(c, r, a, off + sizeof(h), data, size, cuda, request))
		return ncclSuccess;
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
	tag_sent(c, tag);
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
	if (progress(c))
		return comm_failed(c, "isend");
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
	uint8_t *d8 = data;
	int zc_ok = size >= MRCN_ZC_MIN && !cuda && m && m->mr && d8 >= (uint8_t *)m->data &&
		    size <= m->size - (size_t)(d8 - (uint8_t *)m->data);
	if (k == c->ncts) {
		/* No receive of this tag told us its room: a message that
		 * fits a slot of the receiver's eager ring goes there at once
		 * (the receiver's advertisement decides, not our own
		 * MRC_NCCL_EAGER_BYTES: its receives that small send no CTS
		 * while it has a credit to give). */
		if (c->eg_slots && size <= c->eg_stride - sizeof(struct mrcn_eg_hdr)) {
			if (c->eg_sent - c->eg_credit < c->eg_slots)
				return eager_send(c, data, size, tag, *tn, cuda, request);
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
	if (copy_in(c, r, a, off, data, size, cuda, request))
		return ncclSuccess;
	/* Done now: the data is in the bounce region (copied above, a CUDA
	 * copy finished), so NCCL may reuse its buffer, as a socket send is
	 * done once written.  Waiting for the WRITE_IMM's completion (the
	 * peer's ACK) put an ACK round trip, or a held ACK's delay, into
	 * every send (docs/nccl.md "Send completion"); the bounce room is
	 * freed by that completion (on_cqe), and a failure fails the comm. */
	return post_data(c, r, k, request, MRCN_WR_DATA | (a >= 0 ? (uint32_t)a : MRCN_WR_NOALLOC),
			 c->lkey, off, size, a, 0);
}

/* The grouped receive's buffers: of a kind this comm takes, within
 * maxP2pBytes. */
static ncclResult_t irecv_check(struct comm *c, int n, const size_t *sizes, void **mhandles)
{
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
	return ncclSuccess;
}

/* For each receive (tag, number), the eager slot holding its message
 * if it came already, or -1. */
static void eager_match(struct comm *c, int n, const int *tags, const uint32_t *tseq, int *match)
{
	for (int i = 0; i < n; i++) {
		match[i] = -1;
		for (uint32_t q = c->eg_freed; q != c->eg_rcvd && match[i] < 0; q++) {
			uint32_t k = q % c->eg_slots;
			if (c->eg[k].state == 1 && c->eg[k].tag == tags[i] && c->eg[k].tseq == tseq[i])
				match[i] = (int)k;
		}
	}
}

/* May one more receive wait for its message without a CTS (nd of them
 * do already)?  Only while the sender is sure to hold a credit for each
 * such message without our calling in again: slots it may have used
 * since our last telling (received since; ones in flight are for
 * deferred receives, counted in nd) plus one per deferred receive, within
 * the ring.  Over it, freed slots not yet told go back now (one credit
 * message instead of a CTS); if that is not enough (the ring is held by
 * messages not freed), the receive takes the CTS path.  So a posted
 * receive's message never waits for NCCL to call test again, as with the
 * CTS it replaces, unless the peer fills the ring with messages nobody
 * asked for yet, which irecv's own progress then sees (mrcn_eg_check). */
static int defer_ok(struct comm *c, int nd)
{
	if (c->eg_rcvd - c->eg_told + (uint32_t)nd + 1 <= c->eg_slots)
		return 1;
	if (c->eg_freed != c->eg_told && !c->egr_busy && mrcn_post_egr(c) == 0)
		return c->eg_rcvd - c->eg_told + (uint32_t)nd + 1 <= c->eg_slots;
	return 0;
}

ncclResult_t mrcn_irecv(void *recvComm, int n, void **data, size_t *sizes, int *tags,
				   void **mhandles, void **phandles, void **request)
{
	(void)phandles;
	struct comm *c = recvComm;
	*request = NULL;
	if (n < 1 || n > MRCN_MAX_RECVS) {
		WARN("irecv: %d grouped receives (1..%d)", n, MRCN_MAX_RECVS);
		return ncclInvalidArgument;
	}
	ncclResult_t v = irecv_check(c, n, sizes, mhandles);
	if (v != ncclSuccess)
		return v;
	if (progress(c))
		return comm_failed(c, "irecv");
	/* Each receive's number among its tag's (a tag twice in one group:
	 * in the group's order), counted only once the request is made. */
	uint32_t *tn[MRCN_MAX_RECVS], tseq[MRCN_MAX_RECVS];
	for (int i = 0; i < n; i++)     /* entered first: the table may grow */
		if (!mrcn_tag_count(c, tags[i], 1)) {
			WARN("irecv: no room for tag %d (at most %d tags on one comm)", tags[i],
			     MRCN_MAX_TAGS * 3 / 4);
			return ncclInternalError;
		}
	for (int i = 0; i < n; i++) {
		tn[i] = mrcn_tag_count(c, tags[i], 0);
		tseq[i] = *tn[i];
		for (int j = 0; j < i; j++)
			tseq[i] += tn[j] == tn[i];
	}
	if (c->nfree_ids < n)
		return ncclSuccess;
	struct req *r = req_get(c);
	if (!r)
		return ncclSuccess;
	r->n = n;
	/* Eager messages already here are delivered now and need no room;
	 * receives no larger than a slot wait for theirs without a CTS
	 * (deferred); the rest get room and a CTS. */
	int match[MRCN_MAX_RECVS];
	eager_match(c, n, tags, tseq, match);
	uint64_t slot_max = c->eg_slots ? c->eg_stride - sizeof(struct mrcn_eg_hdr) : 0;
	int nd = c->ndeferred;
	for (int i = 0; i < n; i++) {
		r->sub[i].alloc = -1;
		r->sub[i].deferred = match[i] < 0 && c->eg_slots && sizes[i] <= slot_max &&
				     defer_ok(c, nd);
		nd += r->sub[i].deferred;
		if (match[i] < 0 && !r->sub[i].deferred && sizes[i] &&
		    (r->sub[i].alloc = mrcn_arena_alloc(&c->arena, sizes[i])) < 0) {
			for (int j = 0; j <= i; j++)
				if (r->sub[j].alloc >= 0)
					mrcn_arena_free(&c->arena, r->sub[j].alloc);
			r->used = 0;
			return ncclSuccess;   /* bounce full until data is consumed */
		}
	}
	r->seq = c->rseq++;
	for (int i = 0; i < n; i++)
		++*tn[i];
	for (int i = 0; i < n; i++) {
		int id = c->free_ids[--c->nfree_ids];
		r->sub[i].id = id;
		r->sub[i].data = data[i];
		r->sub[i].size = sizes[i];
		r->sub[i].tag = tags[i];
		r->sub[i].tseq = tseq[i];
		r->sub[i].cuda = mhandles && mhandles[i] &&
				 ((struct mhandle *)mhandles[i])->type == NCCL_PTR_CUDA;
		c->ids[id].r = r;
		c->ids[id].sub = i;
		r->sub[i].pending = 1;
		if (match[i] >= 0) {
			mrcn_eg_deliver(c, (uint32_t)match[i], r, i);
		} else if (r->sub[i].deferred) {
			c->ndeferred++;
			c->st.deferred++;
		} else {
			/* The SQ has room: at most MRCN_NCTS CTS are outstanding. */
			int e = mrcn_post_cts(c, r, i);
			if (e) {
				c->err = e;
				return comm_failed(c, "irecv");
			}
		}
	}
	/* a deferred receive with the ring full needs its CTS now */
	int e = mrcn_eg_check(c);
	if (e && !c->err)
		c->err = e;
	*request = r;
	MRC_TRACE(MRC_TR_N_IRECV, TRC(c), r->sub[0].id, n);
	return ncclSuccess;
}

/* Nothing is ever left to flush: host buffers are written by the CPU, and
 * CUDA buffers by a device copy that test waited for (its event) before
 * it reported the receive done, so the data is visible to every later
 * GPU operation by then.  A NULL request means "done at once" to NCCL,
 * as net_ib returns when it needs no flush. */
ncclResult_t mrcn_iflush(void *recvComm, int n, void **data, int *sizes,
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

ncclResult_t mrcn_test(void *request, int *done, int *sizes)
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
__attribute__((visibility("default"))) int mrcn_comm_stats(void *comm, struct mrcn_stats *out)
{
	struct comm *c = comm;
	if (!c || (c->kind != K_SEND && c->kind != K_RECV))
		return -EINVAL;
	progress(c);
	*out = c->st;
	out->ring_slots = c->eg_slots;
	return 0;
}

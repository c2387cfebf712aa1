/* libnccl-net-mrc.so, irecv (docs/nccl.md; the protocol: data.c): a
 * grouped receive takes ids and room in the bounce arena and sends its
 * clear-to-sends; a receive whose message is already in the eager ring is
 * delivered from it, and one no larger than a slot waits for its message
 * there without a CTS while the sender is sure to hold a credit. */
#include <errno.h>
#include <string.h>

#include <mrc/mrc.h>

#include "common/trace.h"
#include "nccl/plugin.h"

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

/* Each receive's number among its tag's (a tag twice in one group: in
 * the group's order), tn[i] its tag's count, moved on only once the
 * request is made. */
static ncclResult_t irecv_tseq(struct comm *c, int n, const int *tags, uint32_t **tn,
			       uint32_t *tseq)
{
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
	return ncclSuccess;
}

/* Eager messages already here (match[i] their slot) are delivered at
 * once and need no room; receives no larger than a slot wait for theirs
 * without a CTS (deferred); the rest get room in the bounce arena.
 * -ENOMEM (r given back, nothing taken) while the arena is full. */
static int irecv_room(struct comm *c, struct req *r, int n, const size_t *sizes,
		      const int *match)
{
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
			return -ENOMEM;
		}
	}
	return 0;
}

/* Each receive of r gets its id, then its eager message, its wait, or
 * its CTS: 0, or the CTS post's error. */
static int irecv_start(struct comm *c, struct req *r, int n, void **data, const size_t *sizes,
		       const int *tags, void **mhandles, const uint32_t *tseq, const int *match)
{
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
			if (e)
				return e;
		}
	}
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
	if (mrcn_progress(c))
		return mrcn_comm_failed(c, "irecv");
	uint32_t *tn[MRCN_MAX_RECVS], tseq[MRCN_MAX_RECVS];
	v = irecv_tseq(c, n, tags, tn, tseq);
	if (v != ncclSuccess)
		return v;
	if (c->nfree_ids < n)
		return ncclSuccess;
	struct req *r = mrcn_req_get(c);
	if (!r)
		return ncclSuccess;
	r->n = n;
	int match[MRCN_MAX_RECVS];
	eager_match(c, n, tags, tseq, match);
	if (irecv_room(c, r, n, sizes, match))
		return ncclSuccess;   /* bounce full until data is consumed */
	r->seq = c->rseq++;
	for (int i = 0; i < n; i++)
		++*tn[i];
	int e = irecv_start(c, r, n, data, sizes, tags, mhandles, tseq, match);
	if (e) {
		c->err = e;
		return mrcn_comm_failed(c, "irecv");
	}
	/* a deferred receive with the ring full needs its CTS now */
	e = mrcn_eg_check(c);
	if (e && !c->err)
		c->err = e;
	*request = r;
	MRC_TRACE(MRC_TR_N_IRECV, TRC(c), r->sub[0].id, n);
	return ncclSuccess;
}

/* libnccl-net-mrc.so, the receiving side of eager messages (docs/nccl.md,
 * "Eager messages"): a message in the comm's eager ring checked, matched
 * to its irecv by tag and per-tag number, copied out, its slot freed in
 * ring order; credits returned in batches, and the deferred receives'
 * CTSs sent only when the ring is full. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <mrc/mrc.h>

#include "common/trace.h"
#include "nccl/plugin.h"

static uint32_t tag_slot(int32_t tag, uint32_t cap)
{
	uint32_t h = (uint32_t)tag * 2654435761u;
	return (h ^ (h >> 16)) & (cap - 1);
}

static struct mrcn_tagent *tag_find(struct mrcn_tagent *t, uint32_t cap, int32_t tag)
{
	for (uint32_t i = 0, k = tag_slot(tag, cap); i < cap; i++, k = (k + 1) & (cap - 1))
		if (!t[k].used || t[k].tag == tag)
			return &t[k];
	return NULL;
}

/* Doubles the table (or makes the first one); -ENOSPC at MRCN_MAX_TAGS. */
static int tag_grow(struct comm *c)
{
	uint32_t cap = c->tags_cap ? c->tags_cap * 2 : MRCN_TAGS_INIT;
	if (cap > MRCN_MAX_TAGS)
		return -ENOSPC;
	struct mrcn_tagent *t = calloc(cap, sizeof(*t));
	if (!t)
		return -ENOMEM;
	for (uint32_t i = 0; i < c->tags_cap; i++)
		if (c->tags[i].used)
			*tag_find(t, cap, c->tags[i].tag) = c->tags[i];
	free(c->tags);
	c->tags = t;
	c->tags_cap = cap;
	return 0;
}

uint32_t *mrcn_tag_count(struct comm *c, int32_t tag, int add)
{
	struct mrcn_tagent *e = c->tags ? tag_find(c->tags, c->tags_cap, tag) : NULL;
	if (e && e->used)
		return &e->n;
	if (!add)
		return NULL;
	if (!c->tags || (c->tags_used + 1) * 4 > c->tags_cap * 3) {
		if (tag_grow(c))
			return NULL;
		e = tag_find(c->tags, c->tags_cap, tag);
	}
	*e = (struct mrcn_tagent){ .tag = tag, .n = 0, .used = 1 };
	c->tags_used++;
	return &e->n;
}

/* The CTS of receive (r, i): its id, tag, number and room (none for an
 * empty receive), with the credits; 0 or a negative errno (-ENOSPC: the
 * SQ is full, try again). */
int mrcn_post_cts(struct comm *c, struct req *r, int i)
{
	int id = r->sub[i].id;
	struct mrcn_cts *out = CTS_IN(c, id);
	*out = (struct mrcn_cts){ .magic = MRCN_CTS_MAGIC, .id = (uint32_t)id,
				  .tag = r->sub[i].tag, .credits = c->eg_freed,
				  .size = (uint32_t)r->sub[i].size, .tseq = r->sub[i].tseq,
				  .off = r->sub[i].alloc >= 0
					 ? mrcn_arena_off(&c->arena, r->sub[i].alloc) : 0 };
	int e = mrc_post_send(c->qp, MRCN_WR_CTS | (uint64_t)id, c->lkey,
			      mrcn_arena_bytes + (uint64_t)id * sizeof(*out), sizeof(*out));
	if (e)
		return e;
	c->cts_busy[id] = 1;
	c->eg_told = c->eg_freed;
	c->st.cts_posted++;
	return 0;
}

/* Credits go back in batches: once half the ring is free, or at once
 * when the sender may have none left (every slot received since the last
 * telling).  Deferred receives (eager-sized, no CTS) rely on the sender
 * writing their messages eagerly; if it cannot (no slot is free to tell
 * it about), they get their CTS now and the CTS path carries them, so a
 * ring held by messages nobody asked for yet never blocks a posted
 * receive.  With every slot unfreed the sender has no credit, so no eager
 * message of a deferred receive is in flight: its CTS cannot race one. */
int mrcn_eg_check(struct comm *c)
{
	if (c->kind != K_RECV || !c->eg_slots || c->err)
		return 0;
	int full = c->eg_rcvd - c->eg_told >= c->eg_slots;
	if (c->eg_freed != c->eg_told) {
		if (!c->egr_busy && (full || c->eg_freed - c->eg_told >= (c->eg_slots + 1) / 2)) {
			int r = mrcn_post_egr(c);
			if (r && r != -ENOSPC)
				return r;
		}
		return 0;
	}
	if (!full || !c->ndeferred)
		return 0;
	for (int q = 0; q < MRCN_MAX_REQS; q++) {
		struct req *r = &c->reqs[q];
		for (int i = 0; r->used && i < r->n; i++) {
			if (!r->sub[i].deferred)
				continue;
			if (r->sub[i].size &&
			    (r->sub[i].alloc = mrcn_arena_alloc(&c->arena, r->sub[i].size)) < 0)
				return 0;       /* room later: the next progress */
			int e = mrcn_post_cts(c, r, i);
			if (e) {
				if (r->sub[i].alloc >= 0)
					mrcn_arena_free(&c->arena, r->sub[i].alloc);
				r->sub[i].alloc = -1;
				return e == -ENOSPC ? 0 : e;
			}
			r->sub[i].deferred = 0;
			c->ndeferred--;
			c->st.late_cts++;
		}
	}
	return 0;
}

/* Eager slots are freed in ring order (credits are a count): a slot
 * whose message waits for its irecv holds the ones after it. */
void mrcn_eg_reclaim(struct comm *c)
{
	while (c->eg_freed != c->eg_rcvd && c->eg[c->eg_freed % c->eg_slots].state == 2) {
		c->eg[c->eg_freed % c->eg_slots].state = 0;
		c->eg_freed++;
	}
}

/* Eager message in slot k satisfies receive (r, s): copied out (sizes
 * were checked at arrival against the slot), its CTS room and id let go. */
void mrcn_eg_deliver(struct comm *c, uint32_t k, struct req *r, int s)
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
	if (r->sub[s].deferred) {
		r->sub[s].deferred = 0;
		c->ndeferred--;
	}
	if (r->sub[s].alloc >= 0)
		mrcn_arena_free(&c->arena, r->sub[s].alloc);
	r->sub[s].alloc = -1;
	if (r->sub[s].id >= 0 && c->ids[r->sub[s].id].r == r) {
		c->ids[r->sub[s].id].r = NULL;
		mrcn_id_release(c, r->sub[s].id);
	}
	r->ndone++;
	c->eg[k].state = 2;
	MRC_TRACE(MRC_TR_N_DATA, TRC(c), MRCN_IMM_EAGER | k, size);
	mrcn_eg_reclaim(c);
}

/* A compact message's header (proto.h), from our own state. */
static int eg_compact_hdr(struct comm *c, const struct mrc_completion *e, struct mrcn_eg_hdr *h)
{
	const uint32_t *n = c->eg_ctag_set ? mrcn_tag_count(c, c->eg_ctag, 0) : NULL;
	return mrcn_eg_compact_parse(e->imm, e->byte_len, c->eg_stride, c->eg_ctag_set,
				     c->eg_ctag, n ? *n : 0, c->eg_rcvd, h);
}

/* An eager message landed: checked against our own ring (never the
 * peer's header alone), then given to the oldest receive of its tag
 * still waiting, or kept until irecv asks for it. */
void mrcn_eg_arrived(struct comm *c, const struct mrc_completion *e)
{
	int compact = (e->imm & MRCN_IMM_COMPACT) != 0;
	uint32_t k = e->imm & (compact ? MRCN_IMM_SLOT : ~MRCN_IMM_EAGER);
	if (!c->eg_slots || k >= c->eg_slots)
		{
		mrcn_refuse(c, "no such slot", k);
		return;
	}
	if (k != c->eg_rcvd % c->eg_slots || c->eg[k].state)
		{
		mrcn_refuse(c, "slot out of turn, or not freed yet", k);
		return;
	}
	struct mrcn_eg_hdr h;
	int pr = compact ? eg_compact_hdr(c, e, &h) :
		 mrcn_eg_hdr_parse(c->base + c->eg_off + k * c->eg_stride, e->byte_len,
				   c->eg_stride, c->eg_rcvd, &h);
	if (pr == -EMSGSIZE) {
		mrcn_refuse(c, "length beyond the slot", e->byte_len);
		return;
	}
	if (pr == -ENOMSG) {
		mrcn_refuse(c, "compact message before the comm's first eager message", k);
		return;
	}
	if (pr) {
		mrcn_refuse(c, "bad header (magic, sequence, or size not the length written)",
			    h.size);
		return;
	}
	/* The receive it is for: the pending one of its tag and number. */
	struct req *best = NULL;
	int bs = -1;
	for (int i = 0; i < MRCN_MAX_REQS && !best; i++) {
		struct req *r = &c->reqs[i];
		for (int j = 0; r->used && j < r->n; j++)
			if (r->sub[j].pending && r->sub[j].tag == h.tag && r->sub[j].tseq == h.tseq) {
				best = r;
				bs = j;
				break;
			}
	}
	if (!best) {
		/* kept for a later irecv: not for a receive already served,
		 * not a second message of the same number */
		const uint32_t *n = mrcn_tag_count(c, h.tag, 0);
		if (n && h.tseq < *n) {
			mrcn_refuse(c, "message number of a receive already served", h.tseq);
			return;
		}
		for (uint32_t q = c->eg_freed; q != c->eg_rcvd; q++) {
			uint32_t j = q % c->eg_slots;
			if (c->eg[j].state == 1 && c->eg[j].tag == h.tag && c->eg[j].tseq == h.tseq) {
				mrcn_refuse(c, "a second message of the same tag and number", h.tseq);
				return;
			}
		}
	}
	c->eg_rcvd++;
	if (!c->eg_ctag_set) {          /* the comm's tag: its first message's */
		c->eg_ctag = h.tag;
		c->eg_ctag_set = 1;
	}
	c->eg[k].tag = h.tag;
	c->eg[k].size = h.size;
	c->eg[k].tseq = h.tseq;
	c->eg[k].state = 1;
	if (best)
		mrcn_eg_deliver(c, k, best, bs);
	else
		c->st.unexpected++;
}

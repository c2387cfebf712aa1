/* libnccl-net-mrc.so, the receiving side of eager messages (docs/nccl.md,
 * "Eager messages"): a message in the comm's eager ring checked, matched
 * to its irecv by tag in order, copied out, its slot freed in ring order
 * (credits), and each CTS paired with its eager send. */
#include <errno.h>
#include <string.h>

#include <mrc/mrc.h>

#include "common/trace.h"
#include "nccl/plugin.h"

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

/* An eager message landed: checked against our own ring (never the
 * peer's header alone), then given to the oldest receive of its tag
 * still waiting, or kept until irecv asks for it. */
void mrcn_eg_arrived(struct comm *c, const struct mrc_completion *e)
{
	uint32_t k = e->imm & ~MRCN_IMM_EAGER;
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
	if (e->byte_len < sizeof(h) || e->byte_len > c->eg_stride)
		{
		mrcn_refuse(c, "length beyond the slot", e->byte_len);
		return;
	}
	memcpy(&h, c->base + c->eg_off + k * c->eg_stride, sizeof(h));
	if (h.magic != MRCN_EG_HDR_MAGIC || h.seq != c->eg_rcvd ||
	    (uint64_t)h.size + sizeof(h) != e->byte_len)
		{
		mrcn_refuse(c, "bad header (magic, sequence, or size not the length written)",
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
		mrcn_eg_deliver(c, k, best, bs);
	else
		c->st.unexpected++;
}

/* A CTS (or void CTS) of tag t pairs with the oldest eager send of that
 * tag still unpaired: that send was its receive's message. */
int mrcn_eg_pair(struct comm *c, int32_t tag)
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

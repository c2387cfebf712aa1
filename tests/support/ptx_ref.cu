// The PTX check's reference producer (tests/test_gpu_ptx.c): the ring
// ABI's CUDA recipe (mrc/ring.h) written out by hand, independent of
// mrc/gpu.h, so the checker is shown to accept nvcc's code for a correct
// producer and to reject it with MRC_PTX_BROKEN (every system fence
// dropped), whatever state the real producer is in.
#include <stdint.h>

#include "mrc/ring.h"

#ifdef MRC_PTX_BROKEN
#define FENCE() do { } while (0)
#else
#define FENCE() __threadfence_system()
#endif

struct ref_chan {
	struct mrc_ring_hdr *sqh, *cqh;
	struct mrc_sqe *sq;
	struct mrc_cqe *cq;
	struct mrc_notify *notify;
	uint32_t slot, sq_mask, cq_mask;
	uint64_t head, tail;
};

__global__ void ref_post(struct ref_chan *c, struct mrc_sqe s)
{
	uint64_t i = c->head;
	while (i - *(volatile uint64_t *)&c->sqh->tail > c->sq_mask)
		;
	volatile struct mrc_sqe *d = &c->sq[i & c->sq_mask];
	d->op = s.op;
	d->flags = s.flags;
	d->wr_id = s.wr_id;
	d->lkey = s.lkey;
	d->rkey = s.rkey;
	d->loff = s.loff;
	d->len = s.len;
	d->roff = s.roff;
	d->add = s.add;
	d->imm = s.imm;
	FENCE();
	d->seq = (uint32_t)(i + 1);
	c->head = i + 1;
	FENCE();
	if (*(volatile uint32_t *)&c->sqh->sleeping) {
		((volatile uint8_t *)c->notify->pending)[c->slot] = 1;
		FENCE();
		*(volatile uint32_t *)&c->notify->summary = 1;
	}
}

__global__ void ref_poll(struct ref_chan *c, int *out)
{
	volatile struct mrc_cqe *e = &c->cq[c->tail & c->cq_mask];
	if (e->seq != (uint32_t)(c->tail + 1)) {
		*out = 0;
		return;
	}
	FENCE();
	int st = e->status;
	c->tail++;
	FENCE();
	*(volatile uint64_t *)&c->cqh->tail = c->tail;
	*out = st ? st : 1;
}

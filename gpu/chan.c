/* libmrc-gpu: a producer channel (mrc/gpu.h) on a QP's rings as libmrc
 * mapped them.  The rings' headers are checked here once, so that the
 * inline producer can trust its masks and pointers. */
#include <errno.h>
#include <string.h>

#include "mrc/gpu.h"
#include "mrc/mrc.h"

#define MRC__API __attribute__((visibility("default")))

static int ring_ok(const struct mrc_ring_hdr *h, uint32_t kind, uint32_t dsz)
{
	return h && h->magic == MRC_RING_MAGIC && h->version == MRC_RING_VERSION &&
	       h->kind == kind && h->desc_size == dsz && h->entries >= MRC_RING_MIN_ENTRIES &&
	       h->entries <= MRC_RING_MAX_ENTRIES && !(h->entries & (h->entries - 1)) &&
	       h->desc_off >= sizeof(*h);
}

MRC__API int mrc_gpu_chan_init(struct mrc_qp *qp, uint32_t sem_rkey, uint64_t sem_roff,
			       struct mrc_gpu_chan *out)
{
	struct mrc_qp_rings r;
	if (!qp || !out)
		return -EINVAL;
	int rc = mrc_qp_rings(qp, &r);
	if (rc < 0)
		return rc;
	if (!ring_ok(r.sq, MRC_RING_SQ, sizeof(struct mrc_sqe)) ||
	    !ring_ok(r.cq, MRC_RING_CQ, sizeof(struct mrc_cqe)))
		return -EPROTO;
	/* A kernel cannot ring an eventfd: only a polled SQ (MRC_QP_POLLED)
	 * is ever picked up without a doorbell. */
	if (!(r.sq->flags & MRC_RING_F_POLLED))
		return -EINVAL;
	/* Until the daemon hands out notify pages (ring ABI v2 parking) a
	 * polled SQ is polled always and notify stays NULL: the producer
	 * then skips the wake. */
	if (r.notify && (r.notify->magic != MRC_NOTIFY_MAGIC || r.sq->notify_slot >= r.notify->slots))
		return -EPROTO;
	memset(out, 0, sizeof(*out));
	out->sqh = r.sq;
	out->sq = (struct mrc_sqe *)((char *)r.sq + r.sq->desc_off);
	out->cqh = r.cq;
	out->cq = (struct mrc_cqe *)((char *)r.cq + r.cq->desc_off);
	out->notify = r.notify;
	out->notify_slot = r.notify ? r.sq->notify_slot : 0;
	out->sq_mask = r.sq->entries - 1;
	out->cq_mask = r.cq->entries - 1;
	out->qpn = r.sq->qpn;
	/* The QP must be idle (nothing posted through libmrc outstanding):
	 * the daemon's SQ tail is then the next index to write, and the CQ's
	 * tail (the consumer's, ours) the next completion.  Both start at
	 * hdr.base on a new QP. */
	out->sq_head = __atomic_load_n(&r.sq->tail, __ATOMIC_ACQUIRE);
	out->sq_limit = out->sq_head + r.sq->entries;
	out->cq_tail = __atomic_load_n(&r.cq->tail, __ATOMIC_ACQUIRE);
	out->sem_rkey = sem_rkey;
	out->sem_roff = sem_roff;
	return 0;
}

/* mrcd: client QPs and their shared-memory rings (mrc/ring.h).
 *
 * Everything in ring memory is the client's to scribble on: each
 * descriptor is copied once into private memory and validated there,
 * indices and sizes come from this side's copies, and a refused
 * descriptor becomes an error completion in posting order. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

#include "common/trace.h"
#include "daemon/clients/clients.h"
#include "daemon/core/mrcd.h"

struct mrcd_pend {
	uint8_t local;             /* 1: cqe is a refusal; 0: engine work */
	struct mrc_cqe cqe;
};

static uint64_t page_up(uint64_t n)
{
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);
	return (n + pg - 1) & ~(pg - 1);
}

/* ---- completions ------------------------------------------------------ */

/* Writes one completion into the CQ; -ENOSPC when the client has not
 * freed a slot.  Indices wrap (ring.h): only the unsigned distance
 * counts, and a tail beyond our head (garbage) is a huge distance, so it
 * reads as full. */
static int cq_put(struct mrcd_cqp *q, const struct mrc_cqe *c)
{
	uint64_t tail = mrc_ring_tail_load(q->cqh);
	if (q->cq_head - tail > q->cq_mask)
		return -ENOSPC;
	struct mrc_cqe *s = &q->cq[q->cq_head & q->cq_mask];
	memcpy((char *)s + sizeof(s->seq), (const char *)c + sizeof(c->seq),
	       sizeof(*s) - sizeof(s->seq));
	mrc_ring_seq_publish(&s->seq, q->cq_head);
	q->cq_head++;
	q->cqh->head = q->cq_head;
	return 0;
}

static void emit(struct mrcd_cqp *q, const struct mrc_cqe *c)
{
	if (q->bl_n == 0 && cq_put(q, c) == 0) {
		if (mrc_ring_need_wake(q->cqh))
			mrcd__cq_bell(q->c);
		return;
	}
	uint32_t cap = q->cq_mask + 1;
	if (q->bl_n == cap) {
		/* The client neither polls nor stops the peer: mark the loss in
		 * the ring and stop consuming its SQ (docs/client.md). */
		q->overflowed++;
		if (!q->broken) {
			mrcd_log(MRCD_LOG_WARNING, "client %u qp %u: completion ring overflow",
				 q->c->id, q->qpn);
			__atomic_or_fetch(&q->cqh->status, MRC_RING_S_OVERFLOW, __ATOMIC_RELEASE);
			q->broken = 1;
			if (mrc_ring_need_wake(q->cqh))
				mrcd__cq_bell(q->c);
		}
		return;
	}
	q->bl[(q->bl_head + q->bl_n++) & q->cq_mask] = *c;
	if (!ev_is_active(&q->c->retry))
		ev_timer_start(mrcd_loop(q->c->d), &q->c->retry);
}

uint32_t mrcd_cqp_flush(struct mrcd_cqp *q)
{
	int put = 0;
	while (q->bl_n && cq_put(q, &q->bl[q->bl_head & q->cq_mask]) == 0) {
		q->bl_head++;
		q->bl_n--;
		put++;
	}
	if (put && mrc_ring_need_wake(q->cqh))
		mrcd__cq_bell(q->c);
	return q->bl_n;
}

/* FIFO of one queue (sends or receives) in posting order. */
static void fifo_push(struct mrcd_cqp *q, struct mrcd_pend *f, uint32_t head, uint32_t *n,
		      const struct mrcd_pend *p)
{
	f[(head + (*n)++) & q->cq_mask] = *p;
}

/* An engine completion arrived for the queue: the head marker is its
 * work request; then every refusal queued behind it is due. */
static void fifo_complete(struct mrcd_cqp *q, struct mrcd_pend *f, uint32_t *head, uint32_t *n,
			  const struct mrc_cqe *c)
{
	if (*n && !f[*head & q->cq_mask].local) {
		(*head)++;
		(*n)--;
	}
	emit(q, c);
	while (*n && f[*head & q->cq_mask].local) {
		emit(q, &f[*head & q->cq_mask].cqe);
		(*head)++;
		(*n)--;
	}
}

/* A refusal of the descriptor at sq_tail (submit's only): its slot is
 * freed before its completion is written, so a client that sees the
 * completion finds room for the next post (as with engine completions,
 * which come long after the tail moved). */
static void refuse(struct mrcd_cqp *q, const struct mrc_sqe *s, int err)
{
	mrc_ring_tail_store(q->sqh, q->sq_tail + 1);
	struct mrcd_pend p = { .local = 1, .cqe = {
		.status = err, .wr_id = s->wr_id, .qpn = q->qpn, .op = mrc__sqe_cqe_op(s->op) } };
	q->refused++;
	if (s->op == MRC_SQE_RECV) {
		if (q->rf_n == 0)
			emit(q, &p.cqe);
		else
			fifo_push(q, q->rf, q->rf_head, &q->rf_n, &p);
	} else {
		if (q->sf_n == 0)
			emit(q, &p.cqe);
		else
			fifo_push(q, q->sf, q->sf_head, &q->sf_n, &p);
	}
}

static void on_wc(void *ctx, const struct mrce_wc *wc)
{
	struct mrcd_cqp *q = ctx;
	struct mrc_cqe c = {
		.status = wc->status, .wr_id = wc->wr_id, .byte_len = (uint32_t)wc->byte_len,
		.imm = wc->imm, .qpn = q->qpn, .op = wc->op,   /* ring op values (engine.h) */
		.flags = wc->has_imm ? MRC_CQE_F_IMM : 0,
	};
	MRC_TRACE(MRC_TR_D_WC, q->qpn, wc->wr_id, wc->op);
	switch (wc->op) {
	case MRCE_WC_RECV_WRITE_IMM:
		emit(q, &c);
		break;
	case MRCE_WC_RECV:
		fifo_complete(q, q->rf, &q->rf_head, &q->rf_n, &c);
		break;
	default:
		/* Lowered before the completion is visible: a client that
		 * sees its last CQE (hold 0) sees the word down. */
		mrcd__floor_done(q);
		fifo_complete(q, q->sf, &q->sf_head, &q->sf_n, &c);
		break;
	}
	/* Room in the engine or the CQ budget again: poll the SQ. */
	q->blocked = 0;
	mrcd_cqp_activate(q);
	mrcd_kick(q->c->d);
}

/* ---- submissions ------------------------------------------------------ */

/* 0: consumed (posted or refused); -ENOSPC: the engine is full, retry. */
static int submit(struct mrcd_cqp *q, const struct mrc_sqe *s)
{
	struct mrce *e = mrcd_engine(q->c->d);
	int r = mrc__sqe_check(s, mrcd_client_mr, q->c, NULL);
	if (r) {
		refuse(q, s, r);
		return 0;
	}
	struct mrcd_pend mark = { .local = 0 };
	if (s->op == MRC_SQE_RECV) {
		r = mrce_qp_post_recv(e, q->qpn, s->wr_id, s->lkey, s->loff, s->len);
		if (r == 0)
			fifo_push(q, q->rf, q->rf_head, &q->rf_n, &mark);
	} else {
		/* The validated private copy is the engine's work request. */
		r = mrce_qp_post(e, mrcd_now(), q->qpn, s);
		if (r == 0) {
			fifo_push(q, q->sf, q->sf_head, &q->sf_n, &mark);
			mrcd__floor_send(q);
		}
	}
	if (r == -ENOSPC)
		return r;
	if (r)
		refuse(q, s, r);
	return 0;
}

static uint32_t outstanding(const struct mrcd_cqp *q)
{
	return q->sf_n + q->rf_n + q->bl_n;
}

int mrcd_cqp_poll(struct mrcd_cqp *q, int budget)
{
	int n = 0;
	mrcd_ring_stats(q->c->d)->ring_polls++;
	uint32_t cq_cap = q->cq_mask + 1;
	while (n < budget && !q->blocked && !q->broken && outstanding(q) < cq_cap) {
		struct mrc_sqe *slot = &q->sq[q->sq_tail & q->sq_mask];
		if (mrc_ring_seq_load(&slot->seq) != (uint32_t)(q->sq_tail + 1))
			break;
		struct mrc_sqe s;
		memcpy(&s, slot, sizeof(s));   /* after the acquire: one private copy */
		MRC_TRACE(MRC_TR_D_PICK, q->qpn, s.wr_id, s.op);
		if (submit(q, &s) == -ENOSPC) {
			q->blocked = 1;
			break;
		}
		q->sq_tail++;
		n++;
	}
	if (n) {
		mrc_ring_tail_store(q->sqh, q->sq_tail);
		if (q->flags & MRC_CLI_QP_POLLED)
			q->last_work_ns = mrcd_now();
	}
	return n;
}

int mrcd_cqp_ready(const struct mrcd_cqp *q)
{
	return !q->blocked && !q->broken && outstanding(q) < q->cq_mask + 1 &&
	       mrc_ring_seq_load(&q->sq[q->sq_tail & q->sq_mask].seq) == (uint32_t)(q->sq_tail + 1);
}

/* ---- the active list, doorbells and parking ---------------------------- */

void mrcd_cqp_activate(struct mrcd_cqp *q)
{
	if (q->active)
		return;
	struct mrcd_client *c = q->c;
	q->active = 1;
	q->act_prev = NULL;
	q->act_next = c->act;
	if (c->act)
		c->act->act_prev = q;
	c->act = q;
}

void mrcd_cqp_deactivate(struct mrcd_cqp *q)
{
	if (!q->active)
		return;
	if (q->act_prev)
		q->act_prev->act_next = q->act_next;
	else
		q->c->act = q->act_next;
	if (q->act_next)
		q->act_next->act_prev = q->act_prev;
	q->active = 0;
	q->act_next = q->act_prev = NULL;
}

int mrcd_cqp_arm(struct mrcd_cqp *q, uint64_t now)
{
	if (q->blocked || q->broken || outstanding(q) >= q->cq_mask + 1)
		return 0;          /* a completion (on_wc) or the retry timer resumes */
	const uint32_t *seq = &q->sq[q->sq_tail & q->sq_mask].seq;
	if (!(q->flags & MRC_CLI_QP_POLLED)) {
		/* Armed: the client sets its pending byte and rings the
		 * client's one SQ doorbell when it finds sleeping = 1. */
		if (mrc_ring_prepare_sleep(q->sqh, seq, q->sq_tail))
			return 1;
		q->parked = 1;
		MRC_TRACE(MRC_TR_D_ARM, q->qpn, q->sq_tail, 0);
		return 0;
	}
	/* A polled ring (its producer cannot write an eventfd) stays busy
	 * while work flows; idle for park_ns it parks by the doorbell's
	 * Dekker pattern: sleeping = 1, full fence, re-check the next slot
	 * (ring.h "Polled rings").  From then on only its client's notify
	 * summary is read, not the ring. */
	if (now - q->last_work_ns < q->c->park_ns)
		return 1;
	if (mrc_ring_prepare_sleep(q->sqh, seq, q->sq_tail)) {
		q->last_work_ns = now;
		return 1;
	}
	struct mrcd_ring_stats *st = mrcd_ring_stats(q->c->d);
	q->parked = 1;
	st->parks++;
	st->polled_parked++;
	return 0;
}

int mrcd_cqp_unpark(struct mrcd_cqp *q, uint64_t now)
{
	if (!q->parked)
		return 0;
	q->parked = 0;
	if (q->flags & MRC_CLI_QP_POLLED)
		mrcd_ring_stats(q->c->d)->polled_parked--;
	mrc_ring_wake_done(q->sqh);
	q->last_work_ns = now;
	mrcd_cqp_activate(q);
	return 1;
}

/* ---- create / destroy -------------------------------------------------- */

static int pow2_ok(uint32_t n, uint32_t max)
{
	return n >= MRC_RING_MIN_ENTRIES && n <= max && !(n & (n - 1));
}

/* The QP's two rings in one sealed memfd (the client maps the same
 * pages), laid out with their headers; *sq_bytes: where the CQ starts. */
static int rings_map(struct mrcd_cqp *q, const struct mrc_cli_create_qp *req,
		     uint32_t notify_slot, int *memfd, uint64_t *sq_bytes, const char **why)
{
	uint32_t ncq = req->cq_entries;
	*sq_bytes = mrc_ring_bytes(req->sq_entries, sizeof(struct mrc_sqe));
	uint64_t cq_bytes = mrc_ring_bytes(ncq, sizeof(struct mrc_cqe));
	q->map_len = page_up(*sq_bytes + cq_bytes);
	*memfd = memfd_create("mrcd-rings", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (*memfd < 0 || ftruncate(*memfd, (off_t)q->map_len) < 0 ||
	    fcntl(*memfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
		*why = "ring memory";
		return -errno;
	}
	int polled = !!(req->flags & MRC_CLI_QP_POLLED);
	q->map = mmap(NULL, q->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, *memfd, 0);
	if (q->map == MAP_FAILED) {
		*why = "ring memory";
		return -errno;
	}
	uint32_t rflags = polled ? MRC_RING_F_POLLED : 0;
	uint64_t base = req->index_base;
	q->notify_slot = notify_slot;
	q->sqh = q->map;
	q->cqh = (struct mrc_ring_hdr *)((char *)q->map + *sq_bytes);
	mrc_ring_layout(q->sqh, MRC_RING_SQ, req->sq_entries, sizeof(struct mrc_sqe), rflags, q->qpn,
		  base, q->notify_slot);
	mrc_ring_layout(q->cqh, MRC_RING_CQ, ncq, sizeof(struct mrc_cqe), 0, q->qpn, base, 0);
	q->sq = (struct mrc_sqe *)(q->sqh + 1);
	q->cq = (struct mrc_cqe *)(q->cqh + 1);
	q->sq_mask = req->sq_entries - 1;
	q->cq_mask = ncq - 1;
	q->sq_tail = q->cq_head = base;
	return 0;
}

int mrcd_cqp_create(struct mrcd_client *c, const struct mrc_cli_create_qp *req,
		    uint32_t notify_slot, struct mrcd_cqp **out, int *memfd,
		    struct mrc_cli_create_qp_rep *rep, const char **why)
{
	struct mrcd *d = c->d;
	uint32_t max = c->max_ring < MRC_RING_MAX_ENTRIES ? c->max_ring : MRC_RING_MAX_ENTRIES;
	if (req->sq_entries > max || req->cq_entries > max) {
		*why = "ring entries above the limit (config ring_entries)";
		return -EDQUOT;
	}
	if (!pow2_ok(req->sq_entries, max) || !pow2_ok(req->cq_entries, max)) {
		*why = "ring entries must be a power of two, at least 8";
		return -EINVAL;
	}
	struct mrcd_cqp *q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->c = c;
	q->flags = req->flags;
	*memfd = -1;
	q->map = MAP_FAILED;
	uint32_t ncq = req->cq_entries;
	q->sf = calloc(ncq, sizeof(*q->sf));
	q->rf = calloc(ncq, sizeof(*q->rf));
	q->bl = calloc(ncq, sizeof(*q->bl));
	int r = -ENOMEM;
	if (!q->sf || !q->rf || !q->bl)
		goto fail;
	struct mrce_qp_attr attr = { .pd = c->id, .plane_mask = req->plane_mask,
		.tclass = req->flags & MRC_CLI_QP_URGENT ? MRCE_TC_URGENT :
			  req->flags & MRC_CLI_QP_BULK ? MRCE_TC_BULK : MRCE_TC_DEFAULT };
	if (req->flags & MRC_CLI_QP_PIN_EV) {
		attr.flags = MRCE_QP_PIN_EV;
		attr.pin_ev = req->pin_ev;
	}
	r = mrce_qp_open(mrcd_engine(d), &attr, &q->qpn);
	if (r) {
		*why = "the engine refused the QP (daemon-wide QP limit?)";
		free(q->sf), free(q->rf), free(q->bl), free(q);
		return r;
	}
	if (getrandom(&q->psn, sizeof(q->psn), 0) != sizeof(q->psn))
		q->psn = (uint32_t)mrcd_now();
	uint64_t sq_bytes;
	if ((r = rings_map(q, req, notify_slot, memfd, &sq_bytes, why)))
		goto fail;
	r = mrcd_qp_bind(d, q->qpn, on_wc, q);
	if (r) {
		*why = "QP number already bound";
		goto fail;
	}
	/* Polled until its first arm: the doorbell is not armed yet
	 * (sleeping = 0), and a polled ring starts busy. */
	q->last_work_ns = mrcd_now();
	mrcd_cqp_activate(q);
	mrcd_kick(d);
	*rep = (struct mrc_cli_create_qp_rep){ .qpn = q->qpn, .map_len = q->map_len,
		.sq_off = 0, .cq_off = sq_bytes };
	*out = q;
	return 0;
fail:
	mrce_qp_close(mrcd_engine(d), q->qpn);
	if (q->map != MAP_FAILED)
		munmap(q->map, q->map_len);
	if (*memfd >= 0)
		close(*memfd);
	*memfd = -1;
	free(q->sf), free(q->rf), free(q->bl), free(q);
	return r;
}

void mrcd_cqp_destroy(struct mrcd_cqp *q)
{
	struct mrcd *d = q->c->d;
	mrcd_qp_unbind(d, q->qpn);
	/* Outstanding work is dropped without completions: the client is
	 * going away or asked for it. */
	int r = mrce_qp_close(mrcd_engine(d), q->qpn);
	mrcd_node_clear_aead(d, q->qpn);   /* its AEAD keys go with it */
	if (r)
		mrcd_log(MRCD_LOG_WARNING, "client %u: destroy qp %u: %s", q->c->id, q->qpn,
			 strerror(-r));
	mrcd_cqp_deactivate(q);
	mrcd__floor_forget(q);
	if (q->parked && (q->flags & MRC_CLI_QP_POLLED))
		mrcd_ring_stats(d)->polled_parked--;
	munmap(q->map, q->map_len);
	free(q->sf), free(q->rf), free(q->bl), free(q);
}

/* libmrc: the data path: producing submission descriptors, consuming
 * completions, and the doorbells (mrc/ring.h). */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/trace.h"
#include "lib/internal.h"

static void ring_doorbell(int efd)
{
	uint64_t one = 1;
	/* EAGAIN means the counter is already non-zero: the daemon wakes. */
	while (write(efd, &one, sizeof(one)) < 0 && errno == EINTR)
		;
}

/* The QP's pending byte, a full fence, the client's summary: plain
 * stores, as a GPU producer does them; the daemon clears both. */
static void notify_set(struct mrc_qp *qp)
{
	__atomic_store_n(&qp->notify->pending[qp->notify_slot], 1, __ATOMIC_RELAXED);
	atomic_thread_fence(memory_order_seq_cst);
	__atomic_store_n(&qp->notify->summary, 1, __ATOMIC_RELAXED);
}

/* Producer side of a parked polled ring (mrc/ring.h "Polled rings"):
 * after the seq store, a full fence, then the sleeping load; if set, the
 * pending byte and summary.  No bell: a GPU producer cannot write one,
 * the daemon's timer reads the summary. */
static void notify_wake(struct mrc_qp *qp)
{
	struct mrc_ring_hdr *h = qp->sq.hdr;
	atomic_thread_fence(memory_order_seq_cst);
	if (!atomic_load_explicit(MRC__A32(&h->sleeping), memory_order_relaxed))
		return;
	notify_set(qp);
}

MRC__API int mrc_post_sqe(struct mrc_qp *qp, const struct mrc_sqe *sqe)
{
	struct mrc_ring *r = &qp->sq;
	uint64_t n = (uint64_t)r->mask + 1;
	pthread_mutex_lock(&qp->sq_lock);
	/* Indices wrap (ring.h): room is by unsigned difference only. */
	if (r->idx - r->tail >= n) {
		/* The daemon may have consumed more since we last looked.  A
		 * tail outside [cached tail, idx] is no daemon's: ignore it. */
		uint64_t tail = mrc_ring_tail_load(r->hdr);
		if (tail - r->tail <= r->idx - r->tail)
			r->tail = tail;
		if (r->idx - r->tail >= n) {
			pthread_mutex_unlock(&qp->sq_lock);
			return __atomic_load_n(&qp->ctx->dead, __ATOMIC_RELAXED) ? -EPIPE : -ENOSPC;
		}
	}
	struct mrc_sqe *s = (struct mrc_sqe *)r->desc + (r->idx & r->mask);
	/* Everything but seq, then seq with release: the daemon reads the slot
	 * only after it sees seq == idx + 1. */
	memcpy((char *)s + sizeof(s->seq), (const char *)sqe + sizeof(sqe->seq),
	       sizeof(*s) - sizeof(s->seq));
	mrc_ring_seq_publish(&s->seq, r->idx);
	r->idx++;
	r->hdr->head = r->idx;
	int wake = 0;
	if (qp->polled) {
		notify_wake(qp);
	} else if (mrc_ring_need_wake(r->hdr)) {
		/* Armed: say which QP, then ring the client's one bell. */
		notify_set(qp);
		wake = 1;
	}
	pthread_mutex_unlock(&qp->sq_lock);
	MRC_TRACE(MRC_TR_C_POST, qp->qpn, sqe->wr_id, sqe->op);
	if (wake) {
		ring_doorbell(qp->ctx->sq_bell);
		MRC_TRACE(MRC_TR_C_SQBELL, qp->qpn, sqe->wr_id, 0);
	}
	return 0;
}

static int post(struct mrc_qp *qp, uint8_t op, uint64_t wr_id, uint32_t lkey, uint64_t loff,
		uint64_t len, uint32_t rkey, uint64_t roff, uint32_t imm, uint64_t add)
{
	struct mrc_sqe s = { .op = op, .wr_id = wr_id, .lkey = lkey, .loff = loff, .len = len,
			     .rkey = rkey, .roff = roff, .imm = imm, .add = add };
	return mrc_post_sqe(qp, &s);
}

MRC__API int mrc_post_write(struct mrc_qp *qp, uint64_t wr_id, uint32_t lkey, uint64_t loff,
			    uint64_t len, uint32_t rkey, uint64_t roff)
{
	return post(qp, MRC_SQE_WRITE, wr_id, lkey, loff, len, rkey, roff, 0, 0);
}

MRC__API int mrc_post_write_imm(struct mrc_qp *qp, uint64_t wr_id, uint32_t lkey,
				uint64_t loff, uint64_t len, uint32_t rkey, uint64_t roff,
				uint32_t imm)
{
	return post(qp, MRC_SQE_WRITE_IMM, wr_id, lkey, loff, len, rkey, roff, imm, 0);
}

MRC__API int mrc_post_send(struct mrc_qp *qp, uint64_t wr_id, uint32_t lkey, uint64_t loff,
			   uint64_t len)
{
	return post(qp, MRC_SQE_SEND, wr_id, lkey, loff, len, 0, 0, 0, 0);
}

MRC__API int mrc_post_send_imm(struct mrc_qp *qp, uint64_t wr_id, uint32_t lkey,
			       uint64_t loff, uint64_t len, uint32_t imm)
{
	return post(qp, MRC_SQE_SEND_IMM, wr_id, lkey, loff, len, 0, 0, imm, 0);
}

MRC__API int mrc_post_recv(struct mrc_qp *qp, uint64_t wr_id, uint32_t lkey, uint64_t loff,
			   uint64_t len)
{
	return post(qp, MRC_SQE_RECV, wr_id, lkey, loff, len, 0, 0, 0, 0);
}

MRC__API int mrc_post_atomic_add(struct mrc_qp *qp, uint64_t wr_id, uint32_t rkey,
				 uint64_t roff, uint64_t add)
{
	return post(qp, MRC_SQE_ATOMIC_ADD, wr_id, 0, 0, 0, rkey, roff, 0, add);
}

/* ---- completions ---------------------------------------------------- */

static int cq_ready(struct mrc_ring *r)
{
	const struct mrc_cqe *c = (const struct mrc_cqe *)r->desc + (r->idx & r->mask);
	return mrc_ring_seq_load(&c->seq) == (uint32_t)(r->idx + 1);
}

MRC__API int mrc_poll_cq(struct mrc_qp *qp, struct mrc_completion *out, int max)
{
	struct mrc_ring *r = &qp->cq;
	int n = 0;
	pthread_mutex_lock(&qp->cq_lock);
	while (n < max && cq_ready(r)) {
		const struct mrc_cqe *c = (const struct mrc_cqe *)r->desc + (r->idx & r->mask);
		out[n++] = (struct mrc_completion){
			.wr_id = c->wr_id, .status = c->status, .byte_len = c->byte_len,
			.imm = c->imm, .qpn = c->qpn, .op = c->op, .flags = c->flags,
		};
		r->idx++;
	}
	if (n)
		mrc_ring_tail_store(r->hdr, r->idx);
	if (__builtin_expect(mrc__trace_on, 0))
		for (int i = 0; i < n; i++)
			mrc__trace_rec(MRC_TR_C_CQE, qp->qpn, out[i].wr_id, out[i].op);
	int lost = n == 0 && (__atomic_load_n(&r->hdr->status, __ATOMIC_ACQUIRE) & MRC_RING_S_OVERFLOW);
	pthread_mutex_unlock(&qp->cq_lock);
	if (n)
		return n;
	if (lost)
		return -EOVERFLOW;
	return __atomic_load_n(&qp->ctx->dead, __ATOMIC_RELAXED) ? -EPIPE : 0;
}


static int cq_arm(struct mrc_qp *qp)
{
	struct mrc_ring *r = &qp->cq;
	pthread_mutex_lock(&qp->cq_lock);
	const struct mrc_cqe *c = (const struct mrc_cqe *)r->desc + (r->idx & r->mask);
	int ready = mrc_ring_prepare_sleep(r->hdr, &c->seq, r->idx);
	pthread_mutex_unlock(&qp->cq_lock);
	return ready;
}

static int cq_disarm(struct mrc_qp *qp, int err)
{
	mrc_ring_wake_done(qp->cq.hdr);
	pthread_mutex_lock(&qp->cq_lock);
	int ok = cq_ready(&qp->cq);
	pthread_mutex_unlock(&qp->cq_lock);
	return ok ? 0 : err;
}

/* The leader sleeps on the context's CQ bell (and on the control socket,
 * which hangs up when the daemon dies: never hang on a bell nobody will
 * ring).  1: the daemon died. */
static int lead(struct mrc_ctx *ctx, int64_t left)
{
	struct pollfd p[2] = {
		{ .fd = ctx->cq_bell, .events = POLLIN },
		{ .fd = ctx->sock, .events = POLLRDHUP },
	};
	int n = poll(p, 2, left < 0 ? -1 : left > INT32_MAX ? INT32_MAX : (int)left);
	if (n > 0 && (p[0].revents & POLLIN)) {
		uint64_t v;
		if (read(ctx->cq_bell, &v, sizeof(v)) < 0 && errno != EAGAIN)
			return -errno;
	}
	if (n > 0 && (p[1].revents & (POLLHUP | POLLRDHUP | POLLERR))) {
		__atomic_store_n(&ctx->dead, 1, __ATOMIC_RELAXED);
		return 1;
	}
	return n < 0 && errno != EINTR ? -errno : 0;
}

/* MRC_WAIT_SPIN_US: a completion due within that long is taken without
 * the sleep and the daemon's bell write (a wake-up costs 10-30 us on a
 * shared core); 1 when it came. */
static int spin(struct mrc_qp *qp, int64_t ns)
{
	int64_t end = (int64_t)mrc__mono_ns() + ns;
	do {
		pthread_mutex_lock(&qp->cq_lock);
		int ok = cq_ready(&qp->cq);
		pthread_mutex_unlock(&qp->cq_lock);
		if (ok)
			return 1;
#if defined(__x86_64__) || defined(__i386__)
		__builtin_ia32_pause();
#endif
	} while ((int64_t)mrc__mono_ns() < end && !__atomic_load_n(&qp->ctx->dead, __ATOMIC_RELAXED));
	return 0;
}

/* Every QP of a context shares one CQ bell, so waiters take turns: one
 * leads (sleeps on the bell), the others wait on the condition variable
 * and are woken, all of them, whenever the leader returns; each then
 * re-checks its own CQ.  A ring for any QP reaches its waiter: the leader
 * reads it and wakes everyone, or, with no leader, it stays in the
 * eventfd for the next one. */
MRC__API int mrc_wait(struct mrc_qp *qp, int timeout_ms)
{
	struct mrc_ctx *ctx = qp->ctx;
	int64_t deadline = timeout_ms >= 0 ? mrc__mono_ms() + timeout_ms : INT64_MAX;
	if (ctx->wait_spin_ns && timeout_ms != 0 &&
	    spin(qp, timeout_ms < 0 || (int64_t)timeout_ms * 1000000 > ctx->wait_spin_ns ?
		 ctx->wait_spin_ns : (int64_t)timeout_ms * 1000000))
		return 0;
	for (;;) {
		if (cq_arm(qp))
			return 0;
		if (__atomic_load_n(&ctx->dead, __ATOMIC_RELAXED))
			return cq_disarm(qp, -ECONNRESET);
		int64_t left = deadline == INT64_MAX ? -1 : deadline - mrc__mono_ms();
		if (deadline != INT64_MAX && left <= 0)
			return cq_disarm(qp, -ETIMEDOUT);
		pthread_mutex_lock(&ctx->wlock);
		if (!ctx->wleader) {
			ctx->wleader = 1;
			pthread_mutex_unlock(&ctx->wlock);
			int r = lead(ctx, left);
			MRC_TRACE(MRC_TR_C_WAKE, qp->qpn, 0, 0);
			pthread_mutex_lock(&ctx->wlock);
			ctx->wleader = 0;
			ctx->wgen++;
			pthread_cond_broadcast(&ctx->wcond);
			pthread_mutex_unlock(&ctx->wlock);
			if (r < 0)
				return r;
		} else {
			uint64_t gen = ctx->wgen;
			struct timespec ts;
			clock_gettime(CLOCK_MONOTONIC, &ts);
			if (left >= 0) {
				ts.tv_sec += left / 1000;
				ts.tv_nsec += (left % 1000) * 1000000;
				if (ts.tv_nsec >= 1000000000) {
					ts.tv_sec++;
					ts.tv_nsec -= 1000000000;
				}
			}
			while (ctx->wleader && ctx->wgen == gen) {
				if (left < 0)
					pthread_cond_wait(&ctx->wcond, &ctx->wlock);
				else if (pthread_cond_timedwait(&ctx->wcond, &ctx->wlock, &ts) == ETIMEDOUT)
					break;
			}
			pthread_mutex_unlock(&ctx->wlock);
		}
	}
}

/* Arms only: the bell is the context's, so reading it here could swallow
 * a ring meant for another armed QP; mrc_ctx_drain reads it. */
MRC__API int mrc_arm_cq(struct mrc_qp *qp)
{
	if (cq_arm(qp))
		return 1;
	return __atomic_load_n(&qp->ctx->dead, __ATOMIC_RELAXED) ? -ECONNRESET : 0;
}

MRC__API int mrc_ctx_drain(struct mrc_ctx *ctx)
{
	uint64_t v;
	if (read(ctx->cq_bell, &v, sizeof(v)) < 0 && errno != EAGAIN)
		return -errno;
	return 0;
}

MRC__API const char *mrc_cqe_op_name(uint8_t op)
{
	static const char *const names[] = {
		[MRC_CQE_WRITE] = "WRITE", [MRC_CQE_WRITE_IMM] = "WRITE_IMM",
		[MRC_CQE_SEND] = "SEND", [MRC_CQE_SEND_IMM] = "SEND_IMM",
		[MRC_CQE_ATOMIC_ADD] = "ATOMIC_ADD", [MRC_CQE_RECV] = "RECV",
		[MRC_CQE_RECV_WRITE_IMM] = "RECV_WRITE_IMM",
	};
	return op < sizeof(names) / sizeof(names[0]) && names[op] ? names[op] : "?";
}

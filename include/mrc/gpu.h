/* mrc/gpu.h: posting to mrcd from a GPU kernel (or a host thread) through
 * a QP's rings, and the one-sided primitives collective and MoE kernels
 * build on (put, signal, put_with_signal, wait, flush).
 *
 * The same inline source serves CUDA device code (__host__ __device__
 * under nvcc) and host threads (plain C11), so the protocol is tested
 * where there is no GPU.  One channel has one producer: one thread, or
 * one lane of a warp, calls these functions.
 */
#ifndef MRC_GPU_H
#define MRC_GPU_H

#include <errno.h>
#include <sched.h>     /* host threads: sched_yield, clock_gettime */
#include <stdint.h>
#include <time.h>

#include "mrc/ring.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __CUDACC__
#define MRC_GPU_FN static __host__ __device__ inline
#else
#define MRC_GPU_FN static inline
#endif

/* A channel: one QP's rings as its producer sees them (host pointers from
 * mrc_gpu_chan_init, or device pointers from mrc_gpu_chan_to_device), the
 * producer's private indices, and the remote semaphore that signal
 * increments.  Plain data: copy it to the device (kernel argument or
 * device memory); one copy per producer, never shared between two. */
struct mrc_gpu_chan {
	struct mrc_ring_hdr *sqh;
	struct mrc_sqe *sq;
	struct mrc_ring_hdr *cqh;
	struct mrc_cqe *cq;
	struct mrc_notify *notify;   /* the client's notify page (polled QP) */
	uint32_t notify_slot;
	uint32_t sq_mask, cq_mask;
	uint32_t qpn;
	uint64_t sq_head;            /* next SQ index to write */
	uint64_t sq_limit;           /* cached SQ tail + entries */
	uint64_t cq_tail;            /* next CQ index to read */
	uint64_t posted;             /* send-side work requests posted */
	uint64_t completed;          /* ... and completed */
	int32_t error;               /* first error completion (sticky), 0 */
	uint32_t sem_rkey;           /* remote semaphore (u64) for signal */
	uint64_t sem_roff;
	const volatile uint32_t *abort; /* non-zero: the daemon is gone */
	uint64_t timeout_ns;         /* bound on any spin; 0: none */
};

/* ---- memory ordering: the only place that knows the target -----------
 * Every access to a word the other side (mrcd, or the daemon's CQ writes)
 * reads or writes concurrently goes through these.  Device: PTX at system
 * scope (the ring is host memory mapped over PCIe); st.release.sys orders
 * every earlier store of the thread (the descriptor fields) before the
 * publication, which is what ring.h's "__threadfence_system(); volatile
 * store" recipe achieves in two instructions.  Host: GCC __atomic builtins
 * with the same orders (C and C++, seen by ThreadSanitizer), or
 * cuda::atomic_ref when C++ code defines MRC_GPU_CCCL (the CCCL headers
 * under CUDA's include/cccl).  Descriptor fields themselves are plain
 * stores: only the publication and the words read back need ordering. */
#if defined(__CUDA_ARCH__)
#define MRC__GPU_PRIM static __device__ __forceinline__
/* MRC_GPU_PTX_BROKEN: the deliberately wrong build of gpu/ptx_probe.cu
 * (releases relaxed, fences gone) that tests/test_gpu_ptx.c must reject.
 * Never define it otherwise. */
#ifdef MRC_GPU_PTX_BROKEN
#define MRC__PTX_REL "relaxed"
#define MRC__PTX_FENCE ""
#else
#define MRC__PTX_REL "release"
#define MRC__PTX_FENCE "fence.sc.sys;"
#endif
MRC__GPU_PRIM uint32_t mrc__ld_acq32(const uint32_t *p)
{
	uint32_t v;
	asm volatile("ld.acquire.sys.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
	return v;
}
MRC__GPU_PRIM uint32_t mrc__ld_rlx32(const uint32_t *p)
{
	uint32_t v;
	asm volatile("ld.relaxed.sys.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
	return v;
}
MRC__GPU_PRIM uint64_t mrc__ld_acq64(const uint64_t *p)
{
	uint64_t v;
	asm volatile("ld.acquire.sys.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
	return v;
}
MRC__GPU_PRIM void mrc__st_rel32(uint32_t *p, uint32_t v)
{
	asm volatile("st." MRC__PTX_REL ".sys.u32 [%0], %1;" : : "l"(p), "r"(v) : "memory");
}
MRC__GPU_PRIM void mrc__st_rlx32(uint32_t *p, uint32_t v)
{
	asm volatile("st.relaxed.sys.u32 [%0], %1;" : : "l"(p), "r"(v) : "memory");
}
MRC__GPU_PRIM void mrc__st_rlx8(uint8_t *p, uint8_t v)
{
	asm volatile("st.relaxed.sys.u8 [%0], %1;" : : "l"(p), "h"((uint16_t)v) : "memory");
}
MRC__GPU_PRIM void mrc__st_rel64(uint64_t *p, uint64_t v)
{
	asm volatile("st." MRC__PTX_REL ".sys.u64 [%0], %1;" : : "l"(p), "l"(v) : "memory");
}
MRC__GPU_PRIM void mrc__st_rlx64(uint64_t *p, uint64_t v)
{
	asm volatile("st.relaxed.sys.u64 [%0], %1;" : : "l"(p), "l"(v) : "memory");
}
MRC__GPU_PRIM void mrc__fence_sc(void)
{
	asm volatile(MRC__PTX_FENCE : : : "memory");
}
MRC__GPU_PRIM uint64_t mrc__now_ns(void)
{
	uint64_t t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}
MRC__GPU_PRIM void mrc__relax(void)
{
#if __CUDA_ARCH__ >= 700
	__nanosleep(32);
#endif
}

#elif defined(__cplusplus) && defined(MRC_GPU_CCCL)
} /* extern "C" */
#include <cuda/atomic>
extern "C" {
#define MRC__GPU_PRIM static inline
#define MRC__AREF(T, p) cuda::atomic_ref<T, cuda::thread_scope_system>(*const_cast<T *>(p))
MRC__GPU_PRIM uint32_t mrc__ld_acq32(const uint32_t *p) { return MRC__AREF(uint32_t, p).load(cuda::memory_order_acquire); }
MRC__GPU_PRIM uint32_t mrc__ld_rlx32(const uint32_t *p) { return MRC__AREF(uint32_t, p).load(cuda::memory_order_relaxed); }
MRC__GPU_PRIM uint64_t mrc__ld_acq64(const uint64_t *p) { return MRC__AREF(uint64_t, p).load(cuda::memory_order_acquire); }
MRC__GPU_PRIM void mrc__st_rel32(uint32_t *p, uint32_t v) { MRC__AREF(uint32_t, p).store(v, cuda::memory_order_release); }
MRC__GPU_PRIM void mrc__st_rlx32(uint32_t *p, uint32_t v) { MRC__AREF(uint32_t, p).store(v, cuda::memory_order_relaxed); }
/* cuda::atomic_ref needs 4-byte objects at least: the pending byte is a
 * builtin atomic (the fences around it do the ordering). */
MRC__GPU_PRIM void mrc__st_rlx8(uint8_t *p, uint8_t v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }
MRC__GPU_PRIM void mrc__st_rel64(uint64_t *p, uint64_t v) { MRC__AREF(uint64_t, p).store(v, cuda::memory_order_release); }
MRC__GPU_PRIM void mrc__st_rlx64(uint64_t *p, uint64_t v) { MRC__AREF(uint64_t, p).store(v, cuda::memory_order_relaxed); }
MRC__GPU_PRIM void mrc__fence_sc(void) { cuda::atomic_thread_fence(cuda::memory_order_seq_cst, cuda::thread_scope_system); }
#undef MRC__AREF

#else
#define MRC__GPU_PRIM static inline
MRC__GPU_PRIM uint32_t mrc__ld_acq32(const uint32_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
MRC__GPU_PRIM uint32_t mrc__ld_rlx32(const uint32_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
MRC__GPU_PRIM uint64_t mrc__ld_acq64(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
MRC__GPU_PRIM void mrc__st_rel32(uint32_t *p, uint32_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
MRC__GPU_PRIM void mrc__st_rlx32(uint32_t *p, uint32_t v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }
MRC__GPU_PRIM void mrc__st_rlx8(uint8_t *p, uint8_t v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }
MRC__GPU_PRIM void mrc__st_rel64(uint64_t *p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
MRC__GPU_PRIM void mrc__st_rlx64(uint64_t *p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }
MRC__GPU_PRIM void mrc__fence_sc(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
#endif

#if !defined(__CUDA_ARCH__)
MRC__GPU_PRIM uint64_t mrc__now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
MRC__GPU_PRIM void mrc__relax(void)
{
	sched_yield();
}
#endif

/* The abort word: written by the watchdog (host), read here. */
MRC__GPU_PRIM uint32_t mrc__ld_abort(const volatile uint32_t *p)
{
	return mrc__ld_rlx32((const uint32_t *)(uintptr_t)p);
}

/* ---- spinning ---------------------------------------------------------- */
/* Every wait loop of the producer goes through one of these: the abort
 * word (the daemon is gone: -EPIPE, sticky) and the channel's timeout
 * (-ETIMEDOUT, not sticky: the caller may retry). */
struct mrc__gpu_spin {
	uint64_t start;
	uint32_t n;
};

MRC_GPU_FN int mrc__gpu_spin(const struct mrc_gpu_chan *ch, struct mrc__gpu_spin *sp)
{
	if (ch->abort && mrc__ld_abort(ch->abort))
		return -EPIPE;
	/* The clock every 64 turns (not per load).  mrc__relax offers a
	 * host thread's CPU back every turn: a spinning producer must not
	 * starve mrcd on a machine with few cores (sched_yield returns at
	 * once where a core is free). */
	if ((sp->n++ & 63) == 0 && ch->timeout_ns) {
		uint64_t now = mrc__now_ns();
		if (!sp->start)
			sp->start = now;
		else if (now - sp->start >= ch->timeout_ns)
			return -ETIMEDOUT;
	}
	mrc__relax();
	return 0;
}

/* ---- device/host producer (inline, mrc/ring.h rules) ------------------ */
/* Each returns 0 (or a count) or a negative errno: -EPIPE once *abort is
 * set (sticky), -ETIMEDOUT after timeout_ns of spinning, or the channel's
 * sticky error (the first error completion's status).  Posting spins,
 * consuming completions, while the SQ is full or as many send-side work
 * requests are outstanding as the CQ has entries (so the CQ can never
 * overflow).  Indices are compared by unsigned difference only: they may
 * start anywhere (hdr.base) and wrap past 2^64. */

/* Takes the completion at cq_tail if it is published (1) or not (0),
 * copying it to *out when out is not NULL; counts it (a send-side one in
 * ch->completed) and makes an error status the sticky error.  The CQ's
 * tail is not stored: the callers below do that once per batch. */
MRC_GPU_FN int mrc__gpu_cq_take(struct mrc_gpu_chan *ch, struct mrc_cqe *out)
{
	struct mrc_cqe *c = &ch->cq[ch->cq_tail & ch->cq_mask];
	if (mrc__ld_acq32(&c->seq) != (uint32_t)(ch->cq_tail + 1))
		return 0;
	int32_t st = c->status;
	uint8_t op = c->op;
	if (out) {
		out->seq = c->seq;
		out->status = st;
		out->wr_id = c->wr_id;
		out->byte_len = c->byte_len;
		out->imm = c->imm;
		out->qpn = c->qpn;
		out->op = op;
		out->flags = c->flags;
		out->rsvd = 0;
	}
	if (op != MRC_CQE_RECV_WRITE_IMM && op != MRC_CQE_RECV)
		ch->completed++;
	if (st < 0 && !ch->error)
		ch->error = st;
	ch->cq_tail++;
	return 1;
}

/* The abort word, made sticky in the channel. */
MRC_GPU_FN int mrc__gpu_aborted(struct mrc_gpu_chan *ch)
{
	if (ch->abort && mrc__ld_abort(ch->abort) && !ch->error)
		ch->error = -EPIPE;
	return ch->error == -EPIPE;
}

/* Consumes every published completion, in index order, without waiting:
 * returns how many, or the sticky error.  A send-side completion counts
 * in ch->completed; an error status becomes the sticky error.  Receive
 * completions (RECV_WRITE_IMM from a peer's put_imm, RECV) are consumed
 * and dropped: a channel's producer uses semaphores, not receives. */
MRC_GPU_FN int mrc_gpu_poll(struct mrc_gpu_chan *ch)
{
	mrc__gpu_aborted(ch);
	int n = 0;
	while (mrc__gpu_cq_take(ch, 0))
		n++;
	if (n)  /* release: our reads of the slots happen before their reuse */
		mrc__st_rel64(&ch->cqh->tail, ch->cq_tail);
	return ch->error ? ch->error : n;
}

/* One completion, copied to *out (its status included, even when it
 * becomes the sticky error): 1, 0 when none is published, -EPIPE once
 * the daemon is gone.  For producers that check wr_ids themselves. */
MRC_GPU_FN int mrc_gpu_poll_one(struct mrc_gpu_chan *ch, struct mrc_cqe *out)
{
	if (mrc__gpu_aborted(ch))
		return -EPIPE;
	if (!mrc__gpu_cq_take(ch, out))
		return 0;
	mrc__st_rel64(&ch->cqh->tail, ch->cq_tail);
	return 1;
}

/* Waits for a free SQ slot and returns its index (in *idx); 0 or < 0.
 * Split from mrc_gpu_post so that a producer may fill the slot itself
 * (tests write the fields in a random order to show the publication
 * protects them).  The caller fills every field but seq, then calls
 * mrc_gpu_sq_publish with the same index. */
MRC_GPU_FN int mrc_gpu_sq_reserve(struct mrc_gpu_chan *ch, struct mrc_sqe **slot, uint64_t *idx)
{
	struct mrc__gpu_spin sp = { 0, 0 };
	uint64_t cq_room = (uint64_t)ch->cq_mask + 1;
	for (;;) {
		if (ch->error)
			return ch->error;
		/* Room is sq_limit - sq_head, in [1, entries] when usable (the
		 * unsigned test maps 0 and anything above entries, e.g. from a
		 * tail claiming more room than the ring has, out of range);
		 * the tail is loaded again only when the cached room is not. */
		if (ch->sq_limit - ch->sq_head - 1 > (uint64_t)ch->sq_mask)
			ch->sq_limit = mrc__ld_acq64(&ch->sqh->tail) + ch->sq_mask + 1;
		if (ch->sq_limit - ch->sq_head - 1 <= (uint64_t)ch->sq_mask &&
		    ch->posted - ch->completed < cq_room)
			break;
		int rc = mrc_gpu_poll(ch);
		if (rc < 0)
			return rc;
		if (rc == 0 && (rc = mrc__gpu_spin(ch, &sp)) < 0) {
			if (rc == -EPIPE)
				ch->error = rc;
			return rc;
		}
	}
	*idx = ch->sq_head;
	*slot = &ch->sq[ch->sq_head & ch->sq_mask];
	return 0;
}

/* Publishes the slot reserved at idx (release store of its seq), and
 * wakes a parked polled ring through the notify page (ring.h, "Polled
 * rings": seq; full fence; load sleeping; if 1: pending byte, full fence,
 * summary).  Without a notify page the daemon polls the ring always. */
MRC_GPU_FN void mrc_gpu_sq_publish(struct mrc_gpu_chan *ch, struct mrc_sqe *slot, uint64_t idx)
{
	mrc__st_rel32(&slot->seq, (uint32_t)(idx + 1));
	ch->sq_head = idx + 1;
	ch->posted++;
	mrc__st_rlx64(&ch->sqh->head, ch->sq_head);  /* advisory (ring.h) */
	if (ch->notify) {
		mrc__fence_sc();
		if (mrc__ld_rlx32(&ch->sqh->sleeping)) {
			mrc__st_rlx8(&ch->notify->pending[ch->notify_slot], 1);
			mrc__fence_sc();
			mrc__st_rlx32(&ch->notify->summary, 1);
		}
	}
}

/* Copies a descriptor into a reserved slot: every field but seq, unused
 * ones as given (the caller zeroes them), reserved ones zero. */
MRC_GPU_FN void mrc_gpu_sqe_fill(struct mrc_sqe *d, const struct mrc_sqe *s)
{
	d->op = s->op;
	d->flags = s->flags;
	d->rsvd0 = 0;
	d->wr_id = s->wr_id;
	d->lkey = s->lkey;
	d->rkey = s->rkey;
	d->loff = s->loff;
	d->len = s->len;
	d->roff = s->roff;
	d->add = s->add;
	d->imm = s->imm;
	d->rsvd1 = 0;
}

/* Posts one descriptor (s->seq is ignored). */
MRC_GPU_FN int mrc_gpu_post(struct mrc_gpu_chan *ch, const struct mrc_sqe *s)
{
	struct mrc_sqe *slot = 0;
	uint64_t idx = 0;
	int rc = mrc_gpu_sq_reserve(ch, &slot, &idx);
	if (rc < 0)
		return rc;
	mrc_gpu_sqe_fill(slot, s);
	mrc_gpu_sq_publish(ch, slot, idx);
	return 0;
}

/* The descriptor of a one-sided op; wr_id is the SQ index it goes to. */
MRC_GPU_FN struct mrc_sqe mrc__gpu_sqe(const struct mrc_gpu_chan *ch, uint8_t op, uint32_t rkey,
				       uint64_t roff, uint32_t lkey, uint64_t loff, uint64_t bytes)
{
	struct mrc_sqe s;
	s.seq = 0;
	s.op = op;
	s.flags = 0;
	s.rsvd0 = 0;
	s.wr_id = ch->sq_head;
	s.lkey = lkey;
	s.rkey = rkey;
	s.loff = loff;
	s.len = bytes;
	s.roff = roff;
	s.add = 0;
	s.imm = 0;
	s.rsvd1 = 0;
	return s;
}

/* WRITE bytes from (lkey, loff) to the peer's (rkey, roff). */
MRC_GPU_FN int mrc_gpu_put(struct mrc_gpu_chan *ch, uint32_t rkey, uint64_t roff, uint32_t lkey,
			   uint64_t loff, uint64_t bytes)
{
	struct mrc_sqe s = mrc__gpu_sqe(ch, MRC_SQE_WRITE, rkey, roff, lkey, loff, bytes);
	return mrc_gpu_post(ch, &s);
}

/* WRITE_IMM: the peer's CQ gets RECV_WRITE_IMM with imm once the data
 * (and every earlier put) is placed. */
MRC_GPU_FN int mrc_gpu_put_imm(struct mrc_gpu_chan *ch, uint32_t rkey, uint64_t roff,
			       uint32_t lkey, uint64_t loff, uint64_t bytes, uint32_t imm)
{
	struct mrc_sqe s = mrc__gpu_sqe(ch, MRC_SQE_WRITE_IMM, rkey, roff, lkey, loff, bytes);
	s.imm = imm;
	return mrc_gpu_post(ch, &s);
}

/* Remote u64 at (rkey, roff) += add. */
MRC_GPU_FN int mrc_gpu_atomic_add(struct mrc_gpu_chan *ch, uint32_t rkey, uint64_t roff,
				  uint64_t add)
{
	struct mrc_sqe s = mrc__gpu_sqe(ch, MRC_SQE_ATOMIC_ADD, rkey, roff, 0, 0, 0);
	s.add = add;
	return mrc_gpu_post(ch, &s);
}

/* The peer's semaphore += 1, visible only after every earlier put of the
 * channel: an ATOMIC_ADD takes effect once every earlier packet of the QP
 * is placed (docs/client.md "Ordering", transport/receiver.c), so no
 * MRC_SQE_F_FENCE (which would cost a round trip per signal) is needed. */
MRC_GPU_FN int mrc_gpu_signal(struct mrc_gpu_chan *ch)
{
	if (!ch->sem_rkey && !ch->sem_roff)
		return -EINVAL;
	return mrc_gpu_atomic_add(ch, ch->sem_rkey, ch->sem_roff, 1);
}

MRC_GPU_FN int mrc_gpu_put_with_signal(struct mrc_gpu_chan *ch, uint32_t rkey, uint64_t roff,
				       uint32_t lkey, uint64_t loff, uint64_t bytes)
{
	if (!ch->sem_rkey && !ch->sem_roff)
		return -EINVAL;
	int rc = mrc_gpu_put(ch, rkey, roff, lkey, loff, bytes);
	return rc < 0 ? rc : mrc_gpu_signal(ch);
}

/* Spins until the local semaphore *sem (u64 in memory the daemon writes:
 * a registered region, GPU-visible) reaches expected (compared by
 * difference, so it may wrap); acquire: what the peer put before its
 * signal is visible after this returns. */
MRC_GPU_FN int mrc_gpu_wait(const struct mrc_gpu_chan *ch, const uint64_t *sem, uint64_t expected)
{
	struct mrc__gpu_spin sp = { 0, 0 };
	while ((int64_t)(mrc__ld_acq64(sem) - expected) < 0) {
		int rc = mrc__gpu_spin(ch, &sp);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Spins, consuming completions, until every posted send-side work request
 * has completed: every earlier put's source may be reused.  Returns the
 * sticky error if one completed with an error. */
MRC_GPU_FN int mrc_gpu_flush(struct mrc_gpu_chan *ch)
{
	struct mrc__gpu_spin sp = { 0, 0 };
	for (;;) {
		int rc = mrc_gpu_poll(ch);
		if (rc < 0)
			return rc;
		if (ch->completed == ch->posted)
			return 0;
		if (rc == 0 && (rc = mrc__gpu_spin(ch, &sp)) < 0) {
			if (rc == -EPIPE)
				ch->error = rc;
			return rc;
		}
	}
}

/* ---- host side (libmrc-gpu, gpu/) -------------------------------------- */
/* Declared in nvcc's device pass too: .cu host code calls them. */
struct mrc_qp;
struct mrc_ctx;
struct mrc_gpu_watch;

/* Host-pointer channel on a QP created with MRC_QP_POLLED and connected;
 * sem_rkey/sem_roff: the peer's semaphore that mrc_gpu_signal increments
 * (0/0: signal returns -EINVAL). */
int mrc_gpu_chan_init(struct mrc_qp *qp, uint32_t sem_rkey, uint64_t sem_roff,
		      struct mrc_gpu_chan *out);
/* A watchdog thread per context: sets its abort word when the daemon's
 * socket hangs up; mrc_gpu_watch_attach points a channel at it. */
int mrc_gpu_watch_start(struct mrc_ctx *ctx, struct mrc_gpu_watch **out);
void mrc_gpu_watch_attach(struct mrc_gpu_watch *w, struct mrc_gpu_chan *ch);
void mrc_gpu_watch_stop(struct mrc_gpu_watch *w);

/* CUDA (built when CUDA is present; -ENOSYS otherwise): the device view
 * of a host channel (its ring mapping, notify page and abort word
 * registered with cudaHostRegister(..., cudaHostRegisterMapped)). */
int mrc_gpu_chan_to_device(const struct mrc_gpu_chan *host, struct mrc_gpu_chan *dev);
void mrc_gpu_chan_release(const struct mrc_gpu_chan *host);

/* ---- GPU memory as transfer source and target (gpu/gpumem.c) ----------
 * mrc_gpu_reg_mr(3), docs/gpu.md "GPU memory".  On the UDP datapath mrcd
 * cannot reach device memory: a device region is shadowed by a pinned
 * libmrc region of the same length (its key is the shadow's), and the
 * copies run in this process, which owns the CUDA context.  -ENOSYS when
 * built without CUDA, -ENODEV when there is no GPU. */
struct mrc_mr;
struct mrc_gpu_mr;
int mrc_gpu_reg_mr(struct mrc_ctx *ctx, void *devptr, uint64_t len, uint32_t access,
		   struct mrc_gpu_mr **out);
int mrc_gpu_dereg_mr(struct mrc_gpu_mr *g);
/* The host shadow: mrc_mr_key() is the rkey peers write to (landed data
 * stays there until mrc_gpu_mr_to_device) and the lkey of host posts. */
struct mrc_mr *mrc_gpu_mr_host(const struct mrc_gpu_mr *g);
/* Bytes per staging copy and per WRITE (default 1 MiB, at most 1 GiB). */
int mrc_gpu_mr_set_chunk(struct mrc_gpu_mr *g, uint64_t bytes);
/* Device [loff, loff+len) to the peer's (rkey, roff): copied to the
 * shadow chunk by chunk on the region's stream, each chunk's WRITE posted
 * as soon as its copy is done while the next chunks copy.  Blocks until
 * every WRITE completed (0), the first error completion's status, or
 * -ETIMEDOUT after timeout_ms (< 0: none).  The QP must have no other
 * work outstanding meanwhile; the device data must be ready (the kernel
 * that wrote it has completed: the copies run on a stream of their own). */
int mrc_gpu_write(struct mrc_qp *qp, struct mrc_gpu_mr *src, uint64_t loff, uint64_t len,
		  uint32_t rkey, uint64_t roff, int timeout_ms);
/* Synchronous copies between the shadow and the device: to_device after
 * a peer's data landed (e.g. on its WRITE_IMM completion), from_device
 * before a host post reads the shadow itself. */
int mrc_gpu_mr_to_device(struct mrc_gpu_mr *g, uint64_t off, uint64_t len);
int mrc_gpu_mr_from_device(struct mrc_gpu_mr *g, uint64_t off, uint64_t len);

#ifdef __cplusplus
}
#endif
#endif

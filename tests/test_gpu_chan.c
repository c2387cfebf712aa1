/* mrc/gpu.h's producer on host threads against a real mrcd (loopback):
 * producer threads x polled QPs with every completion and every landed
 * byte checked, torn descriptor writes, indices near 2^32 and 2^64, a
 * full ring's back-pressure and timeout, put/signal/wait ordering, and a
 * daemon killed under posting producers (-EPIPE in bounded time, memory
 * outside what was written intact).  Built a second time with
 * ThreadSanitizer (make check-san).  Skipped when mrcd is not built.
 *
 * MRC_SEED repeats a run; MRC_GPU_POSTS overrides the total posts of the
 * threads test (default 1000000, 100000 under a sanitizer). */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "tests/support/mrcd_spawn.h"
#include "tests/support/skip.h"

#include "common/prng.h"
#include "mrc/gpu.h"
#include "mrc/mrc.h"

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define DEFAULT_POSTS 100000u
#else
#define DEFAULT_POSTS 1000000u
#endif

#define WAIT_MS MRCD_SPAWN_WAIT_MS
#define SLOT 256u                   /* bytes per destination slot */
#define MAXLEN (SLOT - 8)           /* the last 8 bytes of a slot stay canary */
#define K 64u                       /* slots per QP window = batch size */
#define WIN (K * SLOT)
#define GAP 4096u                   /* canary between windows */
#define CANARY 0xa5u
#define SEM_OFF 0u                  /* semaphores: first page of dst */
#define WIN_OFF(q) (4096u + (uint64_t)(q) * (WIN + GAP))

static uint64_t seed;

static int setup(void **state)
{
	if (!mrcd_spawn_available()) {
		*state = NULL;
		return 0;
	}
	struct mrcd_proc *d = calloc(1, sizeof(*d));
	const char *argv[] = { "--max_clients=64", NULL };
	if (mrcd_spawn_start(d, argv)) {
		free(d);
		return -1;
	}
	*state = d;
	return 0;
}

static int teardown(void **state)
{
	if (*state) {
		mrcd_spawn_stop(*state);
		free(*state);
	}
	return 0;
}

#define NEED_DAEMON(state) \
	do { if (!*(state)) MRC_SKIP("%s is not built", mrcd_spawn_bin()); } while (0)

/* ---- fixture: one context, a source and a target region, QPs ---------- */
struct fx {
	struct mrc_ctx *ctx;
	struct mrc_mr *src, *dst;
	uint8_t *s, *t;
	uint32_t lk, rk;
	uint64_t len;
};

struct qpc {
	struct mrc_qp *a, *b;      /* a: polled, the channel's; b: its peer */
	struct mrc_gpu_chan ch;
	uint32_t id;               /* window number */
	uint64_t off;              /* WIN_OFF(id) */
	uint64_t n;                /* posts made */
};

static void fx_open(struct fx *f, const struct mrcd_proc *d, uint32_t nwin)
{
	memset(f, 0, sizeof(*f));
	f->len = WIN_OFF(nwin);
	assert_int_equal(mrc_open(d->sock, &f->ctx), 0);
	assert_int_equal(mrc_alloc_mr(f->ctx, f->len, MRC_MR_LOCAL_READ, &f->src), 0);
	assert_int_equal(mrc_alloc_mr(f->ctx, f->len, MRC_MR_ALL, &f->dst), 0);
	f->s = mrc_mr_addr(f->src);
	f->t = mrc_mr_addr(f->dst);
	f->lk = mrc_mr_key(f->src);
	f->rk = mrc_mr_key(f->dst);
	memset(f->s, CANARY, f->len);
	memset(f->t, CANARY, f->len);
	memset(f->t + SEM_OFF, 0, 4096);
}

/* A polled QP a connected to a fresh peer b; the channel on a signals
 * the u64 semaphore number id in dst's first page.  -EINVAL from the
 * daemon or libmrc for an index_base it does not know is returned. */
static int qp_open(struct fx *f, struct qpc *q, uint32_t id, uint32_t sq, uint32_t cq,
		   uint64_t base)
{
	memset(q, 0, sizeof(*q));
	q->id = id;
	q->off = WIN_OFF(id);
	struct mrc_qp_cfg cfg = { .sq_entries = sq, .cq_entries = cq, .flags = MRC_QP_POLLED,
				  .index_base = base };
	int rc = mrc_create_qp(f->ctx, &cfg, &q->a);
	if (rc < 0)
		return rc;
	assert_int_equal(mrc_create_qp(f->ctx, NULL, &q->b), 0);
	struct mrc_qp_addr la, lb;
	assert_int_equal(mrc_qp_info_get(q->a, &la), 0);
	assert_int_equal(mrc_qp_info_get(q->b, &lb), 0);
	assert_int_equal(mrc_connect_oob(q->a, &lb), 0);
	assert_int_equal(mrc_connect_oob(q->b, &la), 0);
	assert_int_equal(mrc_gpu_chan_init(q->a, f->rk, SEM_OFF + 8u * id, &q->ch), 0);
	q->ch.timeout_ns = (uint64_t)WAIT_MS * 1000000u;
	return 0;
}

static void qp_close(struct qpc *q)
{
	mrc_destroy_qp(q->a);
	mrc_destroy_qp(q->b);
}

/* ---- payloads: a function of (seed, window, post number) -------------- */
static uint64_t mix(uint64_t x)
{
	return mrc_splitmix64(&x);
}

static uint32_t plen(uint32_t id, uint64_t i)
{
	return 1 + (uint32_t)(mix(seed ^ ((uint64_t)id << 48) ^ i) % MAXLEN);
}

static void pfill(uint8_t *p, uint32_t id, uint64_t i, uint32_t len)
{
	uint64_t x = seed ^ ((uint64_t)id << 40) ^ (i << 1) ^ 1;
	for (uint32_t k = 0; k < len; k += 8) {
		uint64_t w = mix(x + k);
		memcpy(p + k, &w, len - k < 8 ? len - k : 8);
	}
}

static int pcheck(const uint8_t *p, uint32_t id, uint64_t i, uint32_t len)
{
	uint8_t want[SLOT];
	pfill(want, id, i, len);
	return memcmp(p, want, len) == 0;
}

/* The source of post i of window q, ready to put (slot i % K). */
static uint32_t stage(struct fx *f, struct qpc *q, uint64_t i, uint64_t *off)
{
	uint32_t len = plen(q->id, i);
	*off = q->off + (i % K) * SLOT;
	pfill(f->s + *off, q->id, i, len);
	return len;
}

/* ---- the torn producer (test only) ------------------------------------ */
/* Reserves a slot, writes the descriptor's fields in a random order, some
 * first to a poison value, with random delays between them, and only then
 * publishes.  A daemon that acted on a half-written slot would complete
 * it with a wrong wr_id or length, an error, or misplaced data.  *caught
 * counts the slots the daemon was provably polling while they were torn:
 * its tail had reached the slot (it had consumed every earlier one, so
 * its next look is at this slot's seq) before the last field was
 * written. */
struct torn {
	struct mrc_rng r;
	uint64_t caught;
};

static void tdelay(struct torn *t)
{
	uint64_t ns = mrc_rng_next(&t->r) % 3000, t0 = mrc__now_ns();
	if (ns < 300)
		sched_yield();
	while (mrc__now_ns() - t0 < ns)
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

static int torn_post(struct qpc *q, const struct mrc_sqe *s, struct torn *t)
{
	struct mrc_sqe *d = NULL;
	uint64_t idx = 0;
	int rc = mrc_gpu_sq_reserve(&q->ch, &d, &idx);
	if (rc < 0)
		return rc;
	int order[11], seen = 0;
	for (int k = 0; k < 11; k++)
		order[k] = k;
	for (int k = 10; k > 0; k--) {
		int j = (int)(mrc_rng_next(&t->r) % (uint64_t)(k + 1)), x = order[k];
		order[k] = order[j];
		order[j] = x;
	}
	volatile struct mrc_sqe *v = d;
	for (int k = 0; k < 11; k++) {
		int poison = mrc_rng_next(&t->r) & 1;
		switch (order[k]) {
		case 0: if (poison) v->op = 0xff; tdelay(t); v->op = s->op; break;
		case 1: if (poison) v->flags = 0x80; tdelay(t); v->flags = s->flags; break;
		case 2: v->rsvd0 = 0; v->rsvd1 = 0; break;
		case 3: if (poison) v->wr_id = ~s->wr_id; tdelay(t); v->wr_id = s->wr_id; break;
		case 4: if (poison) v->lkey = ~s->lkey; tdelay(t); v->lkey = s->lkey; break;
		case 5: if (poison) v->rkey = ~s->rkey; tdelay(t); v->rkey = s->rkey; break;
		case 6: if (poison) v->loff = ~0ull; tdelay(t); v->loff = s->loff; break;
		case 7: if (poison) v->len = ~0ull; tdelay(t); v->len = s->len; break;
		case 8: if (poison) v->roff = ~0ull; tdelay(t); v->roff = s->roff; break;
		case 9: v->add = s->add; break;
		case 10: v->imm = s->imm; break;
		}
		tdelay(t);
		if (k < 10 && !seen)
			seen = mrc_ring_tail_load(q->ch.sqh) == idx;
	}
	t->caught += seen;
	mrc_gpu_sq_publish(&q->ch, d, idx);
	return 0;
}

/* ---- one batch: K puts on a channel, then each completion checked ------ */
/* Completions are taken one by one (mrc_gpu_poll_one) and must be the
 * batch's puts in order: status 0, wr_id = the SQ index, byte_len = the
 * put's length; then every landed byte is compared with its source. */
static void batch(struct fx *f, struct qpc *q, struct torn *t)
{
	uint64_t idx0 = q->ch.sq_head, cq0 = q->ch.cq_tail;
	uint32_t len[K];
	for (uint32_t k = 0; k < K; k++) {
		uint64_t off;
		len[k] = stage(f, q, q->n + k, &off);
		if (t) {
			struct mrc_sqe s = { .op = MRC_SQE_WRITE, .wr_id = q->ch.sq_head, .lkey = f->lk,
					     .rkey = f->rk, .loff = off, .len = len[k], .roff = off };
			assert_int_equal(torn_post(q, &s, t), 0);
		} else {
			assert_int_equal(mrc_gpu_put(&q->ch, f->rk, off, f->lk, off, len[k]), 0);
		}
	}
	/* K fits the SQ and the CQ: posting never had to consume anything. */
	assert_true(q->ch.cq_tail == cq0);
	int64_t end = mrcd_spawn_now_ms() + WAIT_MS;
	for (uint32_t k = 0; k < K;) {
		struct mrc_cqe c = { 0 };
		int rc = mrc_gpu_poll_one(&q->ch, &c);
		assert_true(rc >= 0);
		if (!rc) {
			/* 2-CPU machines: leave the daemon the core. */
			assert_true(mrcd_spawn_now_ms() < end);
			sched_yield();
			continue;
		}
		if (c.status || c.wr_id != idx0 + k || c.byte_len != len[k] || c.op != MRC_CQE_WRITE)
			fail_msg("window %u post %llu: status %d wr_id %llu (want %llu) len %u (want %u) "
				 "op %u; seed %llu", q->id, (unsigned long long)(q->n + k), c.status,
				 (unsigned long long)c.wr_id, (unsigned long long)(idx0 + k),
				 c.byte_len, len[k], c.op, (unsigned long long)seed);
		k++;
	}
	assert_true(q->ch.completed == q->ch.posted);
	for (uint32_t k = 0; k < K; k++)
		if (!pcheck(f->t + q->off + k * SLOT, q->id, q->n + k, len[k]))
			fail_msg("window %u post %llu: landed bytes differ; seed %llu", q->id,
				 (unsigned long long)(q->n + k), (unsigned long long)seed);
	q->n += K;
}

/* Bytes outside every slot's written part, and between windows, are
 * still the canary; the source region's too. */
static void canaries_intact(const struct fx *f, uint32_t nwin)
{
	for (uint32_t w = 0; w < nwin; w++) {
		uint64_t o = WIN_OFF(w);
		for (uint32_t k = 0; k < K; k++)
			for (uint32_t b = MAXLEN; b < SLOT; b++) {
				assert_int_equal(f->t[o + k * SLOT + b], CANARY);
				assert_int_equal(f->s[o + k * SLOT + b], CANARY);
			}
		for (uint64_t b = o + WIN; b < o + WIN + GAP && b < f->len; b++) {
			assert_int_equal(f->t[b], CANARY);
			assert_int_equal(f->s[b], CANARY);
		}
	}
}

/* ---- tests -------------------------------------------------------------- */

static void test_refuses_unpolled(void **state)
{
	NEED_DAEMON(state);
	struct fx f;
	fx_open(&f, *state, 1);
	struct mrc_qp *qp;
	assert_int_equal(mrc_create_qp(f.ctx, NULL, &qp), 0);
	struct mrc_gpu_chan ch;
	assert_int_equal(mrc_gpu_chan_init(qp, 0, 0, &ch), -EINVAL);
	mrc_close(f.ctx);
}

#define NT 4
#define NQ 8
struct prod {
	struct fx *f;
	struct qpc q[NQ];
	uint64_t rounds;
	struct torn *t;
};

static void *producer(void *arg)
{
	struct prod *p = arg;
	for (uint64_t r = 0; r < p->rounds; r++)
		for (int i = 0; i < NQ; i++)
			batch(p->f, &p->q[i], p->t);
	return NULL;
}

/* NT threads, each the producer of NQ polled QPs: a million puts in all
 * (MRC_GPU_POSTS), each checked. */
static void test_threads(void **state)
{
	NEED_DAEMON(state);
	uint64_t total = getenv("MRC_GPU_POSTS") ? strtoull(getenv("MRC_GPU_POSTS"), NULL, 0)
						 : DEFAULT_POSTS;
	struct fx f;
	fx_open(&f, *state, NT * NQ);
	static struct prod p[NT];
	uint64_t rounds = (total + NT * NQ * K - 1) / (NT * NQ * K);
	for (int t = 0; t < NT; t++) {
		p[t] = (struct prod){ .f = &f, .rounds = rounds };
		for (int i = 0; i < NQ; i++)
			assert_int_equal(qp_open(&f, &p[t].q[i], t * NQ + i, 64, 128, 0), 0);
	}
	int64_t t0 = mrcd_spawn_now_ms();
	pthread_t th[NT];
	for (int t = 0; t < NT; t++)
		assert_int_equal(pthread_create(&th[t], NULL, producer, &p[t]), 0);
	for (int t = 0; t < NT; t++)
		pthread_join(th[t], NULL);
	uint64_t posted = 0;
	for (int t = 0; t < NT; t++)
		for (int i = 0; i < NQ; i++) {
			assert_true(p[t].q[i].ch.error == 0);
			assert_true(p[t].q[i].ch.completed == rounds * K);
			posted += p[t].q[i].ch.posted;
			qp_close(&p[t].q[i]);
		}
	assert_true(posted >= total);
	canaries_intact(&f, NT * NQ);
	int64_t ms = mrcd_spawn_now_ms() - t0;
	print_message("%llu puts by %d threads x %d QPs in %lld ms (%.0f/s), all checked\n",
		      (unsigned long long)posted, NT, NQ, (long long)ms, posted * 1000.0 / (ms ? ms : 1));
	mrc_close(f.ctx);
}

/* Torn descriptors: 2 threads x 2 QPs, fields in random order with
 * delays and poison values before the publication. */
static void test_torn(void **state)
{
	NEED_DAEMON(state);
	struct fx f;
	fx_open(&f, *state, 4);
	static struct prod p[2];
	static struct torn t[2];
	for (int k = 0; k < 2; k++) {
		mrc_rng_seed(&t[k].r, seed + 77 + k);
		t[k].caught = 0;
		p[k] = (struct prod){ .f = &f, .rounds = 20, .t = &t[k] };
		for (int i = 0; i < 2; i++)
			assert_int_equal(qp_open(&f, &p[k].q[i], k * 2 + i, 64, 128, 0), 0);
	}
	/* 2 QPs per thread here, not NQ: run the rounds by hand, more of them
	 * (bounded) until the daemon has polled enough torn slots: how many of
	 * a round's it catches depends on the scheduler (nearly all on a quiet
	 * machine, a ninth under TSan on 2 loaded CPUs). */
	const uint64_t want = 4 * 20 * K / 8, max_rounds = 10 * p[0].rounds;
	uint64_t caught = 0, r = 0;
	for (; r < max_rounds && (r < p[0].rounds || caught < want); r++) {
		for (int k = 0; k < 2; k++)
			for (int i = 0; i < 2; i++)
				batch(&f, &p[k].q[i], &t[k]);
		caught = t[0].caught + t[1].caught;
	}
	print_message("torn: %llu of %llu slots were written while the daemon polled them\n",
		      (unsigned long long)caught, (unsigned long long)(4 * r * K));
	/* The injection happened: the daemon polled many torn slots. */
	assert_true(caught >= want);
	for (int k = 0; k < 2; k++)
		for (int i = 0; i < 2; i++)
			qp_close(&p[k].q[i]);
	canaries_intact(&f, 4);
	mrc_close(f.ctx);
}

/* Indices starting just below 2^32 and 2^64 (mrc_qp_cfg.index_base):
 * seq words wrap at 2^32, indices at 2^64. */
static void test_index_wrap(void **state)
{
	NEED_DAEMON(state);
	struct fx f;
	fx_open(&f, *state, 2);
	const uint64_t bases[2] = { (1ull << 32) - 37, 0ull - 37 };
	for (int b = 0; b < 2; b++) {
		struct qpc q;
		int rc = qp_open(&f, &q, (uint32_t)b, 8 * (b + 1), 16 * (b + 1), bases[b]);
		if (rc == 0 && q.ch.sqh->base != bases[b]) {
			qp_close(&q);
			rc = -EOPNOTSUPP;
		}
		if (rc == -EINVAL || rc == -EOPNOTSUPP) {
			mrc_close(f.ctx);
			MRC_SKIP("index_base is not implemented by this mrcd/libmrc "
				 "(ring ABI v2 index base; create_qp gave %d)", rc);
		}
		assert_int_equal(rc, 0);
		assert_true(q.ch.sq_head == bases[b] && q.ch.cq_tail == bases[b]);
		/* K puts per batch would not fit an 8-entry SQ: one by one. */
		for (int i = 0; i < 100; i++) {
			uint64_t off, idx = q.ch.sq_head;
			uint32_t len = stage(&f, &q, q.n, &off);
			assert_int_equal(mrc_gpu_put(&q.ch, f.rk, off, f.lk, off, len), 0);
			struct mrc_cqe c = { 0 };
			int64_t end = mrcd_spawn_now_ms() + WAIT_MS;
			while ((rc = mrc_gpu_poll_one(&q.ch, &c)) == 0)
				assert_true(mrcd_spawn_now_ms() < end);
			assert_int_equal(rc, 1);
			assert_int_equal(c.status, 0);
			assert_true(c.wr_id == idx);
			assert_int_equal(c.byte_len, len);
			assert_true(pcheck(f.t + off, q.id, q.n, len));
			q.n++;
		}
		assert_true(q.ch.sq_head - bases[b] == 100);
		/* The seq word wrapped (base 2^32 - 37), the index too (2^64 - 37). */
		assert_true(b ? q.ch.sq_head < bases[b] : (uint32_t)q.ch.sq_head < (uint32_t)bases[b]);
		qp_close(&q);
	}
	mrc_close(f.ctx);
}

struct bp {
	struct qpc *q;
	struct fx *f;
	uint32_t n;
	uint32_t done;             /* posts returned (read by the main thread) */
	uint32_t max_out;          /* most posted - completed seen */
	int rc;
};

static void *bp_producer(void *arg)
{
	struct bp *b = arg;
	for (uint32_t i = 0; i < b->n; i++) {
		uint64_t off = b->q->off + (i % K) * SLOT;
		uint32_t len = plen(b->q->id, i);
		/* Rewrite the source only once its previous put completed. */
		while (b->q->ch.posted - b->q->ch.completed >= K - 1)
			if ((b->rc = mrc_gpu_poll(&b->q->ch)) < 0)
				return NULL;
		pfill(b->f->s + off, b->q->id, i, len);
		if ((b->rc = mrc_gpu_put(&b->q->ch, b->f->rk, off, b->f->lk, off, len)) < 0)
			return NULL;
		uint32_t out = (uint32_t)(b->q->ch.posted - b->q->ch.completed);
		if (out > b->max_out)
			b->max_out = out;
		__atomic_store_n(&b->done, i + 1, __ATOMIC_RELEASE);
	}
	b->rc = mrc_gpu_flush(&b->q->ch);
	return NULL;
}

struct stuck { const struct bp *b; uint32_t at; };
static int bp_reached(void *arg)
{
	struct stuck *s = arg;
	return __atomic_load_n(&s->b->done, __ATOMIC_ACQUIRE) >= s->at;
}

/* An 8-entry SQ and CQ with the daemon stopped (SIGSTOP): the producer
 * fills the ring and spins (no overrun, no error); a channel with a short
 * timeout returns -ETIMEDOUT; after SIGCONT everything completes. */
static void test_full_ring(void **state)
{
	NEED_DAEMON(state);
	struct mrcd_proc own;
	const char *argv[] = { NULL };
	assert_int_equal(mrcd_spawn_start(&own, argv), 0);
	struct fx f;
	fx_open(&f, &own, 2);
	struct qpc q, q2;
	assert_int_equal(qp_open(&f, &q, 0, 8, 8, 0), 0);
	assert_int_equal(qp_open(&f, &q2, 1, 8, 8, 0), 0);

	assert_int_equal(kill(own.pid, SIGSTOP), 0);
	/* Timeout: 8 posts fit, the 9th spins 50 ms and gives up. */
	q2.ch.timeout_ns = 50 * 1000000ull;
	for (int i = 0; i < 8; i++)
		assert_int_equal(mrc_gpu_atomic_add(&q2.ch, f.rk, 2048, 1), 0);
	uint64_t t0 = mrc__now_ns();
	assert_int_equal(mrc_gpu_atomic_add(&q2.ch, f.rk, 2048, 1), -ETIMEDOUT);
	uint64_t waited = mrc__now_ns() - t0;
	assert_true(waited >= 50 * 1000000ull && waited < 5000 * 1000000ull);
	assert_true(q2.ch.error == 0 && q2.ch.posted == 8);

	struct bp b = { .q = &q, .f = &f, .n = 3000 };
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, bp_producer, &b), 0);
	struct stuck s = { &b, 8 };
	assert_int_equal(mrcd_spawn_wait_for(bp_reached, &s, WAIT_MS), 0);
	/* Stuck at a full ring: 50 ms later it still has posted exactly 8. */
	s.at = 9;
	assert_int_equal(mrcd_spawn_wait_for(bp_reached, &s, 50), -ETIMEDOUT);
	assert_int_equal(__atomic_load_n(&b.done, __ATOMIC_ACQUIRE), 8);
	assert_int_equal(kill(own.pid, SIGCONT), 0);
	pthread_join(th, NULL);
	assert_int_equal(b.rc, 0);
	assert_true(q.ch.completed == 3000 && q.ch.error == 0);
	assert_true(b.max_out == 8);   /* the CQ bound (8 entries) was reached */
	for (uint32_t i = 3000 - K + 1; i < 3000; i++)
		assert_true(pcheck(f.t + q.off + (i % K) * SLOT, q.id, i, plen(q.id, i)));
	/* The timed-out channel resumes: its 8 adds and one more land. */
	assert_int_equal(mrc_gpu_atomic_add(&q2.ch, f.rk, 2048, 1), 0);
	assert_int_equal(mrc_gpu_flush(&q2.ch), 0);
	uint64_t v;
	memcpy(&v, f.t + 2048, 8);
	assert_true(v == 9);
	qp_close(&q);
	qp_close(&q2);
	canaries_intact(&f, 2);
	mrc_close(f.ctx);
	mrcd_spawn_stop(&own);
}

/* put then signal, the peer waits: every byte of the put is visible once
 * the semaphore says so (ATOMIC_ADD after the WRITE, no fence). */
static void test_put_signal_wait(void **state)
{
	NEED_DAEMON(state);
	struct fx f;
	fx_open(&f, *state, 1);
	struct qpc q;
	assert_int_equal(qp_open(&f, &q, 0, 64, 128, 0), 0);
	const uint64_t *sem = (const uint64_t *)(void *)(f.t + SEM_OFF);
	for (uint64_t i = 0; i < 2000; i++) {
		/* The source slot is rewritten only after its put completed. */
		if (i % K == 0)
			assert_int_equal(mrc_gpu_flush(&q.ch), 0);
		uint64_t off;
		uint32_t len = stage(&f, &q, i, &off);
		if (i % 2)
			assert_int_equal(mrc_gpu_put_with_signal(&q.ch, f.rk, off, f.lk, off, len), 0);
		else {
			assert_int_equal(mrc_gpu_put(&q.ch, f.rk, off, f.lk, off, len), 0);
			assert_int_equal(mrc_gpu_signal(&q.ch), 0);
		}
		assert_int_equal(mrc_gpu_wait(&q.ch, sem, i + 1), 0);
		assert_true(pcheck(f.t + off, q.id, i, len));
	}
	assert_int_equal(mrc_gpu_flush(&q.ch), 0);
	assert_true(*sem == 2000 && q.ch.completed == 4000);
	struct mrc_gpu_chan nosem = q.ch;
	nosem.sem_rkey = 0;
	nosem.sem_roff = 0;
	assert_int_equal(mrc_gpu_signal(&nosem), -EINVAL);
	qp_close(&q);
	mrc_close(f.ctx);
}

struct victim {
	struct fx *f;
	struct qpc *q;
	int waiter;                /* waits on a semaphore nobody signals */
	uint64_t n;
	int rc;
	int64_t end_ms;
};

static void *victim_main(void *arg)
{
	struct victim *v = arg;
	if (v->waiter) {
		v->rc = mrc_gpu_wait(&v->q->ch, (const uint64_t *)(void *)(v->f->t + 3000), 1);
	} else {
		for (;;) {
			uint64_t off = v->q->off + (v->n % K) * SLOT;
			while (v->q->ch.posted - v->q->ch.completed >= K - 1)
				if ((v->rc = mrc_gpu_poll(&v->q->ch)) < 0)
					goto out;
			uint32_t len = plen(v->q->id, v->n);
			pfill(v->f->s + off, v->q->id, v->n, len);
			if ((v->rc = mrc_gpu_put(&v->q->ch, v->f->rk, off, v->f->lk, off, len)) < 0)
				break;
			__atomic_store_n(&v->n, v->n + 1, __ATOMIC_RELEASE);
		}
	}
out:
	__atomic_store_n(&v->end_ms, mrcd_spawn_now_ms(), __ATOMIC_RELEASE);
	return NULL;
}

struct all_moving { struct victim *v; int n; };
static int moving(void *arg)
{
	struct all_moving *m = arg;
	for (int i = 0; i < m->n; i++)
		if (!m->v[i].waiter && __atomic_load_n(&m->v[i].n, __ATOMIC_ACQUIRE) < 500)
			return 0;
	return 1;
}

/* SIGKILL the daemon under 4 posting producers and a waiter: each returns
 * -EPIPE (through the watchdog's abort word) within 2 s, and registered
 * memory outside the written slots is intact. */
static void test_daemon_killed(void **state)
{
	NEED_DAEMON(state);
	struct mrcd_proc own;
	const char *argv[] = { NULL };
	assert_int_equal(mrcd_spawn_start(&own, argv), 0);
	struct fx f;
	fx_open(&f, &own, 5);
	struct mrc_gpu_watch *w;
	assert_int_equal(mrc_gpu_watch_start(f.ctx, &w), 0);
	static struct qpc q[5];
	static struct victim v[5];
	pthread_t th[5];
	for (int i = 0; i < 5; i++) {
		assert_int_equal(qp_open(&f, &q[i], (uint32_t)i, 16, 32, 0), 0);
		q[i].ch.timeout_ns = 0;    /* only the abort may end the spins */
		mrc_gpu_watch_attach(w, &q[i].ch);
		v[i] = (struct victim){ .f = &f, .q = &q[i], .waiter = i == 4 };
		assert_int_equal(pthread_create(&th[i], NULL, victim_main, &v[i]), 0);
	}
	struct all_moving m = { v, 5 };
	assert_int_equal(mrcd_spawn_wait_for(moving, &m, WAIT_MS), 0);
	int64_t t0 = mrcd_spawn_now_ms();
	assert_int_equal(kill(own.pid, SIGKILL), 0);
	waitpid(own.pid, NULL, 0);
	own.pid = 0;
	for (int i = 0; i < 5; i++) {
		pthread_join(th[i], NULL);
		if (v[i].rc != -EPIPE)
			fail_msg("producer %d: %d (n %llu)", i, v[i].rc, (unsigned long long)v[i].n);
		assert_true(v[i].end_ms - t0 < 2000);
		/* Sticky for the posters (wait takes a const channel). */
		assert_true(v[i].waiter || q[i].ch.error == -EPIPE);
	}
	print_message("daemon killed: 5 producers saw -EPIPE within %lld ms\n",
		      (long long)(v[0].end_ms - t0));
	/* Nothing beyond the slots was written, neither source nor target. */
	canaries_intact(&f, 5);
	for (uint32_t b = 3000; b < 4096; b++)
		assert_int_equal(f.t[b], 0);
	mrc_gpu_watch_stop(w);
	mrc_close(f.ctx);
	mrcd_spawn_stop(&own);
}

int main(void)
{
	seed = getenv("MRC_SEED") ? strtoull(getenv("MRC_SEED"), NULL, 0) : (uint64_t)time(NULL);
	printf("test_gpu_chan: seed %llu (MRC_SEED to repeat)\n", (unsigned long long)seed);
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refuses_unpolled),
		cmocka_unit_test(test_put_signal_wait),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_torn),
		cmocka_unit_test(test_index_wrap),
		cmocka_unit_test(test_full_ring),
		cmocka_unit_test(test_daemon_killed),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

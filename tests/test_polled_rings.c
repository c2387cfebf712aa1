/* Ring ABI v2 against a real mrcd on the loopback fabric (no root): a
 * polled QP parks (hdr.sleeping = 1) and a post through libmrc wakes it
 * through the notify page; indices near 2^32 and 2^64 wrap, with an
 * 8-entry SQ that fills (-ENOSPC) and makes progress, for polled and
 * doorbell QPs; 1,000 parked polled QPs cost nothing per polling round
 * (asserted on the daemon's counters, stats "rings"); notify slots are
 * reused, cleared.  Skipped when build/bin/mrcd has not been built. */
#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <cmocka.h>

#include "tests/support/get1.h"
#include "tests/support/mrcd_one.h"
#include "tests/support/skip.h"

#include "mrc/mrc.h"
#include "mrc/ring.h"

#define WAIT_MS MRCD_SPAWN_WAIT_MS
#define N_IDLE 1000

/* ---- the daemon's counters (operator socket, stats "rings") ---------- */

static long long ring_stat(const struct mrcd_proc *d, const char *key)
{
	json_t *j = one_stats(d);
	json_t *v = json_object_get(json_object_get(json_object_get(j, "result"), "rings"), key);
	if (!v)   /* tolerate a reply without the "result" envelope */
		v = json_object_get(json_object_get(j, "rings"), key);
	assert_true(json_is_integer(v));
	long long r = json_integer_value(v);
	json_decref(j);
	return r;
}

struct stat_at_least {
	const struct mrcd_proc *d;
	const char *key;
	long long min;
};
static int stat_reached(void *arg)
{
	struct stat_at_least *s = arg;
	return ring_stat(s->d, s->key) >= s->min;
}
static void wait_stat(const struct mrcd_proc *d, const char *key, long long min)
{
	struct stat_at_least s = { d, key, min };
	if (mrcd_spawn_wait_for(stat_reached, &s, WAIT_MS))
		fail_msg("stats rings.%s stayed at %lld, below %lld", key, ring_stat(d, key), min);
}

static int sleeping(void *arg)
{
	const struct mrc_ring_hdr *h = arg;
	return __atomic_load_n(&h->sleeping, __ATOMIC_ACQUIRE) == 1;
}

/* ---- fixtures ---------------------------------------------------------- */

static int setup(void **state)
{
	*state = NULL;
	if (!mrcd_spawn_available())
		return 0;
	struct mrcd_proc *d = calloc(1, sizeof(*d));
	/* A short park time so the tests do not wait long for it; room for
	 * the 1,000 idle QPs of one client. */
	const char *argv[] = { "--gpu_park_us=2000", "--client_max_qps=2048",
			       "--uid_max_qps=4096", "--ring_entries=1024", NULL };
	if (!d || mrcd_spawn_start(d, argv)) {
		free(d);
		return -1;
	}
	*state = d;
	return 0;
}

static int teardown(void **state)
{
	struct mrcd_proc *d = *state;
	if (d) {
		mrcd_spawn_stop(d);
		free(d);
	}
	return 0;
}

#define NEED_DAEMON(state) \
	do { if (!*(state)) MRC_SKIP("%s is not built", mrcd_spawn_bin()); } while (0)

struct pair {
	struct mrc_ctx *ctx;
	struct mrc_qp *a, *b;      /* a posts WRITEs into b's host */
	struct mrc_mr *src, *dst;
};

/* Connects x and y to each other (out of band, same host). */
static void connect2(struct mrc_qp *x, struct mrc_qp *y)
{
	struct mrc_qp_addr lx, ly;
	assert_int_equal(mrc_qp_info_get(x, &lx), 0);
	assert_int_equal(mrc_qp_info_get(y, &ly), 0);
	assert_int_equal(mrc_connect_oob(x, &ly), 0);
	assert_int_equal(mrc_connect_oob(y, &lx), 0);
}

/* x and a new doorbell QP as its peer (the target of its WRITEs). */
static struct mrc_qp *peer_of(struct mrc_ctx *ctx, struct mrc_qp *x)
{
	struct mrc_qp *y;
	assert_int_equal(mrc_create_qp(ctx, NULL, &y), 0);
	connect2(x, y);
	return y;
}

static void pair_open(const struct mrcd_proc *d, struct pair *p, const struct mrc_qp_cfg *acfg)
{
	memset(p, 0, sizeof(*p));
	assert_int_equal(mrc_open(d->sock, &p->ctx), 0);
	assert_int_equal(mrc_alloc_mr(p->ctx, 1 << 16, MRC_MR_LOCAL_READ, &p->src), 0);
	assert_int_equal(mrc_alloc_mr(p->ctx, 1 << 16, MRC_MR_ALL, &p->dst), 0);
	assert_int_equal(mrc_create_qp(p->ctx, acfg, &p->a), 0);
	p->b = peer_of(p->ctx, p->a);
}

/* One 8-byte WRITE of v from a to b's region at off, completed OK. */
static void write1(struct pair *p, struct mrc_qp *qp, uint64_t wr_id, uint64_t v, uint64_t off)
{
	memcpy((char *)mrc_mr_addr(p->src) + off, &v, sizeof(v));
	assert_int_equal(mrc_post_write(qp, wr_id, mrc_mr_key(p->src), off, 8, mrc_mr_key(p->dst), off), 0);
	struct mrc_completion c = mrcd_get1(qp);
	assert_int_equal(c.status, 0);
	assert_int_equal(c.wr_id, wr_id);
	uint64_t got;
	memcpy(&got, (char *)mrc_mr_addr(p->dst) + off, sizeof(got));
	assert_int_equal(got, v);
}

/* ---- a polled QP parks, and the notify page wakes it ------------------ */

static void test_park_and_wake(void **state)
{
	NEED_DAEMON(state);
	struct mrcd_proc *d = *state;
	struct pair p;
	struct mrc_qp_cfg cfg = { .sq_entries = 64, .flags = MRC_QP_POLLED };
	pair_open(d, &p, &cfg);
	struct mrc_qp_rings r;
	assert_int_equal(mrc_qp_rings(p.a, &r), 0);
	assert_non_null(r.notify);
	assert_true(r.notify_len >= sizeof(struct mrc_notify) + r.notify->slots);
	assert_int_equal(r.notify->magic, MRC_NOTIFY_MAGIC);
	assert_true(r.sq->flags & MRC_RING_F_POLLED);
	assert_true(r.sq->notify_slot < r.notify->slots);
	struct mrc_qp_rings rb;
	assert_int_equal(mrc_qp_rings(p.b, &rb), 0);
	assert_null(rb.notify);   /* a doorbell QP has none */

	/* Busy: a WRITE while the QP is still active. */
	write1(&p, p.a, 1, 0x1111, 0);
	/* Idle for gpu_park_us: parked. */
	if (mrcd_spawn_wait_for(sleeping, r.sq, WAIT_MS))
		fail_msg("the polled QP did not park (hdr.sleeping stays 0)");
	wait_stat(d, "polled_parked", 1);
	long long parks = ring_stat(d, "parks"), wakes = ring_stat(d, "notify_wakeups");
	assert_true(parks >= 1);
	/* Parked rings cost nothing: the timer ticks, no SQ is looked at. */
	long long polls = ring_stat(d, "ring_polls"), ticks = ring_stat(d, "notify_ticks");
	wait_stat(d, "notify_ticks", ticks + 3);
	assert_int_equal(ring_stat(d, "ring_polls"), polls);
	assert_true(ring_stat(d, "poll_interval_us") > 0);

	/* A post wakes it through the notify page, and completes. */
	write1(&p, p.a, 2, 0x2222, 8);
	assert_true(ring_stat(d, "notify_wakeups") > wakes);
	/* It parks again once idle. */
	if (mrcd_spawn_wait_for(sleeping, r.sq, WAIT_MS))
		fail_msg("the polled QP did not park again");
	wait_stat(d, "parks", parks + 1);
	mrc_close(p.ctx);
	wait_stat(d, "polled_parked", 0);   /* (trivially: reached at once) */
	assert_int_equal(ring_stat(d, "polled_active") + ring_stat(d, "polled_parked"), 0);
}

/* ---- wraparound near 2^32 and 2^64, a full SQ ------------------------- */

#define N_POSTS 3000

static void wrap_run(struct mrcd_proc *d, uint64_t base, uint32_t flags)
{
	struct pair p;
	struct mrc_qp_cfg cfg = { .sq_entries = 8, .cq_entries = 16, .flags = flags,
				  .index_base = base };
	pair_open(d, &p, &cfg);
	struct mrc_qp_rings r;
	assert_int_equal(mrc_qp_rings(p.a, &r), 0);
	assert_true(r.sq->base == base && r.cq->base == base);
	assert_true(r.sq->tail == base && r.cq->tail == base);
	uint64_t posted = 0, done = 0, full = 0;
	while (done < N_POSTS) {
		/* Post until the SQ refuses: the daemon consumes at most as
		 * many as the CQ can hold (16), the SQ holds 8 more. */
		while (posted < N_POSTS) {
			uint64_t off = (posted % 1024) * 8, v = posted * 0x9e3779b97f4a7c15ull;
			memcpy((char *)mrc_mr_addr(p.src) + off, &v, 8);
			int rc = mrc_post_write(p.a, posted, mrc_mr_key(p.src), off, 8,
						mrc_mr_key(p.dst), off);
			if (rc == -ENOSPC) {
				full++;
				break;
			}
			assert_int_equal(rc, 0);
			posted++;
		}
		struct mrc_completion c = mrcd_get1(p.a);
		if (c.status || c.wr_id != done)
			fail_msg("base %#llx: completion %llu: wr_id %llu status %d",
				 (unsigned long long)base, (unsigned long long)done,
				 (unsigned long long)c.wr_id, c.status);
		uint64_t off = (done % 1024) * 8, v;
		memcpy(&v, (char *)mrc_mr_addr(p.dst) + off, 8);
		assert_true(v == done * 0x9e3779b97f4a7c15ull);
		done++;
	}
	/* Back-pressure happened, and the rings went past the wrap point. */
	assert_true(full > 0);
	assert_true(__atomic_load_n(&r.sq->tail, __ATOMIC_ACQUIRE) == base + N_POSTS);
	assert_true(r.sq->head == base + N_POSTS);
	assert_true(r.cq->tail == base + N_POSTS);
	print_message("base %#llx %s: %d WRITEs, SQ full %llu times\n", (unsigned long long)base,
		      flags & MRC_QP_POLLED ? "polled" : "doorbell", N_POSTS,
		      (unsigned long long)full);
	mrc_close(p.ctx);
}

static void test_wrap(void **state)
{
	NEED_DAEMON(state);
	static const uint64_t bases[] = { (1ull << 32) - 5, UINT64_MAX - 4 };
	for (size_t i = 0; i < 2; i++) {
		wrap_run(*state, bases[i], 0);
		wrap_run(*state, bases[i], MRC_QP_POLLED);
	}
}

/* ---- 1,000 parked QPs cost nothing per round --------------------------- */

/* Round trips of a busy QP; returns the SQs looked at per polling round. */
static double busy_round_trips(struct mrcd_proc *d, struct pair *p, struct mrc_qp *qp, int n)
{
	long long r0 = ring_stat(d, "poll_rounds"), s0 = ring_stat(d, "ring_polls");
	for (int i = 0; i < n; i++)
		write1(p, qp, (uint64_t)i, (uint64_t)i + 7, (uint64_t)(i % 64) * 8);
	long long r1 = ring_stat(d, "poll_rounds"), s1 = ring_stat(d, "ring_polls");
	assert_true(r1 > r0);
	return (double)(s1 - s0) / (double)(r1 - r0);
}

static void test_idle_parked_scale(void **state)
{
	NEED_DAEMON(state);
	struct mrcd_proc *d = *state;
	struct pair p;
	pair_open(d, &p, NULL);   /* a, b: doorbell QPs */
	struct mrc_qp *busy;
	struct mrc_qp_cfg pc = { .sq_entries = 8, .cq_entries = 8, .flags = MRC_QP_POLLED };
	assert_int_equal(mrc_create_qp(p.ctx, &pc, &busy), 0);
	peer_of(p.ctx, busy);
	/* Before: per-round work of a doorbell QP and of a polled QP. */
	double db0 = busy_round_trips(d, &p, p.a, 200);
	double pq0 = busy_round_trips(d, &p, busy, 200);

	static struct mrc_qp *idle[N_IDLE];
	for (int i = 0; i < N_IDLE; i++) {
		int rc = mrc_create_qp(p.ctx, &pc, &idle[i]);
		if (rc)
			fail_msg("idle QP %d: %s (%s)", i, strerror(-rc), mrc_last_error(p.ctx));
	}
	/* every polled QP, the busy one too: until it parks (gpu_park_us
	 * after its last work) it is polled, and a loaded machine shows it */
	wait_stat(d, "polled_parked", N_IDLE + 1);
	long long polls = ring_stat(d, "ring_polls"), ticks = ring_stat(d, "notify_ticks");
	wait_stat(d, "notify_ticks", ticks + 3);
	assert_int_equal(ring_stat(d, "ring_polls"), polls);

	double db1 = busy_round_trips(d, &p, p.a, 200);
	double pq1 = busy_round_trips(d, &p, busy, 200);
	print_message("SQs polled per round: doorbell QP %.2f -> %.2f, polled QP %.2f -> %.2f "
		      "with %d parked polled QPs\n", db0, db1, pq0, pq1, N_IDLE);
	/* A scan of every QP would be >= N_IDLE per round. */
	assert_true(db1 <= 4.0);
	assert_true(pq1 <= 4.0);
	assert_true(ring_stat(d, "polled_parked") >= N_IDLE);

	/* One of them (not slot 0) is woken by a post and completes. */
	struct mrc_qp_rings r;
	struct mrc_qp *one = idle[N_IDLE / 2];
	assert_int_equal(mrc_qp_rings(one, &r), 0);
	assert_true(r.sq->notify_slot > 0);
	peer_of(p.ctx, one);
	long long wakes = ring_stat(d, "notify_wakeups");
	write1(&p, one, 99, 0x5555, 16);
	assert_true(ring_stat(d, "notify_wakeups") > wakes);
	mrc_close(p.ctx);
}

/* ---- notify slots are reused, cleared ------------------------------------ */

static void test_slot_reuse(void **state)
{
	NEED_DAEMON(state);
	struct mrcd_proc *d = *state;
	struct mrc_ctx *ctx;
	assert_int_equal(mrc_open(d->sock, &ctx), 0);
	struct mrc_qp_cfg pc = { .sq_entries = 8, .flags = MRC_QP_POLLED };
	struct mrc_qp *q[3], *again;
	struct mrc_qp_rings r[3], ra;
	for (int i = 0; i < 3; i++) {
		assert_int_equal(mrc_create_qp(ctx, &pc, &q[i]), 0);
		assert_int_equal(mrc_qp_rings(q[i], &r[i]), 0);
	}
	/* One page per context, distinct slots. */
	assert_ptr_equal(r[0].notify, r[2].notify);
	assert_true(r[0].sq->notify_slot != r[1].sq->notify_slot &&
		    r[1].sq->notify_slot != r[2].sq->notify_slot &&
		    r[0].sq->notify_slot != r[2].sq->notify_slot);
	uint32_t freed = r[1].sq->notify_slot;
	struct mrc_notify *n = r[0].notify;
	assert_int_equal(mrc_destroy_qp(q[1]), 0);
	/* A stale pending byte of the destroyed QP... */
	__atomic_store_n(&n->pending[freed], 1, __ATOMIC_RELAXED);
	assert_int_equal(mrc_create_qp(ctx, &pc, &again), 0);
	assert_int_equal(mrc_qp_rings(again, &ra), 0);
	assert_int_equal(ra.sq->notify_slot, freed);
	/* ...is cleared for the new one. */
	assert_int_equal(__atomic_load_n(&n->pending[freed], __ATOMIC_RELAXED), 0);
	/* A doorbell QP's ring is not polled: no notify page. */
	struct mrc_qp *db;
	assert_int_equal(mrc_create_qp(ctx, NULL, &db), 0);
	struct mrc_qp_rings rd;
	assert_int_equal(mrc_qp_rings(db, &rd), 0);
	assert_null(rd.notify);
	assert_false(rd.sq->flags & MRC_RING_F_POLLED);
	mrc_close(ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_park_and_wake),
		cmocka_unit_test(test_wrap),
		cmocka_unit_test(test_slot_reuse),
		cmocka_unit_test(test_idle_parked_scale),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

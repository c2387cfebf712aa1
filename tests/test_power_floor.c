/* The power-floor hint (docs/power.md "Power floor") against a real mrcd
 * on the loopback fabric (no root): the word in the notify page rises
 * while a WRITE is in flight and falls when it completes (hold 0: before
 * the completion is visible); with a hold it stays up through a second
 * WRITE within the hold (one raise, no flap) and falls after it; a
 * client closed with a WRITE in flight leaves no timer behind; with
 * power_floor off (the default) it never moves.  A client's stores into
 * the word change nothing the daemon does.  Skipped when build/bin/mrcd
 * has not been built.  No sleeps: every wait polls with a bound. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tests/support/get1.h"
#include "tests/support/mrcd_spawn.h"
#include "tests/support/skip.h"

#include "mrc/mrc.h"
#include "mrc/ring.h"

#define WAIT_MS MRCD_SPAWN_WAIT_MS

/* One daemon per test, with the test's config. */
static struct mrcd_proc D;
static int have_d;

static int start(const char *const *argv)
{
	have_d = 0;
	if (!mrcd_spawn_available())
		return 0;   /* each test skips */
	if (mrcd_spawn_start(&D, argv))
		return -1;
	have_d = 1;
	return 0;
}

static int setup_on(void **state)
{
	(void)state;
	/* A short RTO: the WRITE held back below is retransmitted soon
	 * after its peer is connected. */
	static const char *const argv[] = { "--power_floor=1", "--power_floor_hold_us=0",
					    "--rto_min_us=1000", NULL };
	return start(argv);
}

/* 3 s: far longer than a loopback WRITE takes even on a loaded VM, so
 * the second WRITE lands inside it. */
#define HOLD_MS 3000
static int setup_hold(void **state)
{
	(void)state;
	static const char *const argv[] = { "--power_floor=1", "--power_floor_hold_us=3000000",
					    NULL };
	return start(argv);
}

static int setup_off(void **state)
{
	(void)state;
	return start(NULL);   /* the default config: off */
}

static int stop(void **state)
{
	(void)state;
	if (have_d)
		mrcd_spawn_stop(&D);
	have_d = 0;
	return 0;
}

#define NEED_DAEMON() \
	do { if (!have_d) MRC_SKIP("%s is not built", mrcd_spawn_bin()); } while (0)

struct pair {
	struct mrc_ctx *ctx;
	struct mrc_qp *a, *b;
	struct mrc_qp_addr la, lb;
	struct mrc_mr *src, *dst;
};

/* a is connected to b; b is connected to a only when both is set. */
static void pair_open(const struct mrcd_proc *d, struct pair *p, int both)
{
	memset(p, 0, sizeof(*p));
	assert_int_equal(mrc_open(d->sock, &p->ctx), 0);
	assert_int_equal(mrc_alloc_mr(p->ctx, 1 << 12, MRC_MR_LOCAL_READ, &p->src), 0);
	assert_int_equal(mrc_alloc_mr(p->ctx, 1 << 12, MRC_MR_ALL, &p->dst), 0);
	assert_int_equal(mrc_create_qp(p->ctx, NULL, &p->a), 0);
	assert_int_equal(mrc_create_qp(p->ctx, NULL, &p->b), 0);
	assert_int_equal(mrc_qp_info_get(p->a, &p->la), 0);
	assert_int_equal(mrc_qp_info_get(p->b, &p->lb), 0);
	assert_int_equal(mrc_connect_oob(p->a, &p->lb), 0);
	if (both)
		assert_int_equal(mrc_connect_oob(p->b, &p->la), 0);
}

static void post(struct pair *p, uint64_t wr_id)
{
	uint64_t v = 0x5eed0000u + wr_id;
	memcpy(mrc_mr_addr(p->src), &v, sizeof(v));
	assert_int_equal(mrc_post_write(p->a, wr_id, mrc_mr_key(p->src), 0, 8, mrc_mr_key(p->dst), 0),
			 0);
}

static void done_ok(struct pair *p, uint64_t wr_id)
{
	struct mrc_completion c = mrcd_get1(p->a);
	assert_int_equal(c.status, 0);
	assert_int_equal(c.wr_id, wr_id);
}

/* One WRITE posted and completed; then the word and the raise count. */
static void write_expect(struct pair *p, uint64_t wr_id, int word, uint32_t raises)
{
	post(p, wr_id);
	done_ok(p, wr_id);
	uint32_t r;
	assert_int_equal(mrc_power_floor(p->ctx, &r), word);
	assert_int_equal(r, raises);
}

static int floor_is(const struct mrc_ctx *ctx, int want)
{
	return mrc_power_floor(ctx, NULL) == want;
}
static int floor_up(void *arg)
{
	return floor_is(arg, 1);
}
static int floor_down(void *arg)
{
	return floor_is(arg, 0);
}

/* ---- on, hold 0: up while in flight, down by the completion ------------ */

static void test_rises_in_flight(void **state)
{
	NEED_DAEMON();
	struct pair p;
	pair_open(&D, &p, 0);
	uint32_t raises = 99;
	assert_int_equal(mrc_power_floor(p.ctx, &raises), 0);
	assert_int_equal(raises, 0);
	/* b is not connected to a yet: a's WRITE cannot be acknowledged and
	 * stays in flight. */
	post(&p, 1);
	if (mrcd_spawn_wait_for(floor_up, p.ctx, WAIT_MS))
		fail_msg("the power floor did not rise with a WRITE posted");
	assert_int_equal(mrc_power_floor(p.ctx, &raises), 1);
	assert_int_equal(raises, 1);
	/* The word was read up before this: no completion yet means it was
	 * up while the WRITE was in flight. */
	struct mrc_completion c;
	assert_int_equal(mrc_poll_cq(p.a, &c, 1), 0);
	assert_int_equal(mrc_connect_oob(p.b, &p.la), 0);
	done_ok(&p, 1);
	/* Hold 0: lowered before the completion was written. */
	assert_int_equal(mrc_power_floor(p.ctx, &raises), 0);
	assert_int_equal(raises, 1);
	/* A new phase raises it again. */
	write_expect(&p, 2, 0, 2);
	mrc_close(p.ctx);
}

/* What the client stores in the page is not what mrcd believes: a client
 * that raises or lowers the word itself is overwritten at the next
 * change, and the daemon's count is unaffected. */
static void test_client_cannot_steer(void **state)
{
	NEED_DAEMON();
	struct pair p;
	pair_open(&D, &p, 1);
	volatile uint32_t *w = (volatile uint32_t *)mrc_power_floor_word(p.ctx);
	assert_non_null(w);
	w[0] = 1;                  /* a scribble: up with nothing in flight */
	w[1] = 1000;               /* and a bogus raise count */
	write_expect(&p, 1, 0, 1);   /* the daemon's own count */
	w[0] = 0;
	write_expect(&p, 2, 0, 2);
	mrc_close(p.ctx);
}

/* ---- on, with a hold: no flap between two WRITEs ---------------------- */

static void test_hold(void **state)
{
	NEED_DAEMON();
	struct pair p;
	pair_open(&D, &p, 1);
	int64_t t0 = mrcd_spawn_now_ms();
	write_expect(&p, 1, 1, 1);   /* held */
	/* One phase: not lowered and raised again. */
	write_expect(&p, 2, 1, 1);
	int64_t t1 = mrcd_spawn_now_ms();
	if (t1 - t0 >= HOLD_MS)
		MRC_SKIP("two loopback WRITEs took %lld ms, longer than the hold",
			 (long long)(t1 - t0));
	uint32_t raises;
	if (mrcd_spawn_wait_for(floor_down, p.ctx, HOLD_MS + WAIT_MS))
		fail_msg("the power floor stayed up after the hold");
	assert_int_equal(mrc_power_floor(p.ctx, &raises), 0);
	assert_int_equal(raises, 1);
	mrc_close(p.ctx);
}

/* A client that goes away with a send in flight (and so a hold running)
 * leaves nothing behind: its timer goes with it.  A second client's hold,
 * started later, ends later: once its word falls, the first one's timer
 * would have fired on freed memory (caught by the sanitizer build's
 * daemon), and the daemon still serves. */
static void test_close_in_flight(void **state)
{
	NEED_DAEMON();
	struct pair p, q;
	pair_open(&D, &p, 0);      /* b never connected: the WRITE stays */
	post(&p, 1);
	if (mrcd_spawn_wait_for(floor_up, p.ctx, WAIT_MS))
		fail_msg("the power floor did not rise with a WRITE posted");
	mrc_close(p.ctx);
	pair_open(&D, &q, 1);
	write_expect(&q, 1, 1, 1);
	if (mrcd_spawn_wait_for(floor_down, q.ctx, HOLD_MS + WAIT_MS))
		fail_msg("the power floor stayed up after the hold");
	write_expect(&q, 2, 1, 2);
	mrc_close(q.ctx);
}

/* ---- off (the default): the word never moves --------------------------- */

static void test_off(void **state)
{
	NEED_DAEMON();
	struct pair p;
	pair_open(&D, &p, 1);
	for (uint64_t i = 1; i <= 100; i++) {
		post(&p, i);
		/* Read while the WRITE may still be in flight. */
		uint32_t raises;
		assert_int_equal(mrc_power_floor(p.ctx, &raises), 0);
		assert_int_equal(raises, 0);
		done_ok(&p, i);
	}
	uint32_t raises;
	assert_int_equal(mrc_power_floor(p.ctx, &raises), 0);
	assert_int_equal(raises, 0);
	assert_int_equal(mrc_power_floor(NULL, NULL), -EINVAL);
	assert_null(mrc_power_floor_word(NULL));
	mrc_close(p.ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_rises_in_flight, setup_on, stop),
		cmocka_unit_test_setup_teardown(test_client_cannot_steer, setup_on, stop),
		cmocka_unit_test_setup_teardown(test_hold, setup_hold, stop),
		cmocka_unit_test_setup_teardown(test_close_in_flight, setup_hold, stop),
		cmocka_unit_test_setup_teardown(test_off, setup_off, stop),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

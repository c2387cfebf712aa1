/* The scaffold of an engine test binary (cmocka): a fixed default seed that
 * MRC_TEST_SEED replaces, CHECK / CHECK_EQ that print it with every
 * failure, accessors of an etest fixture, and the teardown that finishes the
 * fixtures a failed CHECK left behind.  Include after <cmocka.h>, once per
 * test binary. */
#ifndef MRC_TESTS_ETEST_CASE_H
#define MRC_TESTS_ETEST_CASE_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tests/support/etest.h"

static uint64_t g_seed;

#define CHECK(c) do { if (!(c)) fail_msg("%s:%d: %s (seed %" PRIu64 ")", \
	__FILE__, __LINE__, #c, g_seed); } while (0)
#define CHECK_EQ(a, b) do { long long a_ = (long long)(a), b_ = (long long)(b); \
	if (a_ != b_) fail_msg("%s:%d: %s == %lld, expected %s == %lld (seed %" PRIu64 ")", \
	__FILE__, __LINE__, #a, a_, #b, b_, g_seed); } while (0)

#define SEC 1000000000ull
#define MS  1000000ull
#define US  1000ull

static inline struct mrce *E(struct etest *t, int n) { return t->ch->node[n].e; }
static inline const struct mrce_wc *WC(struct etest *t, int n, size_t i)
{
	CHECK(i < t->ch->node[n].nwc);
	return &t->ch->node[n].wc[i];
}

/* chan_run's predicate: EV ev of peer on engine e is in state. */
struct ev_wait {
	struct mrce *e;
	uint32_t peer, ev;
	uint8_t state;
};

static inline int pred_ev_state(struct chan *ch, void *arg)
{
	struct ev_wait *w = arg;
	struct mrce_ev_info ei;
	(void)ch;
	return mrce_ev_info(w->e, w->peer, w->ev, &ei) == 0 && ei.state == w->state;
}

/* Node 0 logged EV ev going from GOOD to ASSUMED_BAD (retired). */
static inline int ev_retired(struct etest *t, uint32_t ev)
{
	for (size_t i = 0; i < t->ch->node[0].nevt; i++) {
		const struct mrce_event *x = &t->ch->node[0].evt[i];
		if (x->type == MRCE_EVT_EV_STATE && x->ev == ev &&
		    x->old_state == MRCE_EV_GOOD && x->new_state == MRCE_EV_ASSUMED_BAD)
			return 1;
	}
	return 0;
}

static inline int etest_teardown(void **state)
{
	(void)state;
	etest_cleanup_all();
	return 0;
}
#define T(f) cmocka_unit_test_teardown(f, etest_teardown)

/* g_seed := MRC_TEST_SEED, else dflt; says how to replay. */
static inline void etest_seed(const char *name, uint64_t dflt)
{
	const char *s = getenv("MRC_TEST_SEED");
	g_seed = s ? strtoull(s, NULL, 0) : dflt;
	printf("%s: seed %" PRIu64 " (MRC_TEST_SEED=<n> to replay)\n", name, g_seed);
}

/* Shared checks of the engine test binaries. */
static inline void cfg_two(struct chan_cfg *c, uint32_t nev, uint32_t planes)
{
	chan_cfg_default(c, g_seed);
	c->nev = nev;
	c->planes = planes;
}

/* One WRITE of len bytes from src+off to dst+off on node 0's qa, run
 * until it completes; it must succeed. */
static inline void write_and_wait_at(struct etest *t, uint32_t qa, uint64_t off, uint64_t len,
				     uint64_t wr_id)
{
	uint64_t done = t->ch->node[0].wc_total;
	CHECK_EQ(etest_post(t->ch, 0, qa, MRC_SQE_WRITE, wr_id, t->lkey, off, len, t->rkey, off,
			    0, 0), 0);
	CHECK_EQ(etest_run2(t->ch, done + 1, 0, 10 * SEC), 0);
	CHECK_EQ(t->ch->node[0].wc[t->ch->node[0].nwc - 1].status, 0);
}
static inline void check_guards(struct etest *t)
{
	CHECK_EQ(chan_gbuf_guard_bad(&t->src), -1);
	CHECK_EQ(chan_gbuf_guard_bad(&t->dst), -1);
}

/* dst bytes [from, to) still hold their initial pattern. */
static inline void check_dst_untouched(struct etest *t, uint64_t from, uint64_t to)
{
	for (uint64_t i = from; i < to; i++)
		if (t->dst.p[i] != chan_gbuf_byte(t->dst.seed, i))
			fail_msg("dst byte %" PRIu64 " changed (untouched range %" PRIu64
				 "..%" PRIu64 ", seed %" PRIu64 ")", i, from, to, g_seed);
}

static inline void check_placed(struct etest *t, uint64_t loff, uint64_t roff, uint64_t len)
{
	if (len && memcmp(t->src.p + loff, t->dst.p + roff, len))
		fail_msg("WRITE of %" PRIu64 " bytes at %" PRIu64 " misplaced (seed %" PRIu64 ")",
			 len, roff, g_seed);
}

static inline int find_event(struct etest *t, int n, uint8_t type, uint32_t ev, uint8_t old_state,
		      uint8_t new_state, uint8_t reason)
{
	for (size_t i = 0; i < t->ch->node[n].nevt; i++) {
		const struct mrce_event *x = &t->ch->node[n].evt[i];
		if (x->type == type && x->ev == ev && x->old_state == old_state &&
		    x->new_state == new_state && x->reason == reason)
			return 1;
	}
	return 0;
}

/* ---- config and registration ----------------------------------------- */

#endif

/* The sending bound (health/feed.h, docs/health.md "The sending bound"):
 * what one host sends does not grow with its number of peers.
 *   storm_stays_bounded: a host with 300..8,191 peers (1,023 in the first
 *     round) whose paths fail at every event, many events a tick, driven
 *     the way mrcd and mrcsim drive health/feed.c (a failure told at each
 *     retirement, the share rule at each tick, a retraction when a path
 *     works again): it never sends more than MRC_HEALTH_PERIOD_MSGS
 *     messages in a period, and every peer hears a share within
 *     ceil(peers / MRC_HEALTH_SHARE_PEERS) periods and a tell within
 *     ceil(peers / MRC_HEALTH_TELL_PEERS) tells.  Before the bound every
 *     share and tell went to every peer, and a tell every tick: 1,023
 *     peers sent 12,276 messages in a period.
 *   few_peers_all_told: with up to MRC_HEALTH_SHARE_PEERS peers every
 *     share and tell goes to all of them, as before.
 * Seeded: MRC_TEST_SEED replays; the seed is printed with every failure. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tests/support/seeded.h"
#include "health/feed.h"
#include "topology/topo.h"

#define ROUNDS 20
#define TICK_NS 10000000ull    /* mrcd's */
#define BOUND 6144              /* docs/health.md, docs/security.md */

struct run {
	uint32_t npeers;
	uint64_t max_per;            /* most messages in one period */
	uint32_t *heard_share;       /* [peer] periods since it last heard a share */
	uint32_t max_gap_share;      /* the longest such wait, in periods */
	uint32_t *heard_tell;        /* [peer] tells since it last heard one */
	uint32_t max_gap_tell;
};

static void got(uint32_t *heard, uint32_t np, uint32_t first, uint32_t n)
{
	for (uint32_t k = 0; k < n; k++)
		heard[(first + k) % np] = 0;
}

static void age(uint32_t *heard, uint32_t np, uint32_t *max_gap)
{
	for (uint32_t p = 0; p < np; p++)
		if (++heard[p] > *max_gap)
			*max_gap = heard[p];
}

/* 60 ticks (6 periods x the peers' turns) of a storm at one host. */
static void storm(struct run *r)
{
	struct mrc_topo *t;
	struct mrc_topo_gen g = { .planes = 1, .leaves_per_plane = 4, .spines_per_plane = 4,
		.hosts_per_leaf = 4 };
	assert_int_equal(mrc_topo_generate(&g, &t, NULL, 0), 0);
	struct mrc_health *h;
	struct mrc_health_cfg cfg = { 0 };
	assert_int_equal(mrc_health_new(t, 0, &cfg, &h), 0);
	struct mrc_health_share_st st = { 0 };
	struct mrc_health_obs o[64];
	uint32_t np = r->npeers, periods = 6 * (np / MRC_HEALTH_SHARE_PEERS + 1);
	r->heard_share = calloc(np, sizeof(uint32_t));
	r->heard_tell = calloc(np, sizeof(uint32_t));
	assert_non_null(r->heard_share);
	assert_non_null(r->heard_tell);
	uint64_t per = 0;
	for (uint32_t tick = 1; tick <= periods * MRC_HEALTH_SHARE_TICKS; tick++) {
		uint64_t now = tick * TICK_NS;
		/* 1..64 failures retired between ticks: each is told if the
		 * bound lets it (a path of the small fabric stands for one to
		 * any peer: the bound does not look at which). */
		for (uint32_t e = 0, ne = 1 + (uint32_t)(rnd() % 64); e < ne; e++) {
			uint64_t at = now - TICK_NS + (e + 1) * (TICK_NS / (ne + 1));
			uint32_t dst = 1 + (uint32_t)(rnd() % (t->n_hosts - 1)), first;
			mrc_health_path_fail(h, dst, (uint32_t)(rnd() % mrc_topo_ev_count(t)), at);
			uint32_t n = mrc_health_tell_peers(&st, at, TICK_NS, np, &first);
			CHECK(n <= MRC_HEALTH_TELL_PEERS, "told %u peers at once", n);
			if (n) {
				per += n;
				got(r->heard_tell, np, first, n);
				age(r->heard_tell, np, &r->max_gap_tell);
			}
		}
		/* and some work again: a retraction may go out between periods */
		if (rnd() % 2)
			mrc_health_path_ok(h, 1 + (uint32_t)(rnd() % (t->n_hosts - 1)),
					   (uint32_t)(rnd() % mrc_topo_ev_count(t)), now - 1);
		mrc_health_eval(h, now);
		int period = tick % MRC_HEALTH_SHARE_TICKS == 0;
		size_t nobs;
		if (mrc_health_feed_share(h, now, period, o, 64, &nobs, &st)) {
			uint32_t first, n = mrc_health_share_peers(&st, period, np, &first);
			CHECK(n <= MRC_HEALTH_SHARE_PEERS, "shared to %u peers", n);
			per += n;
			got(r->heard_share, np, first, n);
		}
		if (period) {
			CHECK(per <= MRC_HEALTH_PERIOD_MSGS && per <= BOUND, "%u peers: %llu "
			      "messages in a period (bound %u)", np, (unsigned long long)per, BOUND);
			if (per > r->max_per)
				r->max_per = per;
			per = 0;
			age(r->heard_share, np, &r->max_gap_share);
		}
	}
	free(r->heard_share);
	free(r->heard_tell);
	mrc_health_free(h);
	mrc_topo_free(t);
}

static uint32_t ceil_div(uint32_t a, uint32_t b) { return (a + b - 1) / b; }

static void storm_stays_bounded(void **state)
{
	(void)state;
	for (int round = 0; round < ROUNDS; round++) {
		struct run r = { .npeers = round ? 300 + (uint32_t)(rnd() % 7892) : 1023 };
		storm(&r);
		CHECK(r.max_per > 0, "%u peers: nothing sent", r.npeers);
		/* every peer hears in turn: a share within its turn (+1: the
		 * wait is counted at the period's end) and a tell likewise */
		CHECK(r.max_gap_share <= ceil_div(r.npeers, MRC_HEALTH_SHARE_PEERS) + 1,
		      "%u peers: one waited %u periods for a share", r.npeers, r.max_gap_share);
		CHECK(r.max_gap_tell <= ceil_div(r.npeers, MRC_HEALTH_TELL_PEERS),
		      "%u peers: one waited %u tells", r.npeers, r.max_gap_tell);
	}
}

static void few_peers_all_told(void **state)
{
	(void)state;
	for (int round = 0; round < ROUNDS; round++) {
		uint32_t np = 1 + (uint32_t)(rnd() % MRC_HEALTH_SHARE_PEERS), first;
		struct mrc_health_share_st st = { 0 };
		CHECK(mrc_health_tell_peers(&st, TICK_NS, TICK_NS, np, &first) == np && first == 0,
		      "%u peers: a tell to some only", np);
		CHECK(mrc_health_tell_peers(&st, TICK_NS + MRC_HEALTH_TELL_TICKS * TICK_NS - 1,
					    TICK_NS, np, &first) == 0,
		      "%u peers: two tells within %u ticks", np, MRC_HEALTH_TELL_TICKS);
		CHECK(mrc_health_share_peers(&st, 1, np, &first) == np && first == 0,
		      "%u peers: a share to some only", np);
		CHECK(mrc_health_share_peers(&st, 0, np, &first) == np && first == 0,
		      "%u peers: a retraction to some only", np);
	}
}

int main(void)
{
	seed_init("test_health_bound");
	const struct CMUnitTest t[] = {
		cmocka_unit_test_setup(storm_stays_bounded, reseed),
		cmocka_unit_test_setup(few_peers_all_told, reseed),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}

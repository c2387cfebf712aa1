/* What mrcd (and mrcsim) feed health/ from the engine (health/feed.c), and
 * how a path taken out of use on shared evidence heals (docs/health.md
 * "Observations", "Healing"):
 *   sending_is_no_proof: a GOOD EV that keeps sending into a blackholed
 *     link, with no ACK since the blackhole, does not clear that link: the
 *     link is DENIED on other hosts' failures and no other link is
 *     located (counted as working as of "now", the sender cleared the dead
 *     link and located a wrong one: fabric run 2's h0);
 *   acks_prove_work: the same EV with an ACK newer than the failures
 *     clears the link, and an EV not in use since the last tick (tx_pkts
 *     unmoved) is not read at all;
 *   lost_probe_proves_nothing: a user probe that timed out is no
 *     working path;
 *   tick_skew_convicts_nothing: a path still retired is re-reported
 *     failing as of each tick, a working one as of its last ACK, a little
 *     earlier: within slack_ns that is the same moment, so a healthy link
 *     with two congestion-retired paths is not convicted (it is with no
 *     slack);
 *   spurious_convicts_nothing: a path retired for a loss the engine then
 *     finds spurious (GOOD, SPURIOUS) works, so do the paths to the same
 *     peer that loss decision retired at the same instant (kept retired
 *     by the engine), and its host shares that once
 *     more although it has no failure left, ahead of its newer working
 *     paths (more than a message holds), so a healthy link denied on such
 *     congestion-shaped evidence elsewhere is cleared;
 *   bad_answers_probes: an EV taken out of use with mrce_ev_set_bad (how
 *     mrcd's deny.c applies fabric health now) answers the peer's probes,
 *     so the peer's retired EV heals, and heals itself by its own probes;
 *     a DENIED one (how it applied it before) answers none and the peer's
 *     EV stays retired, its failure (and the denial) fresh.
 * Seeded (random Clos and link, and the engine channel): MRC_TEST_SEED
 * replays, the seed is printed with every failure. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tests/support/etest_case.h"
#include "health/feed.h"
#include "transport/engine_wire.h"
#include "health/health.h"
#include "topology/topo.h"

#define ROUNDS 20

static uint64_t rng;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static int reseed(void **state)
{
	(void)state;
	rng = g_seed * 0x9e3779b97f4a7c15ull + 1;
	return 0;
}

static bool crosses(const struct mrc_path *p, uint32_t link)
{
	for (unsigned i = 0; i < p->n_links; i++)
		if (p->links[i] == link)
			return true;
	return false;
}

struct scene {
	struct mrc_topo *t;
	struct mrc_health *h;
	uint32_t self, dead;
};

/* A random 1-2 plane Clos, a random leaf-spine link of self's leaf dead
 * (so self has paths across it), every other host's paths reported by
 * HEALTH as the blackhole makes them at fail_at. */
static void scene_up(struct scene *s, uint64_t fail_at)
{
	struct mrc_topo_gen g = { .planes = 1 + (uint32_t)(rnd() % 2),
		.leaves_per_plane = 2 + (uint32_t)(rnd() % 4),
		.spines_per_plane = 2 + (uint32_t)(rnd() % 4),
		.hosts_per_leaf = 2 + (uint32_t)(rnd() % 3) };
	assert_int_equal(mrc_topo_generate(&g, &s->t, NULL, 0), 0);
	s->self = (uint32_t)(rnd() % s->t->n_hosts);
	uint32_t leaf = s->self / g.hosts_per_leaf, p = (uint32_t)(rnd() % g.planes);
	s->dead = s->t->leaf_spine[p][(size_t)leaf * g.spines_per_plane +
				      (uint32_t)(rnd() % g.spines_per_plane)];
	struct mrc_health_cfg cfg = { .max_obs = 1u << 16 };
	assert_int_equal(mrc_health_new(s->t, s->self, &cfg, &s->h), 0);
	uint32_t nev = mrc_topo_ev_count(s->t);
	for (uint32_t src = 0; src < s->t->n_hosts; src++)
		for (uint32_t dst = 0; src != s->self && dst < s->t->n_hosts; dst++)
			for (uint32_t ev = 0; dst != src && ev < nev; ev++) {
				struct mrc_path pa;
				if (mrc_topo_path(s->t, src, dst, ev, &pa))
					continue;
				struct mrc_health_obs o = { .src = src, .dst = dst,
					.ev = (uint16_t)ev, .ok = !crosses(&pa, s->dead) };
				uint64_t age = 0;
				assert_true(mrc_health_merge(s->h, src, &o, &age, 1, fail_at) >= 0);
			}
}

static void scene_down(struct scene *s)
{
	mrc_health_free(s->h);
	mrc_topo_free(s->t);
}

/* One tick of self's EVs as mrcd reads them: every one GOOD and sending
 * (tx_pkts up by 10 from prev_tx); acked at `ack` if it avoids the dead
 * link, at dead_ack if it crosses it.  Returns self's paths across it. */
static unsigned tick_self(struct scene *s, uint64_t ack, uint64_t dead_ack, uint64_t tx,
			  uint64_t now)
{
	unsigned across = 0;
	uint32_t nev = mrc_topo_ev_count(s->t);
	for (uint32_t dst = 0; dst < s->t->n_hosts; dst++)
		for (uint32_t ev = 0; dst != s->self && ev < nev; ev++) {
			struct mrc_path pa;
			if (mrc_topo_path(s->t, s->self, dst, ev, &pa))
				continue;
			bool x = crosses(&pa, s->dead);
			across += x;
			struct mrce_ev_info i = { .state = MRCE_EV_GOOD, .tx_pkts = tx + 10,
				.last_ack_ns = x ? dead_ack : ack };
			mrc_health_feed_ev(s->h, dst, ev, &i, tx, now);
		}
	return across;
}

/* Links this host holds LOCATED or DENIED. */
static size_t convicted(const struct mrc_health *h)
{
	size_t n;
	mrc_health_links(h, MRC_HEALTH_LOCATED, NULL, 0, &n);
	return n;
}

static void sending_is_no_proof(void **state)
{
	for (int r = 0; r < ROUNDS; r++) {
		struct scene s;
		/* Blackholed at 10 ms; the others' paths across it still
		 * failing at their ticks up to 50 ms; self still sends on its
		 * paths across it at 60 ms, their last ACK at 9 ms, its other
		 * paths acked at 59 ms. */
		scene_up(&s, 50 * MS);
		unsigned across = tick_self(&s, 59 * MS, 9 * MS, 100, 60 * MS);
		CHECK(across > 0);
		mrc_health_eval(s.h, 60 * MS);
		struct mrc_health_link li;
		assert_int_equal(mrc_health_link_get(s.h, s.dead, &li), 0);
		if (li.state != MRC_HEALTH_DENIED || convicted(s.h) != 1)
			fail_msg("round %d (seed %llu): dead link %u is %s, %zu located "
				 "(self %u sends on %u paths across it)", r,
				 (unsigned long long)g_seed, s.dead, mrc_health_state_name(li.state),
				 convicted(s.h), s.self, across);
		scene_down(&s);
	}
}

static void acks_prove_work(void **state)
{
	for (int r = 0; r < ROUNDS; r++) {
		struct scene s;
		scene_up(&s, 20 * MS);
		/* Not in use since the last tick: nothing read, still DENIED. */
		uint32_t nev = mrc_topo_ev_count(s.t);
		for (uint32_t dst = 0; dst < s.t->n_hosts; dst++)
			for (uint32_t ev = 0; dst != s.self && ev < nev; ev++) {
				struct mrce_ev_info i = { .state = MRCE_EV_GOOD, .tx_pkts = 7,
					.last_ack_ns = 25 * MS };
				mrc_health_feed_ev(s.h, dst, ev, &i, 7, 30 * MS);
			}
		mrc_health_eval(s.h, 30 * MS);
		struct mrc_health_link li;
		mrc_health_link_get(s.h, s.dead, &li);
		CHECK(li.state == MRC_HEALTH_DENIED);
		/* In use and acked at 35 ms, after every failure: healed. */
		tick_self(&s, 35 * MS, 35 * MS, 100, 40 * MS);
		mrc_health_eval(s.h, 40 * MS);
		mrc_health_link_get(s.h, s.dead, &li);
		if (li.state != MRC_HEALTH_OK)
			fail_msg("round %d (seed %llu): acked link %u is %s", r,
				 (unsigned long long)g_seed, s.dead, mrc_health_state_name(li.state));
		CHECK(convicted(s.h) == 0);
		scene_down(&s);
	}
}

/* A healthy link under congestion: two hosts each had one path across it
 * retired (re-reported failing at every tick), while their other paths
 * across it are acked up to 1 ms before the tick.  Read once per tick,
 * that is the same moment: no link is located.  With slack_ns 1 ns (no
 * tolerance) the link would be located: checked too. */
static void tick_skew_convicts_nothing(void **state)
{
	for (uint64_t slack = 0; slack <= 1; slack++) {
		struct mrc_topo *t;
		struct mrc_topo_gen g = { .planes = 1, .leaves_per_plane = 4,
			.spines_per_plane = 2, .hosts_per_leaf = 2 };
		assert_int_equal(mrc_topo_generate(&g, &t, NULL, 0), 0);
		/* Of leaf 2 or 3: hosts 1 and 2 (leaves 0 and 1) then share
		 * only it on their failed paths (between leaves 0 and 1 the two
		 * uplinks tie, and nothing is located either way). */
		uint32_t link = t->leaf_spine[0][(size_t)(2 + rnd() % 2) * 2 + (uint32_t)(rnd() % 2)];
		struct mrc_health_cfg cfg = { .slack_ns = slack };
		struct mrc_health *h;
		assert_int_equal(mrc_health_new(t, 0, &cfg, &h), 0);
		uint32_t nev = mrc_topo_ev_count(t), failed = 0;
		for (uint32_t src = 1; src < t->n_hosts; src++) {
			unsigned mine = 0;
			for (uint32_t dst = 0; dst < t->n_hosts; dst++)
				for (uint32_t ev = 0; dst != src && ev < nev; ev++) {
					struct mrc_path pa;
					if (mrc_topo_path(t, src, dst, ev, &pa))
						continue;
					/* One failed path across it for hosts 1 and 2. */
					bool x = crosses(&pa, link) && src <= 2 && !mine;
					mine += x;
					struct mrc_health_obs o = { .src = src, .dst = dst,
						.ev = (uint16_t)ev, .ok = !x };
					uint64_t age = x ? 0 : 1 * MS;
					assert_true(mrc_health_merge(h, src, &o, &age, 1, 100 * MS) >= 0);
				}
			failed += mine;
		}
		mrc_health_eval(h, 100 * MS);
		size_t n = convicted(h);
		if (slack == 0 && n)
			fail_msg("seed %llu: %zu links convicted by %u retired paths",
				 (unsigned long long)g_seed, n, failed);
		CHECK(failed == 2);
		if (slack == 1)
			CHECK(n > 0);     /* the tolerance is what spares it */
		mrc_health_free(h);
		mrc_topo_free(t);
	}
}

static void lost_probe_proves_nothing(void **state)
{
	struct scene s;
	scene_up(&s, 20 * MS);
	/* A user probe of each of self's paths across the dead link, lost. */
	uint32_t nev = mrc_topo_ev_count(s.t);
	for (uint32_t dst = 0; dst < s.t->n_hosts; dst++)
		for (uint32_t ev = 0; dst != s.self && ev < nev; ev++) {
			struct mrce_event e = { .type = MRCE_EVT_PROBE_RESULT, .ev = ev,
				.time_ns = 25 * MS, .rtt_ns = UINT64_MAX };
			mrc_health_feed_event(s.h, dst, ev, &e);
		}
	mrc_health_eval(s.h, 30 * MS);
	struct mrc_health_link li;
	mrc_health_link_get(s.h, s.dead, &li);
	CHECK(li.state == MRC_HEALTH_DENIED);
	size_t n;
	struct mrc_health_obs o[1];
	mrc_health_export(s.h, 30 * MS, o, 1, &n);
	CHECK(n == 0);           /* self has observed nothing */
	scene_down(&s);
}

/* One host's own table: a path of its retired for loss at `at`. */
static struct mrc_health *host_new(const struct mrc_topo *t, uint32_t self)
{
	struct mrc_health *h;
	struct mrc_health_cfg cfg = { .max_obs = 1024 };
	assert_int_equal(mrc_health_new(t, self, &cfg, &h), 0);
	return h;
}

static void ev_event(struct mrc_health *h, uint32_t peer, uint32_t ev, uint8_t to,
		     uint8_t reason, uint64_t at)
{
	struct mrce_event e = { .type = MRCE_EVT_EV_STATE, .ev = ev, .new_state = to,
		.old_state = to == MRCE_EV_GOOD ? MRCE_EV_ASSUMED_BAD : MRCE_EV_GOOD,
		.reason = reason, .time_ns = at };
	mrc_health_feed_event(h, peer, ev, &e);
}

/* What `from` shares at `now` (mrc_health_feed_share), merged by `to`;
 * returns whether it was due. */
static int share_to(struct mrc_health *from, uint32_t from_host,
		    struct mrc_health_share_st *told,
		    struct mrc_health *to, uint64_t now, int period)
{
	struct mrc_health_obs o[MRCE_CTRL_HEALTH_MAX];
	uint64_t age[MRCE_CTRL_HEALTH_MAX];
	size_t n;
	mrc_health_eval(from, now);
	if (!mrc_health_feed_share(from, now, period, o, MRCE_CTRL_HEALTH_MAX, &n, told))
		return 0;
	for (size_t i = 0; i < n; i++)
		age[i] = now - o[i].ts_ns;
	CHECK(mrc_health_merge(to, from_host, o, age, n, now) == (int)n);
	return 1;
}

/* Congestion-shaped evidence (mrcsim's 2:1 oversubscribed all-to-all,
 * docs/health.md "Spurious retirements"): two hosts of different leaves
 * each have one path across a healthy spine-leaf link retired for loss,
 * the packet only late; each shares it, and a third host denies the link
 * (checked: this evidence convicts while it stands).  Then the engine
 * gives each path back (GOOD, reason SPURIOUS: the "lost" packet was
 * acknowledged): that must count as the path working, and the next share
 * must carry it although the host has no failure left to tell, so the
 * third host clears the link.  Odd rounds: the engine gives back another
 * path the same loss decision retired at the same instant and keeps the
 * one across the link retired: it is pardoned all the same (its tick
 * re-reads dropped).  Before: SPURIOUS was ignored (the failure
 * stood until its TTL, 1 s), a host with no failure did not share, and
 * its export (newest first) had no room for the retraction behind the
 * paths acked since. */
static void spurious_convicts_nothing(void **state)
{
	for (int r = 0; r < ROUNDS; r++) {
		struct mrc_topo *t;
		/* 8 hosts a leaf, 3-4 spines: 93-124 paths a host, more than a
		 * HEALTH message carries. */
		struct mrc_topo_gen g = { .planes = 1, .leaves_per_plane = 4,
			.spines_per_plane = 3 + (uint32_t)(rnd() % 2), .hosts_per_leaf = 8 };
		assert_int_equal(mrc_topo_generate(&g, &t, NULL, 0), 0);
		/* Hosts of leaves 0 and 1 to a host of leaf 2 through spine sp:
		 * their failed paths share only sp-leaf 2; a host of leaf 3
		 * hears of them. */
		uint32_t sp = (uint32_t)(rnd() % g.spines_per_plane), ev = sp;
		uint32_t src[2] = { (uint32_t)(rnd() % 8), 8 + (uint32_t)(rnd() % 8) };
		uint32_t dst = 16 + (uint32_t)(rnd() % 8), obs_host = 24 + (uint32_t)(rnd() % 8);
		uint32_t link = t->leaf_spine[0][(size_t)2 * g.spines_per_plane + sp];
		struct mrc_path pa;
		for (int k = 0; k < 2; k++) {
			assert_int_equal(mrc_topo_path(t, src[k], dst, ev, &pa), 0);
			CHECK(crosses(&pa, link));
		}
		struct mrc_health *a[2] = { host_new(t, src[0]), host_new(t, src[1]) };
		struct mrc_health *o = host_new(t, obs_host);
		struct mrc_health_share_st told[2] = { { 0 }, { 0 } };
		uint64_t t0 = (1 + rnd() % 50) * MS, back = t0 + (2 + rnd() % 5) * MS;
		/* Odd rounds: the same loss decision also retired another path
		 * of each host to dst (a different spine each, so it explains
		 * one path only), and the engine gives back that one, keeping
		 * the one across the link retired (re-read every tick). */
		int sib = r % 2;
		uint32_t sev[2] = { (sp + 1) % g.spines_per_plane, (sp + 2) % g.spines_per_plane };
		for (int k = 0; k < 2; k++) {
			ev_event(a[k], dst, ev, MRCE_EV_ASSUMED_BAD, MRCE_RSN_LOSS, t0);
			if (sib)
				ev_event(a[k], dst, sev[k], MRCE_EV_ASSUMED_BAD, MRCE_RSN_LOSS, t0);
			CHECK(share_to(a[k], src[k], &told[k], o, t0 + MS, 1));
		}
		mrc_health_eval(o, t0 + MS);
		struct mrc_health_link li;
		mrc_health_link_get(o, link, &li);
		CHECK(li.state == MRC_HEALTH_DENIED);    /* the evidence convicts */
		for (int k = 0; k < 2; k++) {
			ev_event(a[k], dst, sib ? sev[k] : ev, MRCE_EV_GOOD, MRCE_RSN_SPURIOUS, back);
			struct mrce_ev_info still = { .state = MRCE_EV_ASSUMED_BAD,
				.last_reason = MRCE_RSN_LOSS, .last_change_ns = t0 };
			if (sib)
				mrc_health_feed_ev(a[k], dst, ev, &still, 0, back + MS / 4);
			/* Then every path of the host not across the link acked,
			 * newer than the give-back: the retraction must still go
			 * out first. */
			unsigned acked = 0;
			for (uint32_t d = 0; d < t->n_hosts; d++)
				for (uint32_t e = 0; d != src[k] && e < g.spines_per_plane; e++)
					if (!mrc_topo_path(t, src[k], d, e, &pa) && !crosses(&pa, link))
						acked += !mrc_health_path_ok(a[k], d, e, back + MS / 2);
			CHECK(acked > MRCE_CTRL_HEALTH_MAX);
			/* Due at once, between periods, although no failure is
			 * left: the retraction. */
			CHECK(share_to(a[k], src[k], &told[k], o, back + MS, 0));
		}
		mrc_health_eval(o, back + MS);
		mrc_health_link_get(o, link, &li);
		if (li.state != MRC_HEALTH_OK || convicted(o))
			fail_msg("round %d (seed %llu): healthy link %u is %s after both "
				 "retirements proved spurious", r, (unsigned long long)g_seed,
				 link, mrc_health_state_name(li.state));
		/* Not again between periods; once more at the next period (a
		 * receiver's rate bound may have dropped it), then nothing. */
		for (int k = 0; k < 2; k++) {
			CHECK(!share_to(a[k], src[k], &told[k], o, back + 2 * MS, 0));
			CHECK(share_to(a[k], src[k], &told[k], o, back + 3 * MS, 1));
			CHECK(!share_to(a[k], src[k], &told[k], o, back + 4 * MS, 1));
		}
		for (int k = 0; k < 2; k++)
			mrc_health_free(a[k]);
		mrc_health_free(o);
		mrc_topo_free(t);
	}
}

/* ---- the engine: out of use, yet answering probes --------------------- */

static uint8_t ev_state(struct etest *t, int node, uint32_t peer, uint32_t ev)
{
	struct mrce_ev_info i;
	CHECK_EQ(mrce_ev_info(E(t, node), peer, ev, &i), 0);
	return i.state;
}

/* Node 0 retired EV `ev` to node 1 (its own failure, probing); node 1 has
 * the same EV out of use on shared evidence, DENIED (denied != 0) or by
 * mrce_ev_set_bad.  Runs 50 ms of probing: 1 when node 0's EV is GOOD. */
static int peer_heals(int denied, uint32_t ev)
{
	struct chan_cfg cc;
	struct etest t;
	cfg_two(&cc, 8, 2);
	CHECK_EQ(etest_init(&t, &cc, 1 << 16, 1 << 16, 0), 0);
	uint32_t p01 = t.ch->node[0].peer[1], p10 = t.ch->node[1].peer[0];
	if (denied)
		CHECK_EQ(mrce_ev_set_denied(E(&t, 1), t.ch->now, p10, ev, 1), 0);
	else
		CHECK_EQ(mrce_ev_set_bad(E(&t, 1), t.ch->now, p10, ev), 0);
	CHECK_EQ(mrce_ev_set_bad(E(&t, 0), t.ch->now, p01, ev), 0);
	CHECK_EQ(ev_state(&t, 0, p01, ev), MRCE_EV_ASSUMED_BAD);
	CHECK_EQ(ev_state(&t, 1, p10, ev), denied ? MRCE_EV_DENIED : MRCE_EV_ASSUMED_BAD);
	CHECK_EQ(chan_run(t.ch, NULL, NULL, 50 * MS, ETEST_MAX_STEPS), 0);
	struct mrce_ev_info i;
	CHECK_EQ(mrce_ev_info(E(&t, 0), p01, ev, &i), 0);
	CHECK(i.probes_sent >= 2);       /* it did probe */
	int healed = i.state == MRCE_EV_GOOD;
	/* Node 1's own: probed back too when out of use, never when DENIED. */
	CHECK_EQ(ev_state(&t, 1, p10, ev), denied ? MRCE_EV_DENIED : MRCE_EV_GOOD);
	etest_fini(&t);
	return healed;
}

static void bad_answers_probes(void **state)
{
	uint32_t ev = (uint32_t)(rnd() % 8);
	CHECK(peer_heals(0, ev));
	CHECK(!peer_heals(1, ev));
}

int main(void)
{
	etest_seed("test_health_feed", 1);
	const struct CMUnitTest t[] = {
		cmocka_unit_test_setup(sending_is_no_proof, reseed),
		cmocka_unit_test_setup(acks_prove_work, reseed),
		cmocka_unit_test_setup(lost_probe_proves_nothing, reseed),
		cmocka_unit_test_setup(tick_skew_convicts_nothing, reseed),
		cmocka_unit_test_setup(spurious_convicts_nothing, reseed),
		cmocka_unit_test_setup_teardown(bad_answers_probes, reseed, etest_teardown),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}

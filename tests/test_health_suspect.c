/* health/suspect.c (docs/health.md "Suspected uplinks"): which engine
 * event makes a host suspect a link of its own at once, and which of its
 * paths cross it.  On a 2-plane Clos (4 leaves x 4 spines x 2 hosts):
 *   failure_names_uplink: an EV retired for loss, an RTO or a lost probe
 *     names its path's leaf-spine link on the host's side, in either
 *     plane; the same EV to a host of another leaf crosses that link, to
 *     a host of its own leaf too (up to the spine and back), other EVs do
 *     not;
 *   told_names_tellers_uplink: a failure a peer told names that peer's
 *     uplink, which its leaf-mates' paths and other hosts' paths into
 *     its leaf through that spine cross; a working path or a one-hop
 *     one names nothing;
 *   no_failure_no_suspect: health's own denial (DENY, the suspects
 *     themselves), admin, a path back, a probe result, the floor and a
 *     one-hop path within the leaf name nothing;
 *   held_paths_locate: every leaf-spine link in turn dead, one host's
 *     failure across it told, and the host under test holding its own
 *     paths across it out of use on that word (ASSUMED_BAD, DENY): while
 *     their probes go unanswered (health/feed.h MRC_HEALTH_HELD_PROBES)
 *     they are failures, and the link is DENIED, no other located; before
 *     that, or with a probe answered, it stays SUSPECT.  Without
 *     mrc_health_feed_held the one told failure is all there is: the
 *     emulated fabric's blackhole left suspect on every host, never
 *     located (tests/root/health.sh, seed 1795865765). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "health/feed.h"
#include "health/suspect.h"

static struct mrc_topo *clos(void)
{
	struct mrc_topo_gen g = { .planes = 2, .leaves_per_plane = 4,
		.spines_per_plane = 4, .hosts_per_leaf = 2 };
	struct mrc_topo *t = NULL;
	assert_int_equal(mrc_topo_generate(&g, &t, NULL, 0), 0);
	return t;
}

static struct mrce_event retired(uint8_t reason)
{
	return (struct mrce_event){ .type = MRCE_EVT_EV_STATE, .old_state = MRCE_EV_GOOD,
		.new_state = MRCE_EV_ASSUMED_BAD, .reason = reason };
}

static void failure_names_uplink(void **st)
{
	(void)st;
	struct mrc_topo *t = clos();
	static const uint8_t why[] = { MRCE_RSN_LOSS, MRCE_RSN_RTO, MRCE_RSN_PROBE_LOST };
	for (uint32_t plane = 0; plane < 2; plane++)
		for (size_t k = 0; k < sizeof(why); k++) {
			/* h0 (leaf 0) -> h4 (leaf 2) through spine 3 of the plane */
			uint32_t ev = (uint32_t)mrc_topo_ev_of(t, plane, 3), link = UINT32_MAX;
			struct mrce_event e = retired(why[k]);
			assert_int_equal(mrc_health_suspect_uplink(t, 0, 4, ev, &e, &link), 1);
			assert_int_equal(link, t->leaf_spine[plane][0 * 4 + 3]);
			/* h0 -> h6 (leaf 3) and h0 -> h1 (its own leaf) on that spine */
			assert_int_equal(mrc_health_path_crosses(t, 0, 6, ev, link), 1);
			assert_int_equal(mrc_health_path_crosses(t, 0, 1, ev, link), 1);
			/* other spines, the other plane, another host's uplink */
			for (uint32_t s = 0; s < 3; s++)
				assert_int_equal(mrc_health_path_crosses(t, 0, 6,
					(uint32_t)mrc_topo_ev_of(t, plane, s), link), 0);
			assert_int_equal(mrc_health_path_crosses(t, 0, 6,
				(uint32_t)mrc_topo_ev_of(t, 1 - plane, 3), link), 0);
			assert_int_equal(mrc_health_path_crosses(t, 2, 6, ev, link), 0);
		}
	mrc_topo_free(t);
}

/* A peer's failure told (a HEALTH observation): its uplink, whatever
 * the receiver; a working path, or one that stays in its leaf, none. */
static void told_names_tellers_uplink(void **st)
{
	(void)st;
	struct mrc_topo *t = clos();
	uint32_t ev = (uint32_t)mrc_topo_ev_of(t, 1, 2), link = 7;
	struct mrc_health_obs o = { .src = 3, .dst = 6, .ev = (uint16_t)ev, .ok = 0 };
	assert_int_equal(mrc_health_suspect_told(t, &o, &link), 1);
	assert_int_equal(link, t->leaf_spine[1][1 * 4 + 2]);   /* h3's leaf 1 */
	/* h2 shares that uplink; h0 reaches h3's leaf through it. */
	assert_int_equal(mrc_health_path_crosses(t, 2, 0, ev, link), 1);
	assert_int_equal(mrc_health_path_crosses(t, 0, 2, ev, link), 1);
	assert_int_equal(mrc_health_path_crosses(t, 0, 4, ev, link), 0);
	o.ok = 1;
	link = 7;
	assert_int_equal(mrc_health_suspect_told(t, &o, &link), 0);
	o.ok = 0;
	o.dst = 2;
	o.ev = (uint16_t)mrc_topo_ev_of(t, 1, MRC_PATH_SPINE_DIRECT);
	assert_int_equal(mrc_health_suspect_told(t, &o, &link), 0);
	o.dst = 3;   /* itself: no path */
	assert_int_equal(mrc_health_suspect_told(t, &o, &link), 0);
	assert_int_equal(link, 7);
	mrc_topo_free(t);
}

static void no_failure_no_suspect(void **st)
{
	(void)st;
	struct mrc_topo *t = clos();
	uint32_t ev = (uint32_t)mrc_topo_ev_of(t, 0, 1), link = 7;
	static const uint8_t why[] = { MRCE_RSN_NONE, MRCE_RSN_DENY, MRCE_RSN_ALLOW,
		MRCE_RSN_PROBE_OK, MRCE_RSN_SPURIOUS };
	for (size_t k = 0; k < sizeof(why); k++) {
		struct mrce_event e = retired(why[k]);
		assert_int_equal(mrc_health_suspect_uplink(t, 0, 4, ev, &e, &link), 0);
	}
	struct mrce_event back = retired(MRCE_RSN_PROBE_OK);
	back.old_state = MRCE_EV_ASSUMED_BAD;
	back.new_state = MRCE_EV_GOOD;
	struct mrce_event denied = retired(MRCE_RSN_DENY);
	denied.new_state = MRCE_EV_DENIED;
	struct mrce_event floor = retired(MRCE_RSN_LOSS);
	floor.type = MRCE_EVT_FLOOR;
	floor.new_state = MRCE_EV_GOOD;
	struct mrce_event probe = { .type = MRCE_EVT_PROBE_RESULT, .rtt_ns = UINT64_MAX };
	assert_int_equal(mrc_health_suspect_uplink(t, 0, 4, ev, &back, &link), 0);
	assert_int_equal(mrc_health_suspect_uplink(t, 0, 4, ev, &denied, &link), 0);
	assert_int_equal(mrc_health_suspect_uplink(t, 0, 4, ev, &floor, &link), 0);
	assert_int_equal(mrc_health_suspect_uplink(t, 0, 4, ev, &probe, &link), 0);
	/* The one-hop path between the two hosts of leaf 0 has no uplink. */
	struct mrce_event lost = retired(MRCE_RSN_LOSS);
	uint32_t direct = (uint32_t)mrc_topo_ev_of(t, 0, MRC_PATH_SPINE_DIRECT);
	assert_int_equal(mrc_health_suspect_uplink(t, 0, 1, direct, &lost, &link), 0);
	/* No such pair or EV. */
	assert_int_equal(mrc_health_suspect_uplink(t, 0, 0, ev, &lost, &link), 0);
	assert_int_equal(mrc_health_suspect_uplink(t, 0, 4, 999, &lost, &link), 0);
	assert_int_equal(link, 7);
	assert_int_equal(mrc_health_path_crosses(t, 0, 4, 999, 7), 0);
	mrc_topo_free(t);
}

/* Host x's own paths (every peer, every EV) at a tick: those across dead
 * held out of use since t0 with `sent` probes out since and `ok` answered,
 * the others GOOD and acknowledged now.  Returns the held ones. */
static unsigned tick_x(const struct mrc_topo *t, struct mrc_health *h, uint32_t x,
		       uint32_t dead, uint64_t t0, uint32_t sent, uint32_t ok,
		       struct mrc_health_held *held, uint64_t now)
{
	unsigned n = 0;
	uint32_t nev = mrc_topo_ev_count(t);
	for (uint32_t dst = 0; dst < t->n_hosts; dst++)
		for (uint32_t ev = 0; dst != x && ev < nev; ev++) {
			if (!mrc_topo_path(t, x, dst, ev, &(struct mrc_path){ 0 }) &&
			    mrc_health_path_crosses(t, x, dst, ev, dead)) {
				struct mrce_ev_info i = { .state = MRCE_EV_ASSUMED_BAD,
					.last_reason = MRCE_RSN_DENY, .last_change_ns = t0,
					.probes_sent = sent, .probes_ok = ok };
				mrc_health_feed_held(h, dst, ev, &i, &held[dst * nev + ev], now);
				n++;
			} else {
				struct mrce_ev_info i = { .state = MRCE_EV_GOOD, .tx_pkts = 10,
					.last_ack_ns = now };
				mrc_health_feed_ev(h, dst, ev, &i, 0, now);
			}
		}
	return n;
}

/* dead (plane, leaf, spine) blackholed; answered: one probe came back. */
static void held_case(const struct mrc_topo *t, uint32_t plane, uint32_t leaf,
		      uint32_t spine, int answered, struct mrc_health_held *held)
{
	uint32_t dead = t->leaf_spine[plane][leaf * 4 + spine];
	uint32_t ev = (uint32_t)mrc_topo_ev_of(t, plane, spine);
	/* a (that leaf) told a failure to b (the next leaf); x (two leaves
	 * on) holds its own paths across dead on that word */
	uint32_t a = 2 * leaf, b = 2 * ((leaf + 1) % 4), x = 2 * ((leaf + 2) % 4);
	uint64_t t0 = 1000000000ull, ms = 1000000ull, age = 0;
	struct mrc_health *h;
	struct mrc_health_link li;
	assert_int_equal(mrc_health_new(t, x, NULL, &h), 0);
	struct mrc_health_obs told = { .src = a, .dst = b, .ev = (uint16_t)ev };
	assert_int_equal(mrc_health_merge(h, a, &told, &age, 1, t0), 1);
	/* The hold's event: the baseline. */
	assert_true(tick_x(t, h, x, dead, t0, 0, 0, held, t0) >= 2);
	/* Probes 1-4 out (0.5, 2.5, 6.5, 14.5 ms), unanswered: no failure
	 * yet, and one failure is no location. */
	for (uint32_t k = 1; k <= 4; k++) {
		uint64_t now = t0 + k * 5 * ms;
		tick_x(t, h, x, dead, t0, k, 0, held, now);
		mrc_health_eval(h, now);
		assert_int_equal(mrc_health_link_get(h, dead, &li), 0);
		assert_int_equal(li.state, MRC_HEALTH_SUSPECT);
	}
	/* The fifth out (30.5 ms). */
	uint64_t now = t0 + 35 * ms;
	tick_x(t, h, x, dead, t0, 5, (uint32_t)answered, held, now);
	mrc_health_eval(h, now);
	assert_int_equal(mrc_health_link_get(h, dead, &li), 0);
	assert_int_equal(li.state, answered ? MRC_HEALTH_SUSPECT : MRC_HEALTH_DENIED);
	size_t n;
	mrc_health_links(h, MRC_HEALTH_LOCATED, NULL, 0, &n);
	assert_int_equal(n, answered ? 0 : 1);
	mrc_health_free(h);
}

static void held_paths_locate(void **st)
{
	(void)st;
	struct mrc_topo *t = clos();
	struct mrc_health_held held[8 * 64];
	assert_true(t->n_hosts * mrc_topo_ev_count(t) <= 8 * 64);
	for (uint32_t k = 0; k < 2 * 4 * 4 * 2; k++) {
		memset(held, 0, sizeof(held));
		held_case(t, k / 32, k / 8 % 4, k / 2 % 4, (int)(k % 2), held);
	}
	mrc_topo_free(t);
}

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(failure_names_uplink),
		cmocka_unit_test(told_names_tellers_uplink),
		cmocka_unit_test(no_failure_no_suspect),
		cmocka_unit_test(held_paths_locate),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}

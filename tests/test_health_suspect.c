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
 *     one-hop path within the leaf name nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

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

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(failure_names_uplink),
		cmocka_unit_test(told_names_tellers_uplink),
		cmocka_unit_test(no_failure_no_suspect),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}

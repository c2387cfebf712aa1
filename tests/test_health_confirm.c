/* health/: a conviction congestion cannot give (docs/health.md
 * "Confirmation"): a link is LOCATED or DENIED only once it has been the
 * located explanation at every eval for confirm_ns.  Seeded random Clos
 * fabrics, 20 rounds each, the seed printed on failure. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "tests/support/health_rig.h"
#include "tests/support/seeded.h"

#include "health/health.h"
#include "topology/topo.h"

#define MS 1000000ull
#define TICK (10 * MS)
#define CONFIRM (4 * TICK)      /* mrcd's: MRC_HEALTH_CONFIRM_TICKS ticks */
#define ROUNDS 20

static uint32_t g_hpl;   /* the last random_clos's hosts per leaf */

/* At least 3 leaves: with 2, a leaf's failed paths through a spine cross
 * its link and the other leaf's alike (a tie, nothing located). */
static struct mrc_topo *random_clos(void)
{
	struct mrc_topo_gen g = {
		.planes = 1 + (uint32_t)(rnd() % 3),
		.leaves_per_plane = 3 + (uint32_t)(rnd() % 5),
		.spines_per_plane = 2 + (uint32_t)(rnd() % 5),
		.hosts_per_leaf = 2 + (uint32_t)(rnd() % 4),
	};
	struct mrc_topo *t = NULL;
	char err[MRC_TOPO_ERRLEN];
	g_hpl = g.hosts_per_leaf;
	CHECK(mrc_topo_generate(&g, &t, err, sizeof(err)) == 0, "%s", err);
	return t;
}

static size_t count_at_least(const struct mrc_health *h, uint8_t min)
{
	size_t n;
	uint32_t ids[1];
	mrc_health_links(h, min, ids, 0, &n);
	return n;
}

static struct mrc_health *new_health(const struct mrc_topo *t, uint32_t self,
				     uint64_t confirm)
{
	struct mrc_health_cfg cfg = { .max_obs = 1u << 17, .confirm_ns = confirm };
	struct mrc_health *h;
	assert_int_equal(mrc_health_new(t, self, &cfg, &h), 0);
	return h;
}

/* Congestion's shape: two to four hosts' paths across a healthy link fail
 * at once (queueing read as loss: retired, nobody's working path through
 * the link newer yet), and stay retired for up to 3 ticks; within a tick
 * of the failures other hosts' paths across the link are acknowledged
 * (the queue drains).  Never LOCATED, never DENIED, at any eval; with no
 * confirmation (confirm 0, the rule before) the first eval denies it. */
static void congested_moment_convicts_nothing(void **state)
{
	for (int r = 0; r < ROUNDS; r++) {
		struct mrc_topo *t = random_clos();
		uint32_t leaf, link = rig_core_link(t, &leaf), self = (uint32_t)(rnd() % t->n_hosts);
		uint32_t nev = mrc_topo_ev_count(t), nfail = 2 + (uint32_t)(rnd() % 3);
		uint32_t held = 1 + (uint32_t)(rnd() % 3);   /* ticks retired */
		struct mrc_health *h = new_health(t, self, CONFIRM);
		struct mrc_health *h0 = new_health(t, self, 0);
		uint64_t t0 = 100 * MS;
		uint32_t failers[4], nf = 0;
		/* Failures: 2-4 hosts of the link's leaf (all it has if
		 * fewer), each every path of theirs across the link. */
		for (; nf < nfail && nf < g_hpl; nf++)
			failers[nf] = leaf * g_hpl + nf;
		bool crossed = false;
		for (uint64_t k = 0; k <= 8; k++) {
			uint64_t now = t0 + k * TICK;
			for (uint32_t i = 0; i < nf && k < held; i++)
				for (uint32_t dst = 0; dst < t->n_hosts; dst++)
					for (uint32_t ev = 0; ev < nev; ev++)
						if (dst != failers[i] &&
						    rig_crosses(t, failers[i], dst, ev, link)) {
							rig_see(h, t, self, failers[i], dst, ev, false, now);
							rig_see(h0, t, self, failers[i], dst, ev, false, now);
							crossed = true;
						}
			/* From the next tick on, the rest of the hosts'
			 * paths across it are acknowledged (and the failed
			 * ones once they come back). */
			for (uint32_t src = 0; k >= 1 && src < t->n_hosts; src++)
				for (uint32_t dst = 0; dst < t->n_hosts; dst++)
					for (uint32_t ev = 0; ev < nev; ev++) {
						bool failer = false;
						for (uint32_t i = 0; i < nf; i++)
							failer |= failers[i] == src;
						if (src == dst || (failer && k < held) ||
						    !rig_crosses(t, src, dst, ev, link))
							continue;
						rig_see(h, t, self, src, dst, ev, true, now - MS);
						rig_see(h0, t, self, src, dst, ev, true, now - MS);
					}
			mrc_health_eval(h, now);
			mrc_health_eval(h0, now);
			struct mrc_health_link li;
			mrc_health_link_get(h, link, &li);
			CHECK(li.state < MRC_HEALTH_LOCATED, "round %d tick %llu: %s", r,
			      (unsigned long long)k, mrc_health_state_name(li.state));
			CHECK(count_at_least(h, MRC_HEALTH_LOCATED) == 0, "round %d tick %llu", r,
			      (unsigned long long)k);
			if (k == 0 && crossed) {
				/* The fault the test injects is one the rule
				 * before convicts. */
				mrc_health_link_get(h0, link, &li);
				CHECK(li.state >= MRC_HEALTH_LOCATED, "round %d: confirm 0 %s", r,
				      mrc_health_state_name(li.state));
			}
		}
		CHECK(crossed, "round %d: no failure injected", r);
		mrc_health_free(h);
		mrc_health_free(h0);
		mrc_topo_free(t);
	}
}

/* Loss: a blackholed link's paths fail at every tick and none works: it
 * is SUSPECT until it has been located for CONFIRM, then DENIED, and only
 * it; its record says since when it was located and its oldest failure. */
static void loss_convicts_after_confirm(void **state)
{
	for (int r = 0; r < ROUNDS; r++) {
		struct mrc_topo *t = random_clos();
		uint32_t dead = rig_core_link(t, NULL), self = (uint32_t)(rnd() % t->n_hosts);
		struct mrc_health *h = new_health(t, self, CONFIRM);
		uint64_t t0 = 100 * MS;
		for (uint64_t k = 0; k <= CONFIRM / TICK + 1; k++) {
			uint64_t now = t0 + k * TICK;
			rig_all_paths(h, t, self, dead, now);
			mrc_health_eval(h, now);
			struct mrc_health_link li;
			mrc_health_link_get(h, dead, &li);
			if (now - t0 < CONFIRM) {
				CHECK(li.state == MRC_HEALTH_SUSPECT, "round %d tick %llu: %s", r,
				      (unsigned long long)k, mrc_health_state_name(li.state));
				CHECK(count_at_least(h, MRC_HEALTH_LOCATED) == 0, "round %d", r);
			} else {
				CHECK(li.state == MRC_HEALTH_DENIED, "round %d tick %llu: %s", r,
				      (unsigned long long)k, mrc_health_state_name(li.state));
				CHECK(li.changed_ns == t0 + CONFIRM, "round %d: changed %llu", r,
				      (unsigned long long)li.changed_ns);
				CHECK(count_at_least(h, MRC_HEALTH_LOCATED) == 1, "round %d", r);
			}
			CHECK(li.loc_ns == t0 && li.fail_ns == now, "round %d: located since %llu, "
			      "first failure %llu", r, (unsigned long long)li.loc_ns,
			      (unsigned long long)li.fail_ns);
		}
		mrc_health_free(h);
		mrc_topo_free(t);
	}
}

/* The evals must be in a row: a dead link's paths working for a moment
 * (an eval at which it is exonerated) starts its confirmation again. */
static void broken_run_starts_again(void **state)
{
	for (int r = 0; r < ROUNDS; r++) {
		struct mrc_topo *t = random_clos();
		uint32_t dead = rig_core_link(t, NULL), self = (uint32_t)(rnd() % t->n_hosts);
		struct mrc_health *h = new_health(t, self, CONFIRM);
		uint64_t t0 = 100 * MS, k;
		for (k = 0; k < CONFIRM / TICK; k++) {
			rig_all_paths(h, t, self, dead, t0 + k * TICK);
			mrc_health_eval(h, t0 + k * TICK);
		}
		/* All paths work at this tick: the link is OK again. */
		uint64_t t1 = t0 + k * TICK;
		rig_all_paths(h, t, self, MRC_TOPO_NONE, t1);
		mrc_health_eval(h, t1);
		struct mrc_health_link li;
		mrc_health_link_get(h, dead, &li);
		CHECK(li.state == MRC_HEALTH_OK && li.loc_ns == 0, "round %d: %s", r,
		      mrc_health_state_name(li.state));
		for (k = 1; k <= CONFIRM / TICK + 1; k++) {
			uint64_t now = t1 + k * TICK;
			rig_all_paths(h, t, self, dead, now);
			mrc_health_eval(h, now);
			mrc_health_link_get(h, dead, &li);
			bool due = now - (t1 + TICK) >= CONFIRM;
			CHECK(due ? li.state == MRC_HEALTH_DENIED : li.state == MRC_HEALTH_SUSPECT,
			      "round %d tick %llu: %s", r, (unsigned long long)k,
			      mrc_health_state_name(li.state));
		}
		mrc_health_free(h);
		mrc_topo_free(t);
	}
}

int main(void)
{
	seed_init("test_health_confirm");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(congested_moment_convicts_nothing, reseed),
		cmocka_unit_test_setup(loss_convicts_after_confirm, reseed),
		cmocka_unit_test_setup(broken_run_starts_again, reseed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* health/: localisation of failed fabric links from path outcomes, on
 * seeded random Clos fabrics (docs/health.md).  Each test names the claim
 * of docs/health.md it proves. */
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
#include "tests/support/health_rig.h"
#include "tests/support/seeded.h"

#include "health/health.h"
#include "topology/topo.h"

#define MS 1000000ull
#define ROUNDS 20

static struct mrc_topo *random_clos(void)
{
	struct mrc_topo_gen g = {
		.planes = 1 + (uint32_t)(rnd() % 4),
		.leaves_per_plane = 2 + (uint32_t)(rnd() % 7),
		.spines_per_plane = 2 + (uint32_t)(rnd() % 7),
		.hosts_per_leaf = 2 + (uint32_t)(rnd() % 5),
	};
	struct mrc_topo *t = NULL;
	char err[MRC_TOPO_ERRLEN];
	CHECK(mrc_topo_generate(&g, &t, err, sizeof(err)) == 0, "%s", err);
	return t;
}

/* Host src's outcomes on every EV to `peers` random peers (every host
 * once when peers >= n_hosts: random draws with replacement would miss
 * some, and a test that says "every path" must not depend on the seed),
 * as the blackholed link `dead` (NONE: none) makes them; local when src
 * is h's own host, else merged as another host's report. */
static void observe(struct mrc_health *h, const struct mrc_topo *t, uint32_t self,
		    uint32_t src, uint32_t dead, unsigned peers, uint64_t now)
{
	uint32_t nev = mrc_topo_ev_count(t);
	for (unsigned k = 0; k < peers; k++) {
		uint32_t dst = peers >= t->n_hosts ? k : (uint32_t)(rnd() % t->n_hosts);
		if (dst == src)
			continue;
		for (uint32_t ev = 0; ev < nev; ev++) {
			struct mrc_path p;
			if (mrc_topo_path(t, src, dst, ev, &p))
				continue;
			bool ok = dead == MRC_TOPO_NONE || !rig_path_crosses(&p, dead);
			if (src == self) {
				assert_int_equal(ok ? mrc_health_path_ok(h, dst, ev, now)
						    : mrc_health_path_fail(h, dst, ev, now), 0);
				continue;
			}
			struct mrc_health_obs o = { .src = src, .dst = dst, .ev = (uint16_t)ev,
				.ok = ok };
			uint64_t age = 0;
			assert_true(mrc_health_merge(h, src, &o, &age, 1, now) >= 0);
		}
	}
}

static size_t count_at_least(const struct mrc_health *h, uint8_t min)
{
	size_t n;
	uint32_t ids[1];
	mrc_health_links(h, min, ids, 0, &n);
	return n;
}

/* "A blackholed link is located": every host's outcomes on a few random
 * peers each, one random leaf-spine link dead: that link and only it is
 * DENIED. */
static void dead_link_found(void **state)
{
	for (int r = 0; r < ROUNDS; r++) {
		struct mrc_topo *t = random_clos();
		uint32_t dead = rig_core_link(t, NULL);
		uint32_t self = (uint32_t)(rnd() % t->n_hosts);
		struct mrc_health *h;
		/* Every path of every pair: up to 48 x 48 x 36. */
		struct mrc_health_cfg cfg = { .max_obs = 1u << 17 };
		assert_int_equal(mrc_health_new(t, self, &cfg, &h), 0);
		for (uint32_t src = 0; src < t->n_hosts; src++)
			observe(h, t, self, src, dead, t->n_hosts, 10 * MS);
		mrc_health_eval(h, 10 * MS);
		struct mrc_health_link li;
		assert_int_equal(mrc_health_link_get(h, dead, &li), 0);
		CHECK(li.state == MRC_HEALTH_DENIED, "round %d: link %u is %s", r, dead,
		      mrc_health_state_name(li.state));
		CHECK(li.fail_hosts >= 2 && li.changed_ns == 10 * MS, "round %d", r);
		CHECK(count_at_least(h, MRC_HEALTH_LOCATED) == 1, "round %d: %zu located",
		      r, count_at_least(h, MRC_HEALTH_LOCATED));
		/* A path of self across it is denied unless self has seen it. */
		for (uint32_t dst = 0; dst < t->n_hosts; dst++) {
			for (uint32_t ev = 0; dst != self && ev < mrc_topo_ev_count(t); ev++) {
				struct mrc_path p;
				if (mrc_topo_path(t, self, dst, ev, &p))
					continue;
				int d = mrc_health_path_denied(h, dst, ev);
				CHECK(!d || rig_path_crosses(&p, dead), "round %d: healthy path denied", r);
			}
		}
		mrc_health_free(h);
		mrc_topo_free(t);
	}
}

/* With sparse evidence (a permutation: one peer per host) nothing but the
 * dead link is ever located, and it is when its failures are enough. */
static void sparse_never_wrong(void **state)
{
	for (int r = 0; r < ROUNDS; r++) {
		struct mrc_topo *t = random_clos();
		uint32_t dead = rig_core_link(t, NULL);
		struct mrc_health *h;
		assert_int_equal(mrc_health_new(t, 0, NULL, &h), 0);
		for (uint32_t src = 0; src < t->n_hosts; src++)
			observe(h, t, 0, src, dead, 1, 5 * MS);
		mrc_health_eval(h, 5 * MS);
		uint32_t ids[4];
		size_t n;
		mrc_health_links(h, MRC_HEALTH_LOCATED, ids, 4, &n);
		CHECK(n <= 1 && (n == 0 || ids[0] == dead), "round %d: %zu located, first %u, dead %u",
		      r, n, n ? ids[0] : 0, dead);
		mrc_health_free(h);
		mrc_topo_free(t);
	}
}

/* Two links that explain the same failures equally (hosts 0 and 1 of leaf
 * 0 fail only towards leaf 1 through spine 1, nothing else seen): a tie,
 * both SUSPECT and neither located, for either could be the dead one. */
static void tie_locates_nothing(void **state)
{
	struct mrc_topo *t;
	struct mrc_topo_gen g = { .planes = 1, .leaves_per_plane = 2,
		.spines_per_plane = 2, .hosts_per_leaf = 2 };
	assert_int_equal(mrc_topo_generate(&g, &t, NULL, 0), 0);
	struct mrc_health *h;
	assert_int_equal(mrc_health_new(t, 0, NULL, &h), 0);
	assert_int_equal(mrc_health_path_fail(h, 2, 1, MS), 0);
	assert_int_equal(mrc_health_path_ok(h, 2, 0, MS), 0);
	struct mrc_health_obs o[2] = { { .src = 1, .dst = 3, .ev = 1, .ok = 0 },
				       { .src = 1, .dst = 3, .ev = 0, .ok = 1 } };
	uint64_t age[2] = { 0, 0 };
	assert_int_equal(mrc_health_merge(h, 1, o, age, 2, MS), 2);
	mrc_health_eval(h, MS);
	assert_int_equal(count_at_least(h, MRC_HEALTH_LOCATED), 0);
	struct mrc_health_link a, b;
	mrc_health_link_get(h, t->leaf_spine[0][0 * 2 + 1], &a);
	mrc_health_link_get(h, t->leaf_spine[0][1 * 2 + 1], &b);
	assert_int_equal(a.state, MRC_HEALTH_SUSPECT);
	assert_int_equal(b.state, MRC_HEALTH_SUSPECT);
	assert_int_equal(count_at_least(h, MRC_HEALTH_SUSPECT), 2);
	mrc_health_free(h);
	mrc_topo_free(t);
}

/* "Congestion alone convicts nothing": every path delivers, many with ECN
 * and trims: no link leaves OK, and the congestion is counted. */
static void congestion_convicts_nothing(void **state)
{
	for (int r = 0; r < ROUNDS; r++) {
		struct mrc_topo *t = random_clos();
		uint32_t self = (uint32_t)(rnd() % t->n_hosts);
		struct mrc_health *h;
		assert_int_equal(mrc_health_new(t, self, NULL, &h), 0);
		for (uint32_t src = 0; src < t->n_hosts; src++)
			observe(h, t, self, src, MRC_TOPO_NONE, 4, MS);
		uint64_t signals = 0;
		for (int k = 0; k < 200; k++) {
			uint32_t dst = (uint32_t)(rnd() % t->n_hosts);
			uint32_t ev = (uint32_t)(rnd() % mrc_topo_ev_count(t));
			if (mrc_health_path_congested(h, dst, ev, 3) == 0)
				signals++;
		}
		CHECK(signals > 0, "round %d: no congestion injected", r);
		mrc_health_eval(h, 2 * MS);
		CHECK(count_at_least(h, MRC_HEALTH_SUSPECT) == 0, "round %d", r);
		uint64_t cong = 0;
		for (uint32_t l = 0; l < t->n_links; l++) {
			struct mrc_health_link li;
			mrc_health_link_get(h, l, &li);
			cong += li.cong;
		}
		CHECK(cong >= signals * 3 * 2, "round %d: congestion not counted", r);
		mrc_health_free(h);
		mrc_topo_free(t);
	}
}

/* "A lying minority denies no healthy link": k_hosts - 1 hosts report every
 * path of theirs across a healthy link as failed, newest of all (so no
 * earlier working path exonerates it): it may be LOCATED, never DENIED;
 * once honest hosts' working paths across it are newer, it is OK. */
static void liars_deny_nothing(void **state)
{
	for (int r = 0; r < ROUNDS; r++) {
		struct mrc_topo *t = random_clos();
		uint32_t target = rig_core_link(t, NULL);
		struct mrc_health_cfg cfg = { .k_hosts = 3, .max_obs = 1u << 17 };
		struct mrc_health *h;
		assert_int_equal(mrc_health_new(t, 0, &cfg, &h), 0);
		for (uint32_t src = 0; src < t->n_hosts; src++)
			observe(h, t, 0, src, MRC_TOPO_NONE, 2, MS);
		uint32_t liars = 0, nev = mrc_topo_ev_count(t);
		for (uint32_t src = 1; src < t->n_hosts && liars < cfg.k_hosts - 1; src++, liars++)
			for (uint32_t dst = 0; dst < t->n_hosts; dst++)
				for (uint32_t ev = 0; dst != src && ev < nev; ev++) {
					struct mrc_path p;
					if (mrc_topo_path(t, src, dst, ev, &p) || !rig_path_crosses(&p, target))
						continue;
					struct mrc_health_obs o = { .src = src, .dst = dst,
						.ev = (uint16_t)ev, .ok = 0 };
					uint64_t age = 0;
					mrc_health_merge(h, src, &o, &age, 1, 2 * MS);
				}
		mrc_health_eval(h, 2 * MS);
		struct mrc_health_link li;
		mrc_health_link_get(h, target, &li);
		CHECK(count_at_least(h, MRC_HEALTH_DENIED) == 0, "round %d: %s", r,
		      mrc_health_state_name(li.state));
		/* Honest hosts' fresh working paths (all of theirs) exonerate it. */
		for (uint32_t src = cfg.k_hosts; src < t->n_hosts; src++)
			observe(h, t, 0, src, MRC_TOPO_NONE, t->n_hosts, 3 * MS);
		mrc_health_eval(h, 3 * MS);
		mrc_health_link_get(h, target, &li);
		CHECK(li.state == MRC_HEALTH_OK, "round %d: target %s", r,
		      mrc_health_state_name(li.state));
		mrc_health_free(h);
		mrc_topo_free(t);
	}
}

/* A host speaks only for its own paths; evidence expires; a healed link is
 * re-admitted once its witnesses' probes answer; self's own observation of
 * a path overrides the shared denial. */
static void merge_rules_expiry_heal(void **state)
{
	struct mrc_topo *t;
	struct mrc_topo_gen g = { .planes = 1, .leaves_per_plane = 4,
		.spines_per_plane = 4, .hosts_per_leaf = 4 };
	assert_int_equal(mrc_topo_generate(&g, &t, NULL, 0), 0);
	uint32_t dead = t->leaf_spine[0][1 * 4 + 2];   /* p0l1-p0s2 */
	struct mrc_health_cfg cfg = { .ttl_ns = 100 * MS };
	struct mrc_health *h;
	assert_int_equal(mrc_health_new(t, 0, &cfg, &h), 0);
	/* Host 5 cannot report host 6's paths. */
	struct mrc_health_obs o = { .src = 6, .dst = 1, .ev = 0, .ok = 0 };
	uint64_t age = 0;
	assert_int_equal(mrc_health_merge(h, 5, &o, &age, 1, MS), 0);
	/* Evidence older than ttl is refused. */
	o.src = 5;
	age = cfg.ttl_ns;
	assert_int_equal(mrc_health_merge(h, 5, &o, &age, 1, MS * 200), 0);
	for (uint32_t src = 1; src < t->n_hosts; src++)
		observe(h, t, 0, src, dead, t->n_hosts, 10 * MS);
	mrc_health_eval(h, 10 * MS);
	struct mrc_health_link li;
	mrc_health_link_get(h, dead, &li);
	assert_int_equal(li.state, MRC_HEALTH_DENIED);
	/* Host 0 (leaf 0) to host 4 (leaf 1) via spine 2 crosses it: denied,
	 * until host 0 has its own outcome of that path. */
	assert_int_equal(mrc_health_path_denied(h, 4, 2), 1);
	assert_int_equal(mrc_health_path_denied(h, 4, 1), 0);
	/* Seen working before the denial: no override. */
	assert_int_equal(mrc_health_path_ok(h, 4, 2, 5 * MS), 0);
	assert_int_equal(mrc_health_path_denied(h, 4, 2), 1);
	assert_int_equal(mrc_health_path_fail(h, 4, 2, 11 * MS), 0);
	assert_int_equal(mrc_health_path_denied(h, 4, 2), 0);
	/* Healed: the witnesses' probes answer and are shared. */
	for (uint32_t src = 1; src < t->n_hosts; src++)
		observe(h, t, 0, src, MRC_TOPO_NONE, t->n_hosts, 20 * MS);
	assert_int_equal(mrc_health_path_ok(h, 4, 2, 20 * MS), 0);
	assert_true(mrc_health_eval(h, 20 * MS) > 0);
	mrc_health_link_get(h, dead, &li);
	assert_int_equal(li.state, MRC_HEALTH_OK);
	assert_int_equal(li.changed_ns, 20 * MS);
	/* Failures alone, then silence past ttl: back to OK. */
	for (uint32_t src = 1; src < t->n_hosts; src++)
		observe(h, t, 0, src, dead, t->n_hosts, 200 * MS);
	mrc_health_eval(h, 200 * MS);
	mrc_health_link_get(h, dead, &li);
	assert_int_equal(li.state, MRC_HEALTH_DENIED);
	mrc_health_eval(h, 301 * MS);
	mrc_health_link_get(h, dead, &li);
	assert_int_equal(li.state, MRC_HEALTH_OK);
	size_t n;
	struct mrc_health_obs out[4];
	mrc_health_export(h, 301 * MS, out, 4, &n);
	assert_int_equal(n, 0);
	mrc_health_free(h);
	mrc_topo_free(t);
}

/* A table full of working observations still takes a failure (it
 * replaces the oldest working one); a working one is refused. */
static void full_table_takes_failures(void **state)
{
	struct mrc_topo *t;
	struct mrc_topo_gen g = { .planes = 1, .leaves_per_plane = 2,
		.spines_per_plane = 4, .hosts_per_leaf = 4 };
	assert_int_equal(mrc_topo_generate(&g, &t, NULL, 0), 0);
	struct mrc_health_cfg cfg = { .max_obs = 8 };
	struct mrc_health *h;
	assert_int_equal(mrc_health_new(t, 0, &cfg, &h), 0);
	for (uint32_t i = 0; i < 8; i++)
		assert_int_equal(mrc_health_path_ok(h, 4 + i / 4, i % 4, (i + 1) * MS), 0);
	assert_int_equal(mrc_health_path_ok(h, 6, 0, 20 * MS), -ENOSPC);
	assert_int_equal(mrc_health_path_fail(h, 6, 1, 20 * MS), 0);
	size_t n;
	struct mrc_health_obs out[8];
	mrc_health_export(h, 20 * MS, out, 8, &n);
	assert_int_equal(n, 8);
	assert_int_equal(out[0].dst, 6);
	assert_int_equal(out[0].ok, 0);
	for (size_t i = 0; i < n; i++)   /* the oldest (1 ms) is gone */
		assert_true(out[i].ts_ns != MS);
	mrc_health_free(h);
	mrc_topo_free(t);
}

/* Export: only self's observations, newest first, bounded. */
static void export_own_newest(void **state)
{
	struct mrc_topo *t;
	struct mrc_topo_gen g = { .planes = 2, .leaves_per_plane = 2,
		.spines_per_plane = 2, .hosts_per_leaf = 2 };
	assert_int_equal(mrc_topo_generate(&g, &t, NULL, 0), 0);
	struct mrc_health *h;
	assert_int_equal(mrc_health_new(t, 0, NULL, &h), 0);
	for (uint32_t ev = 0; ev < 4; ev++)
		assert_int_equal(mrc_health_path_ok(h, 3, ev, (ev + 1) * MS), 0);
	struct mrc_health_obs o = { .src = 1, .dst = 2, .ev = 0, .ok = 0 };
	uint64_t age = 0;
	assert_int_equal(mrc_health_merge(h, 1, &o, &age, 1, 9 * MS), 1);
	struct mrc_health_obs out[8];
	size_t n;
	mrc_health_export(h, 9 * MS, out, 3, &n);
	assert_int_equal(n, 3);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(out[i].src, 0);
		assert_int_equal(out[i].ts_ns, (4 - i) * MS);
	}
	assert_int_equal(mrc_health_path_ok(h, 3, 99, MS), -EINVAL);
	mrc_health_free(h);
	mrc_topo_free(t);
}

int main(void)
{
	seed_init("test_health");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(dead_link_found, reseed),
		cmocka_unit_test_setup(sparse_never_wrong, reseed),
		cmocka_unit_test_setup(tie_locates_nothing, reseed),
		cmocka_unit_test_setup(congestion_convicts_nothing, reseed),
		cmocka_unit_test_setup(liars_deny_nothing, reseed),
		cmocka_unit_test_setup(merge_rules_expiry_heal, reseed),
		cmocka_unit_test_setup(export_own_newest, reseed),
		cmocka_unit_test_setup(full_table_takes_failures, reseed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

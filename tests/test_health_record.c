/* health/record.c (docs/health.md "Convictions"): every link located or
 * denied is counted and recorded, and the record outlives the link's
 * healing, so a conviction between two polls of `mrcctl fabric` is seen.
 *   dead_link_counted: seeded random Clos fabrics (20 rounds), one
 *     leaf-spine link blackholed, every host's outcomes: one conviction,
 *     of that link, located and denied (1 and 1), its evidence failed
 *     paths through it, newest first; every path working again: the link
 *     is OK, the record stays (cleared), nothing more counted; a second
 *     fault of the same link counts again (2 and 2), as its own record;
 *   located_then_denied: one host's failures locate a link (1 and 0);
 *     another host's deny it: the same record steps up (1 and 1), with
 *     both times and the new evidence;
 *   ring_keeps_newest: 40 brief convictions: all counted, the newest 32
 *     kept, oldest first, each cleared;
 *   congestion_counts_nothing: ECN and trims on every path, all working:
 *     nothing counted, no record. */
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

#include "health/record.h"
#include "topology/topo.h"

#define MS 1000000ull
#define ROUNDS 20

static struct mrc_topo *gen(uint32_t planes, uint32_t leaves, uint32_t spines, uint32_t hosts)
{
	struct mrc_topo_gen g = { .planes = planes, .leaves_per_plane = leaves,
		.spines_per_plane = spines, .hosts_per_leaf = hosts };
	struct mrc_topo *t = NULL;
	char err[MRC_TOPO_ERRLEN];
	CHECK(mrc_topo_generate(&g, &t, err, sizeof(err)) == 0, "%s", err);
	return t;
}

/* A host's health and its record on t; rig_close frees them and t. */
static void rig_open(const struct mrc_topo *t, uint32_t self, struct mrc_health **h,
		     struct mrc_health_record **r)
{
	assert_int_equal(mrc_health_new(t, self, NULL, h), 0);
	assert_int_equal(mrc_health_record_new(t, r), 0);
}

static void rig_close(struct mrc_topo *t, struct mrc_health *h, struct mrc_health_record *r)
{
	mrc_health_record_free(r);
	mrc_health_free(h);
	mrc_topo_free(t);
}

static uint32_t kept(const struct mrc_health_record *r)
{
	struct mrc_health_rec e;
	uint32_t n = 0;
	while (!mrc_health_record_get(r, n, &e))
		n++;
	return n;
}

static void step(struct mrc_health *h, struct mrc_health_record *r, uint64_t now)
{
	assert_true(mrc_health_eval(h, now) >= 0);
	assert_true(mrc_health_record_note(r, h, now) >= 0);
}

static void check_evidence(const struct mrc_topo *t, const struct mrc_health_rec *e)
{
	CHECK(e->n_evidence > 0 && e->n_evidence <= MRC_HEALTH_REC_EVIDENCE &&
	      e->n_evidence <= e->fail_paths, "evidence %u of %u failed paths", e->n_evidence,
	      e->fail_paths);
	for (uint32_t k = 0; k < e->n_evidence; k++) {
		const struct mrc_health_obs *o = &e->evidence[k];
		CHECK(!o->ok && rig_crosses(t, o->src, o->dst, o->ev, e->link),
		      "evidence %u: h%u -> h%u ev %u ok %u does not fail through link %u", k,
		      o->src, o->dst, o->ev, o->ok, e->link);
		CHECK(!k || e->evidence[k - 1].ts_ns >= o->ts_ns, "evidence not newest first");
	}
}

static void dead_link_counted(void **st)
{
	(void)st;
	for (int round = 0; round < ROUNDS; round++) {
		struct mrc_topo *t = gen(1 + (uint32_t)(rnd() % 3), 2 + (uint32_t)(rnd() % 4),
					 2 + (uint32_t)(rnd() % 4), 2 + (uint32_t)(rnd() % 3));
		uint32_t dead = rig_core_link(t, NULL);
		uint32_t self = (uint32_t)(rnd() % t->n_hosts);
		struct mrc_health *h;
		struct mrc_health_record *r;
		rig_open(t, self, &h, &r);
		for (int fault = 1; fault <= 2; fault++) {
			uint64_t t1 = (uint64_t)fault * 100 * MS, t2 = t1 + 10 * MS;
			rig_all_paths(h, t, self, dead, t1);
			step(h, r, t1);
			struct mrc_health_link li;
			assert_int_equal(mrc_health_link_get(h, dead, &li), 0);
			CHECK(li.state == MRC_HEALTH_DENIED, "round %d: dead link %u state %u", round,
			      dead, li.state);
			CHECK(mrc_health_record_located(r) == (uint64_t)fault &&
			      mrc_health_record_denied(r) == (uint64_t)fault,
			      "round %d fault %d: counted %llu located %llu denied", round, fault,
			      (unsigned long long)mrc_health_record_located(r),
			      (unsigned long long)mrc_health_record_denied(r));
			assert_int_equal(kept(r), fault);
			struct mrc_health_rec e;
			assert_int_equal(mrc_health_record_get(r, (uint32_t)fault - 1, &e), 0);
			CHECK(e.seq == (uint64_t)fault - 1 && e.link == dead &&
			      e.state == MRC_HEALTH_DENIED && e.located_ns == t1 && e.denied_ns == t1 &&
			      !e.cleared_ns && e.fail_paths == li.fail_paths &&
			      e.fail_hosts == li.fail_hosts && e.fail_hosts >= 2,
			      "round %d: record seq %llu link %u state %u at %llu/%llu/%llu", round,
			      (unsigned long long)e.seq, e.link, e.state,
			      (unsigned long long)e.located_ns, (unsigned long long)e.denied_ns,
			      (unsigned long long)e.cleared_ns);
			check_evidence(t, &e);
			/* Healed: a poll now sees nothing; the record stays. */
			rig_all_paths(h, t, self, MRC_TOPO_NONE, t2);
			step(h, r, t2);
			assert_int_equal(mrc_health_link_get(h, dead, &li), 0);
			assert_int_equal(li.state, MRC_HEALTH_OK);
			assert_int_equal(mrc_health_record_get(r, (uint32_t)fault - 1, &e), 0);
			CHECK(e.cleared_ns == t2 && e.link == dead, "round %d: not cleared", round);
			assert_int_equal(mrc_health_record_located(r), fault);
			assert_int_equal(mrc_health_record_denied(r), fault);
		}
		rig_close(t, h, r);
	}
}

/* 1 plane, 2 leaves x 2 hosts (h0 h1 | h2 h3), 2 spines; the link
 * p0l0-p0s0 failing as told by hosts. */
struct tiny {
	struct mrc_topo *t;
	uint32_t link, ev0, ev1;
};

static struct tiny tiny(void)
{
	struct tiny x = { .t = gen(1, 2, 2, 2) };
	x.link = x.t->leaf_spine[0][0];
	x.ev0 = (uint32_t)mrc_topo_ev_of(x.t, 0, 0);
	x.ev1 = (uint32_t)mrc_topo_ev_of(x.t, 0, 1);
	return x;
}

/* h1's two paths into leaf 1 through spine 0 fail, h2 -> h3 through it
 * works (p0l1-p0s0 exonerated): located on one host's evidence; with
 * deny, h3 -> h0 through it fails too: a second host, denied. */
static void convict(struct mrc_health *h, const struct tiny *x, bool deny, uint64_t now)
{
	rig_see(h, x->t, 0, 2, 3, x->ev0, true, now);
	rig_see(h, x->t, 0, 1, 2, x->ev0, false, now);
	rig_see(h, x->t, 0, 1, 3, x->ev0, false, now);
	if (deny)
		rig_see(h, x->t, 0, 3, 0, x->ev0, false, now);
}

static void heal(struct mrc_health *h, const struct tiny *x, uint64_t now)
{
	rig_see(h, x->t, 0, 1, 2, x->ev0, true, now);
	rig_see(h, x->t, 0, 1, 3, x->ev0, true, now);
	rig_see(h, x->t, 0, 3, 0, x->ev0, true, now);
}

static void located_then_denied(void **st)
{
	(void)st;
	struct tiny x = tiny();
	struct mrc_health *h;
	struct mrc_health_record *r;
	rig_open(x.t, 0, &h, &r);
	convict(h, &x, false, 10 * MS);
	step(h, r, 10 * MS);
	struct mrc_health_link li;
	assert_int_equal(mrc_health_link_get(h, x.link, &li), 0);
	assert_int_equal(li.state, MRC_HEALTH_LOCATED);
	assert_int_equal(mrc_health_record_located(r), 1);
	assert_int_equal(mrc_health_record_denied(r), 0);
	struct mrc_health_rec e;
	assert_int_equal(mrc_health_record_get(r, 0, &e), 0);
	assert_int_equal(e.state, MRC_HEALTH_LOCATED);
	assert_int_equal(e.located_ns, 10 * MS);
	assert_int_equal(e.denied_ns, 0);
	assert_int_equal(e.fail_hosts, 1);
	assert_int_equal(e.n_evidence, 2);
	assert_true(e.good_ns == 0 || e.good_ns <= 10 * MS);
	check_evidence(x.t, &e);
	/* Still located at the next eval: nothing more counted. */
	step(h, r, 20 * MS);
	assert_int_equal(mrc_health_record_located(r), 1);
	rig_see(h, x.t, 0, 3, 0, x.ev0, false, 30 * MS);
	step(h, r, 30 * MS);
	assert_int_equal(mrc_health_link_get(h, x.link, &li), 0);
	assert_int_equal(li.state, MRC_HEALTH_DENIED);
	assert_int_equal(mrc_health_record_located(r), 1);
	assert_int_equal(mrc_health_record_denied(r), 1);
	assert_int_equal(kept(r), 1);
	assert_int_equal(mrc_health_record_get(r, 0, &e), 0);
	assert_int_equal(e.state, MRC_HEALTH_DENIED);
	assert_int_equal(e.located_ns, 10 * MS);
	assert_int_equal(e.denied_ns, 30 * MS);
	assert_int_equal(e.fail_hosts, 2);
	assert_int_equal(e.n_evidence, 3);
	check_evidence(x.t, &e);
	/* The newest failure first: h3's at 30 ms. */
	assert_int_equal(e.evidence[0].src, 3);
	rig_close(x.t, h, r);
}

static void ring_keeps_newest(void **st)
{
	(void)st;
	struct tiny x = tiny();
	struct mrc_health *h;
	struct mrc_health_record *r;
	rig_open(x.t, 0, &h, &r);
	const uint32_t n = MRC_HEALTH_REC_MAX + 8;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t now = (1 + 2 * (uint64_t)i) * 10 * MS;
		convict(h, &x, true, now);
		step(h, r, now);
		heal(h, &x, now + 10 * MS);
		step(h, r, now + 10 * MS);
	}
	assert_int_equal(mrc_health_record_located(r), n);
	assert_int_equal(mrc_health_record_denied(r), n);
	assert_int_equal(kept(r), MRC_HEALTH_REC_MAX);
	for (uint32_t i = 0; i < MRC_HEALTH_REC_MAX; i++) {
		struct mrc_health_rec e;
		assert_int_equal(mrc_health_record_get(r, i, &e), 0);
		uint64_t seq = n - MRC_HEALTH_REC_MAX + i;
		assert_int_equal(e.seq, seq);
		assert_int_equal(e.link, x.link);
		assert_int_equal(e.located_ns, (1 + 2 * seq) * 10 * MS);
		assert_int_equal(e.cleared_ns, (2 + 2 * seq) * 10 * MS);
	}
	struct mrc_health_rec e;
	assert_int_equal(mrc_health_record_get(r, MRC_HEALTH_REC_MAX, &e), -ENOENT);
	rig_close(x.t, h, r);
}

static void congestion_counts_nothing(void **st)
{
	(void)st;
	for (int round = 0; round < ROUNDS; round++) {
		struct mrc_topo *t = gen(1 + (uint32_t)(rnd() % 3), 2 + (uint32_t)(rnd() % 4),
					 2 + (uint32_t)(rnd() % 4), 2 + (uint32_t)(rnd() % 3));
		uint32_t self = (uint32_t)(rnd() % t->n_hosts);
		struct mrc_health *h;
		struct mrc_health_record *r;
		rig_open(t, self, &h, &r);
		for (uint64_t now = 10 * MS; now <= 100 * MS; now += 10 * MS) {
			for (uint32_t d = 0; d < t->n_hosts; d++)
				for (uint32_t ev = 0; d != self && ev < mrc_topo_ev_count(t); ev++)
					if (rig_crosses(t, self, d, ev, t->leaf_spine[0][0]) || rnd() % 2)
						mrc_health_path_congested(h, d, ev, 1 + rnd() % 100);
			rig_all_paths(h, t, self, MRC_TOPO_NONE, now);
			step(h, r, now);
		}
		CHECK(mrc_health_record_located(r) == 0 && mrc_health_record_denied(r) == 0 &&
		      kept(r) == 0, "round %d: congestion counted a conviction", round);
		rig_close(t, h, r);
	}
}

int main(void)
{
	seed_init("test_health_record");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(dead_link_counted, reseed),
		cmocka_unit_test_setup(located_then_denied, reseed),
		cmocka_unit_test_setup(ring_keeps_newest, reseed),
		cmocka_unit_test_setup(congestion_counts_nothing, reseed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

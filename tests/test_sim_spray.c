/* The spray's starting slot (mrce_cfg.spray_slot, mrcsim --spray-slot):
 * on the 8-plane Clos, hosts of a leaf that start their spray at distinct
 * slots finish a permutation faster than with the engine's hash, whose
 * random phases make hosts of a leaf share a spine in the same packet
 * slot (docs/sim.md "The 8-plane Clos: spray slots"); the engine refuses
 * a slot out of range; the default (hash) reports no slot. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sim/sim_int.h"

static uint64_t seed = 1;

struct fcts {
	double mean, max;
};

/* A 2 MiB permutation on 8 planes x 8 leaves x 8 spines x 8 hosts. */
static struct fcts run(const char *slot)
{
	struct mrc_sim_cfg c;
	char err[MRC_SIM_ERRLEN], sd[24];
	mrc_sim_cfg_default(&c);
	snprintf(sd, sizeof(sd), "%llu", (unsigned long long)seed);
	assert_int_equal(mrc_sim_cfg_set(&c, "seed", sd, err, sizeof(err)), 0);
	assert_int_equal(mrc_sim_cfg_set(&c, "topo", "clos:planes=8,leaves=8,spines=8,hosts=8,"
					 "rate=100G,delay=500ns", err, sizeof(err)), 0);
	assert_int_equal(mrc_sim_cfg_set(&c, "workload", "permutation:size=2M", err,
					 sizeof(err)), 0);
	assert_int_equal(mrc_sim_cfg_set(&c, "spray-slot", slot, err, sizeof(err)), 0);
	struct mrc_sim *s;
	if (mrc_sim_create(&c, &s, err, sizeof(err))) {
		print_error("%s\n", err);
		fail();
	}
	assert_int_equal(mrc_sim_run(s, err, sizeof(err)), 0);
	assert_int_equal(s->flows_done, s->n_flows);
	struct fcts f = { 0, 0 };
	for (uint32_t i = 0; i < s->n_flows; i++) {
		const struct sim_flow *fl = &s->flows[i];
		double r = (double)(fl->end_ps - fl->start_ps) / (double)fl->ideal_ps;
		f.mean += r / s->n_flows;
		if (r > f.max)
			f.max = r;
	}
	mrc_sim_destroy(s);
	return f;
}

/* Measured over seeds 1-50: mean FCT/ideal 1.055-1.070 with the hash,
 * 1.041-1.056 with slots, 0.0048-0.0249 less at every seed (a smooth
 * spread: how much the slots save depends on the permutation drawn);
 * the slowest flow 1.095 at most with slots.  The bounds once drawn from
 * seeds 1-5 (0.005 less, mean under 1.055) failed seeds 13 (0.0048 less)
 * and 47 (1.0554).  Slots not passed make both runs the same (0 less). */
static void slots_beat_hash(void **st)
{
	(void)st;
	struct fcts h = run("hash"), t = run("topo");
	print_message("seed %llu: mean FCT/ideal hash %.4f topo %.4f, max %.4f %.4f\n",
		      (unsigned long long)seed, h.mean, t.mean, h.max, t.max);
	assert_true(t.mean < h.mean - 0.002);
	assert_true(t.mean < 1.06);
	assert_true(t.max < 1.10);
}

static void slot_range_checked(void **st)
{
	(void)st;
	struct mrce_cfg c;
	struct mrce *e = NULL;
	const char *why = NULL;
	mrce_cfg_default(&c);
	assert_int_equal(c.spray_slot, 0);
	c.spray_slot = 65537;
	assert_int_equal(mrce_create(&c, &e, &why), -EINVAL);
	assert_non_null(why);
	assert_non_null(strstr(why, "spray_slot"));
	c.spray_slot = 65536;
	assert_int_equal(mrce_create(&c, &e, &why), 0);
	mrce_destroy(e);

	struct mrc_sim_cfg sc;
	char err[MRC_SIM_ERRLEN] = "";
	mrc_sim_cfg_default(&sc);
	assert_int_equal(mrc_sim_cfg_set(&sc, "spray-slot", "leaf", err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "must be hash or topo"));
}

int main(void)
{
	const char *e = getenv("MRC_TEST_SEED");
	if (e)
		seed = strtoull(e, NULL, 0);
	print_message("test_sim_spray: seed %llu (MRC_TEST_SEED)\n", (unsigned long long)seed);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(slots_beat_hash),
		cmocka_unit_test(slot_range_checked),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

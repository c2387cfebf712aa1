/* mrcsim's power model (sim/power.c, docs/power.md): the draw of a known
 * step to the watt, the spectrum's peak at the step frequency, the band
 * share, and each lever moving the figures the way docs/power.md says;
 * the parameters file's checks. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sim/power.h"
#include "tests/support/sim_run.h"

static uint64_t seed = 5;

static struct mrc_sim *run_sim(const char *topo, const char *wl)
{
	return sim_run_seeded(topo, wl, seed);
}

/* No communication (dp=1, no MoE): every host computes all the time, so
 * the job draws H x (compute + other + NIC idle) flat: 4 x 815 W. */
static void compute_only_draws_flat(void **st)
{
	(void)st;
	struct mrc_sim *s = run_sim("clos:planes=1,leaves=2,spines=1,hosts=2,rate=100G",
				    "step:layers=3,steps=4,fwd=100us,bwd=200us,tokens=0,dp=1");
	struct mrc_sim_power_params p;
	struct mrc_sim_power pw;
	char err[256];
	mrc_sim_power_default(&p);
	assert_int_equal(mrc_sim_power_run(s, &p, &pw, err, sizeof(err)), 0);
	const struct mrc_sim_power_fig *v = &pw.v[MRC_SIM_PW_NONE];
	/* 4 steps of 900 us x 1000: 3.6 s, 3,600 samples of 1 ms */
	assert_int_equal(v->n, 3600);
	assert_true(fabs(v->mean_mw - 4 * 815e-6) < 1e-9);
	assert_true(v->p2t_mw < 1e-9);
	assert_true(v->step_ms > 899.9 && v->step_ms < 900.1);
	mrc_sim_power_free(&pw);
	mrc_sim_destroy(s);
}

/* The step workload the lever tests share: data parallel only (no MoE),
 * so each step has one communication dip (its last gradient bucket) and
 * the spectrum's peak is the step frequency.  128 hosts on two 100G
 * planes keep make check fast; docs/power.md has 1,024 and 8,192. */
#define TOPO "clos:planes=2,leaves=8,spines=4,hosts=16,rate=100G,delay=500ns"
#define WL   "step:steps=8,tokens=0,dp=8,grad=1M,bucket=4M"

static struct mrc_sim *shared;

static int setup(void **st)
{
	(void)st;
	shared = run_sim(TOPO, WL);
	return 0;
}

static int teardown(void **st)
{
	(void)st;
	mrc_sim_destroy(shared);
	return 0;
}

static void power(const struct mrc_sim_power_params *p, struct mrc_sim_power *pw)
{
	char err[256];
	if (mrc_sim_power_run(shared, p, pw, err, sizeof(err))) {
		print_error("%s (seed %llu)\n", err, (unsigned long long)seed);
		fail();
	}
}

/* The swing is a square-ish wave at the step frequency: the spectrum's
 * largest bin is within one bin of 1 / step, and nearly all the swing's
 * energy is in 0.1-20 Hz; a band below the step frequency holds little. */
static void peak_at_step_frequency(void **st)
{
	(void)st;
	struct mrc_sim_power_params p;
	struct mrc_sim_power pw;
	mrc_sim_power_default(&p);
	power(&p, &pw);
	const struct mrc_sim_power_fig *v = &pw.v[MRC_SIM_PW_NONE];
	double f_step = 1e3 / v->step_ms, bin = 1e3 / (v->n * p.res_ms);
	if (fabs(v->peak_hz - f_step) > 1.01 * bin) {
		print_error("peak %.4f Hz, step %.4f Hz, bin %.4f (seed %llu)\n", v->peak_hz, f_step,
			    bin, (unsigned long long)seed);
		fail();
	}
	assert_true(v->p2t_mw > 0);
	assert_true(v->band_share > 0.9);
	assert_true(fabs(v->band_vs_none - v->band_share) < 1e-12);
	mrc_sim_power_free(&pw);
	p.band_lo_hz = 0.01;
	p.band_hi_hz = f_step / 2;
	power(&p, &pw);
	assert_true(pw.v[MRC_SIM_PW_NONE].band_share < 0.1);
	mrc_sim_power_free(&pw);
}

/* docs/power.md "Levers": stagger (8 groups, 20 ms) and pace (30 ms) cost
 * their spread per step, (8 - 1) x 20 ms and 30 x 127/128 ms, and turn the
 * cliff into steps: the steepest ramp drops; the floor (0.8 x compute)
 * costs no step time, cuts peak-to-trough and the in-band energy by the
 * swing's square (below 20 % of the no-lever swing's) and costs energy;
 * all together cut the ramp below every single lever's. */
static void levers_move_figures(void **st)
{
	(void)st;
	struct mrc_sim_power_params p;
	struct mrc_sim_power pw;
	mrc_sim_power_default(&p);
	p.stagger_groups = 8;
	p.stagger_ms = 20;
	p.pace_ms = 30;
	p.floor = 0.8;
	power(&p, &pw);
	const struct mrc_sim_power_fig *n = &pw.v[MRC_SIM_PW_NONE], *sg = &pw.v[MRC_SIM_PW_STAGGER],
		*pc = &pw.v[MRC_SIM_PW_PACE], *fl = &pw.v[MRC_SIM_PW_FLOOR], *all = &pw.v[MRC_SIM_PW_ALL];
	assert_true(sg->on && pc->on && fl->on && all->on);
	/* one sample of rounding per step */
	assert_true(fabs(sg->step_ms - n->step_ms - 140) < 1.01);
	assert_true(fabs(pc->step_ms - n->step_ms - 30.0 * 127 / 128) < 1.01);
	assert_true(fabs(all->step_ms - n->step_ms - 140 - 30.0 * 127 / 128) < 1.01);
	assert_true(fabs(fl->step_ms - n->step_ms) < 1e-9);
	assert_true(sg->ramp_mw_s < n->ramp_mw_s / 2);
	assert_true(pc->ramp_mw_s < n->ramp_mw_s / 2);
	assert_true(all->ramp_mw_s < fmin(sg->ramp_mw_s, fmin(pc->ramp_mw_s, fl->ramp_mw_s)));
	assert_true(fl->p2t_mw < n->p2t_mw / 2);
	assert_true(fl->band_vs_none < 0.2);
	assert_true(fl->energy_cost > 0.01);
	assert_true(fabs(fl->band_share - n->band_share) < 0.02);   /* same shape */
	double held_e = fl->energy_cost, held_band = fl->band_vs_none;
	mrc_sim_power_free(&pw);
	/* a floor released over 50 ms: less energy than holding it, more
	 * in-band energy */
	p.floor_ramp_ms = 50;
	power(&p, &pw);
	assert_true(pw.v[MRC_SIM_PW_FLOOR].energy_cost < held_e);
	assert_true(pw.v[MRC_SIM_PW_FLOOR].band_vs_none > held_band);
	mrc_sim_power_free(&pw);
}

/* The params file is all or nothing: each bad one is refused and changes
 * nothing (docs/power.md "Parameters"). */
static void params_checked(void **st)
{
	(void)st;
	struct mrc_sim_power_params p;
	char err[256];
	mrc_sim_power_default(&p);
	static const char *bad[] = { "[]", "{\"flor\": 1}", "{\"floor\": 1.5}", "{\"floor\": \"x\"}",
		"{\"stagger_groups\": 1.5}", "{\"band_lo_hz\": 30}", "{\"res_ms\": 0}", "{" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_not_equal(mrc_sim_power_load_json(&p, bad[i], strlen(bad[i]), err,
							     sizeof(err)), 0);
	/* a rejected file leaves the params as they were */
	assert_true(p.band_lo_hz == 0.1 && p.floor == 0 && p.res_ms == 1);
	const char *ok = "{\"floor\": 0.5, \"stagger_groups\": 4, \"band_hi_hz\": 10}";
	assert_int_equal(mrc_sim_power_load_json(&p, ok, strlen(ok), err, sizeof(err)), 0);
	assert_true(p.floor == 0.5 && p.stagger_groups == 4 && p.band_hi_hz == 10);
}

int main(void)
{
	const char *e = getenv("MRC_TEST_SEED");
	if (e)
		seed = strtoull(e, NULL, 0);
	const struct CMUnitTest t[] = {
		cmocka_unit_test(compute_only_draws_flat),
		cmocka_unit_test(params_checked),
	};
	const struct CMUnitTest lev[] = {
		cmocka_unit_test(peak_at_step_frequency),
		cmocka_unit_test(levers_move_figures),
	};
	int rc = cmocka_run_group_tests(t, NULL, NULL);
	return rc | cmocka_run_group_tests(lev, setup, teardown);
}

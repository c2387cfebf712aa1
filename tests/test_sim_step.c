/* mrcsim's training-step workload (sim/step.c, docs/sim.md "Training
 * steps"): the compute stubs' time exactly, exposed communication and step
 * time against hand-computed bounds, expert capacity drops, gradient
 * buckets overlapping the backward pass, and the per-host phase record. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sim/sim.h"
#include "tests/support/sim_run.h"

static uint64_t seed = 11;

static struct mrc_sim *make(const char *topo, const char *wl)
{
	return sim_run_seeded(topo, wl, seed);
}

/* 4 hosts: 2 leaves of 2, one 100 Gbit/s plane. */
#define TOPO4 "clos:planes=1,leaves=2,spines=1,hosts=2,rate=100G,delay=500ns"

/* Without communication a step is its compute, to the nanosecond: 3 layers
 * x (10 + 20 us) = 90 us, two steps 180 us, nothing exposed, and the phase
 * record is the six compute intervals per step back to back. */
static void compute_only_step_is_its_compute(void **st)
{
	(void)st;
	struct mrc_sim *s = make(TOPO4, "step:layers=3,steps=2,fwd=10us,bwd=20us,tokens=0,dp=1");
	struct mrc_sim_step_result r;
	assert_int_equal(mrc_sim_step_result(s, &r), 0);
	assert_true(r.done);
	assert_int_equal(r.compute_ns, 90000);
	assert_int_equal(r.step_ns[0], 90000);
	assert_int_equal(r.step_ns[1], 90000);
	assert_int_equal(r.time_to_n_ns, 180000);
	assert_int_equal(r.exposed_max_ns[0], 0);
	assert_int_equal(r.exposed_max_ns[1], 0);
	for (uint32_t h = 0; h < 4; h++) {
		uint32_t n;
		const struct mrc_sim_phase_iv *iv = mrc_sim_phases(s, h, &n);
		assert_int_equal(n, 12);
		uint64_t t = 0;
		for (uint32_t i = 0; i < n; i++) {
			assert_int_equal(iv[i].t0_ns, t);
			assert_int_equal(iv[i].kind, i % 6 < 3 ? MRC_SIM_PH_FWD : MRC_SIM_PH_BWD);
			t = iv[i].t1_ns;
		}
		assert_int_equal(t, 180000);
	}
	mrc_sim_destroy(s);
}

/* The MoE layer alone (no gradients): 16 tokens of 4 KiB per host, top-1,
 * no skew, capacity 100x (no drops), ep=4 as 2 x 2.  Each of the step's 8
 * all-to-all phases must wait at least the pair's base RTT (its sends are
 * done only when acknowledged), so exposed >= 8 x base RTT; and no host sends
 * more than its 16 tokens (64 KiB + headers, 5.3 us at 100G) in a phase,
 * so exposed <= 8 x (5.3 us + 4 base RTTs) on the idle fabric.  Compute:
 * 2 forward + 2 backward + the expert's forward and backward, 1 us each. */
static void moe_step_exposed_within_bounds(void **st)
{
	(void)st;
	struct mrc_sim *s = make(TOPO4, "step:layers=2,steps=3,moe=1,fwd=1us,bwd=1us,tokens=16,"
				 "tok=4096,topk=1,cap=100,skew=0,ep=4,local=2,dp=1");
	struct mrc_sim_step_result r;
	assert_int_equal(mrc_sim_step_result(s, &r), 0);
	assert_true(r.done);
	/* 2 fwd + expert fwd + 2 bwd + expert bwd, 1 us each */
	assert_int_equal(r.compute_ns, 6000);
	assert_int_equal(r.dropped, 0);
	assert_int_equal(r.tokens, 4 * 16);
	/* Phases 1 stay in a leaf, phases 2 cross the spine: take the
	 * shorter RTT for the lower bound, the longer for the upper. */
	uint64_t rtt_lo = mrc_sim_base_rtt(s, 0, 1), rtt_hi = mrc_sim_base_rtt(s, 0, 2);
	uint64_t wire = (16 * (4096 + 100) * 8ull * 1000) / 100000;   /* ns at 100G */
	uint64_t sum_step = 0, sum_exp = 0;
	for (uint32_t i = 0; i < r.steps; i++) {
		if (r.exposed_mean_ns[i] < 8 * rtt_lo || r.exposed_max_ns[i] > 8 * (wire + 4 * rtt_hi)) {
			print_error("step %u: exposed %llu..%llu ns, bounds %llu..%llu (seed %llu)\n", i,
				    (unsigned long long)r.exposed_mean_ns[i],
				    (unsigned long long)r.exposed_max_ns[i],
				    (unsigned long long)(8 * rtt_lo),
				    (unsigned long long)(8 * (wire + 4 * rtt_hi)),
				    (unsigned long long)seed);
			fail();
		}
		/* The last host to finish a step started it no later than
		 * the previous step's last end: step <= compute + the
		 * longest exposed part. */
		assert_true(r.step_ns[i] <= r.compute_ns + r.exposed_max_ns[i]);
		sum_step += r.step_ns[i];
		sum_exp += r.exposed_mean_ns[i];
	}
	/* Every host computed and waited its exposed part each step. */
	assert_true(r.time_to_n_ns + r.steps >= sum_step &&   /* ps -> ns rounding */
		    r.time_to_n_ns <= sum_step + r.steps);
	assert_true(r.time_to_n_ns >= r.steps * r.compute_ns + sum_exp);
	assert_true(r.step_ns[0] >= r.compute_ns + r.exposed_mean_ns[0]);
	/* Each host waited on 8 all-to-all phases per step, recorded. */
	uint32_t n, waits = 0;
	const struct mrc_sim_phase_iv *iv = mrc_sim_phases(s, 3, &n);
	for (uint32_t i = 0; i < n; i++)
		waits += iv[i].kind == MRC_SIM_PH_A2A;
	assert_int_equal(waits, 8 * r.steps);
	mrc_sim_destroy(s);
}

/* Capacity: 16 top-1 tokens per host over 4 experts with capacity factor
 * 0.5: an expert keeps at most 8, so at least 64 - 4 x 8 = 32 tokens drop;
 * with 100x none do (test above). */
static void capacity_drops_tokens(void **st)
{
	(void)st;
	struct mrc_sim *s = make(TOPO4, "step:layers=2,steps=1,moe=1,fwd=1us,bwd=1us,tokens=16,"
				 "tok=4096,topk=1,cap=0.5,skew=0,ep=4,local=2,dp=1");
	struct mrc_sim_step_result r;
	assert_int_equal(mrc_sim_step_result(s, &r), 0);
	assert_true(r.done);
	assert_int_equal(r.tokens, 64);
	assert_true(r.dropped >= 32);
	assert_true(r.dropped < 64);
	mrc_sim_destroy(s);
}

/* Buckets overlap the backward pass: 4 layers of 256 KiB gradients, 200 us
 * backward per layer, ring of 4.  With 256 KiB buckets the first three
 * rings finish under later layers' compute and only the last is exposed:
 * at least its 6 sequential 64 KiB chunks (6 x 5.24 us at 100G).  One 1 MiB
 * bucket at the end exposes the whole ring, 6 x 256 KiB chunks (6 x 21 us):
 * the bucketed step must expose under half of that. */
static void buckets_overlap_backward(void **st)
{
	(void)st;
	const char *base = "step:layers=4,steps=1,fwd=10us,bwd=200us,tokens=0,dp=4,grad=256K";
	char a[256], b[256];
	snprintf(a, sizeof(a), "%s,bucket=256K", base);
	snprintf(b, sizeof(b), "%s,bucket=1M", base);
	struct mrc_sim *sa = make(TOPO4, a), *sb = make(TOPO4, b);
	struct mrc_sim_step_result ra, rb;
	assert_int_equal(mrc_sim_step_result(sa, &ra), 0);
	assert_int_equal(mrc_sim_step_result(sb, &rb), 0);
	assert_true(ra.done && rb.done);
	uint64_t chunk64 = 65536ull * 8 * 1000 / 100000, chunk256 = 4 * chunk64;
	print_message("exposed: 4 buckets %llu ns, 1 bucket %llu ns\n",
		      (unsigned long long)ra.exposed_max_ns[0],
		      (unsigned long long)rb.exposed_max_ns[0]);
	assert_true(ra.exposed_mean_ns[0] >= 6 * chunk64);
	assert_true(rb.exposed_mean_ns[0] >= 6 * chunk256);
	assert_true(2 * ra.exposed_max_ns[0] < rb.exposed_mean_ns[0]);
	mrc_sim_destroy(sa);
	mrc_sim_destroy(sb);
}

/* Bulk background flows run beside the step and finish; the step still
 * completes and the same seed gives the same step times. */
static void bulk_runs_and_is_deterministic(void **st)
{
	(void)st;
	const char *wl = "step:layers=2,steps=2,moe=0,fwd=5us,bwd=5us,tokens=8,tok=4096,"
			 "ep=4,local=2,dp=2,grad=64K,bucket=64K,bulk=512K";
	struct mrc_sim *a = make(TOPO4, wl), *b = make(TOPO4, wl);
	struct mrc_sim_step_result ra, rb;
	struct mrc_sim_summary sa;
	assert_int_equal(mrc_sim_step_result(a, &ra), 0);
	assert_int_equal(mrc_sim_step_result(b, &rb), 0);
	mrc_sim_summary(a, &sa);
	assert_true(ra.done);
	assert_int_equal(sa.flows_done, sa.flows);
	assert_memory_equal(ra.step_ns, rb.step_ns, sizeof(ra.step_ns));
	mrc_sim_destroy(a);
	mrc_sim_destroy(b);
}

int main(void)
{
	const char *e = getenv("MRC_TEST_SEED");
	if (e)
		seed = strtoull(e, NULL, 0);
	print_message("test_sim_step: seed %llu (MRC_TEST_SEED)\n", (unsigned long long)seed);
	const struct CMUnitTest t[] = {
		cmocka_unit_test(compute_only_step_is_its_compute),
		cmocka_unit_test(moe_step_exposed_within_bounds),
		cmocka_unit_test(capacity_drops_tokens),
		cmocka_unit_test(buckets_overlap_backward),
		cmocka_unit_test(bulk_runs_and_is_deterministic),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}

/* mrcsim as a regression test of the engine at fabric scale: complete
 * delivery, EV state machine under a blackholed spine, determinism, and the
 * model against theory (idle-path FCT, spraying vs number of paths). */
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
#include "transport/engine.h"
#include "transport/wire.h"

static uint64_t seed = 7;

/* Builds a scenario from "key=value" pairs (value after the first '='). */
static struct mrc_sim *make(const char *const *kv)
{
	struct mrc_sim_cfg c;
	char err[MRC_SIM_ERRLEN];
	mrc_sim_cfg_default(&c);
	char sd[32];
	snprintf(sd, sizeof(sd), "%llu", (unsigned long long)seed);
	assert_int_equal(mrc_sim_cfg_set(&c, "seed", sd, err, sizeof(err)), 0);
	for (int i = 0; kv[i]; i++) {
		char key[64];
		const char *eq = strchr(kv[i], '=');
		assert_non_null(eq);
		snprintf(key, sizeof(key), "%.*s", (int)(eq - kv[i]), kv[i]);
		if (mrc_sim_cfg_set(&c, key, eq + 1, err, sizeof(err))) {
			print_error("%s: %s\n", kv[i], err);
			fail();
		}
	}
	struct mrc_sim *s;
	if (mrc_sim_create(&c, &s, err, sizeof(err))) {
		print_error("create: %s (seed %llu)\n", err, (unsigned long long)seed);
		fail();
	}
	if (mrc_sim_run(s, err, sizeof(err))) {
		print_error("run: %s (seed %llu)\n", err, (unsigned long long)seed);
		fail();
	}
	return s;
}

/* A permutation on a small 2-plane Clos: every flow completes, every byte
 * is placed once, and the received bytes equal the sent ones. */
static void permutation_delivers_every_byte(void **st)
{
	(void)st;
	const char *kv[] = { "topo=clos:planes=2,leaves=4,spines=4,hosts=4",
		"workload=permutation:size=300K", NULL };
	struct mrc_sim *s = make(kv);
	struct mrc_sim_summary sum;
	mrc_sim_summary(s, &sum);
	if (sum.flows_done != sum.flows)
		print_error("seed %llu: %u/%u flows done\n", (unsigned long long)seed,
			    sum.flows_done, sum.flows);
	assert_int_equal(sum.flows, 16);
	assert_int_equal(sum.flows_done, 16);
	assert_int_equal(sum.flows_failed, 0);
	assert_int_equal(sum.bytes, 16ull * 300 * 1024);
	assert_int_equal(sum.bytes_placed, sum.bytes);
	assert_int_equal(sum.verified, 1);
	/* The engines agree: what was placed is what was sent, once. */
	uint64_t placed = 0;
	for (uint32_t h = 0; h < 16; h++) {
		struct mrce_stats es;
		mrce_stats(mrc_sim_engine(s, h), &es);
		placed += es.bytes_placed;
	}
	assert_int_equal(placed, sum.bytes);
	for (uint32_t i = 0; i < sum.flows; i++) {
		struct mrc_sim_flow_info f;
		assert_int_equal(mrc_sim_flow(s, i, &f), 0);
		assert_int_equal(f.status, 0);
		assert_true(f.end_ns > f.start_ns);
		/* Nothing finishes faster than its ideal. */
		assert_true(f.end_ns - f.start_ns >= f.ideal_ns * 99 / 100);
	}
	mrc_sim_destroy(s);
}

/* A packet record keeps its payload as a 32-bit offset into the source
 * pattern (sim_int.h): a message the offset cannot reach is refused at
 * create, naming the limit, before anything that size is allocated. */
static void oversized_message_refused(void **st)
{
	(void)st;
	struct mrc_sim_cfg c;
	char err[MRC_SIM_ERRLEN];
	mrc_sim_cfg_default(&c);
	assert_int_equal(mrc_sim_cfg_set(&c, "topo", "clos:planes=1,leaves=2,spines=1,hosts=1",
					 err, sizeof(err)), 0);
	/* Workload sizes stop at 1G; a step's gradient bucket goes to 64G. */
	assert_int_equal(mrc_sim_cfg_set(&c, "workload",
					 "step:steps=1,tokens=0,dp=2,ep=2,grad=8G,bucket=8G",
					 err, sizeof(err)), 0);
	struct mrc_sim *s = NULL;
	assert_int_not_equal(mrc_sim_create(&c, &s, err, sizeof(err)), 0);
	assert_null(s);
	if (!strstr(err, "at most 4294963199"))
		print_error("create: %s\n", err);
	assert_non_null(strstr(err, "at most 4294963199"));
}

/* Every workload kind runs to completion on a fat tree. */
static void workloads_complete(void **st)
{
	(void)st;
	const char *kv[] = { "topo=fattree:k=4", "workload=alltoall:size=64K,group=4",
		"workload=ring:size=256K,group=8,start=20us", "workload=incast:size=128K,senders=6,dst=h3",
		"workload=permutation:size=100K,qps=2,jitter=5us", NULL };
	struct mrc_sim *s = make(kv);
	struct mrc_sim_summary sum;
	mrc_sim_summary(s, &sum);
	/* 4 groups x 12 + 2 rings x 8 hosts x 14 steps + 6 + 16 */
	assert_int_equal(sum.flows, 48 + 224 + 6 + 16);
	assert_int_equal(sum.flows_done, sum.flows);
	assert_int_equal(sum.bytes_placed, sum.bytes);
	mrc_sim_destroy(s);
}

/* Blackhole one spine of plane 0: on every sending host, exactly the EVs
 * through that spine (per the topology's path model) go ASSUMED_BAD after
 * the fault, every other EV stays GOOD, and after recovery the probes
 * bring exactly those back to GOOD. */
static void blackhole_spine_ev_states(void **st)
{
	(void)st;
	const uint64_t fault_ns = 30000, recover_ns = 1000000;
	const char *kv[] = { "topo=clos:planes=2,leaves=2,spines=4,hosts=2",
		"workload=permutation:size=4M", "fault=30us:blackhole:p0s1",
		"fault=1ms:recover:p0s1", "hold=8ms", NULL };
	struct mrc_sim *s = make(kv);
	struct mrc_sim_summary sum;
	mrc_sim_summary(s, &sum);
	assert_int_equal(sum.flows_done, sum.flows);
	assert_int_equal(sum.verified, 1);
	uint32_t nev = mrc_sim_ev_count(s), n = mrc_sim_ev_change_count(s);
	const struct mrc_sim_ev_change *ch = mrc_sim_ev_changes(s);
	assert_true(n > 0);
	int sends[4][4] = { { 0 } };
	for (uint32_t i = 0; i < sum.flows; i++) {
		struct mrc_sim_flow_info f;
		mrc_sim_flow(s, i, &f);
		sends[f.src][f.dst] = 1;
	}
	for (uint32_t h = 0; h < 4; h++)
		for (uint32_t r = 0; r < 4; r++) {
			uint32_t peer;
			if (mrc_sim_peer(s, h, r, &peer))
				continue;
			uint16_t bad[64];
			size_t nb;
			assert_int_equal(mrc_sim_evs_crossing(s, h, r, "p0s1", bad, 64, &nb), 0);
			assert_int_equal(nb, 1);   /* one spine = one path per pair */
			for (uint32_t ev = 0; ev < nev; ev++) {
				int expect = sends[h][r] && ev == bad[0];
				int went_bad = 0, came_back = 0;
				for (uint32_t i = 0; i < n; i++) {
					if (ch[i].host != h || ch[i].peer_host != r || ch[i].ev != ev)
						continue;
					if (ch[i].new_state == MRCE_EV_ASSUMED_BAD) {
						assert_int_equal(ch[i].old_state, MRCE_EV_GOOD);
						assert_true(ch[i].t_ns >= fault_ns && ch[i].t_ns < recover_ns);
						assert_false(came_back);
						went_bad++;
					} else {
						assert_int_equal(ch[i].new_state, MRCE_EV_GOOD);
						assert_int_equal(ch[i].reason, MRCE_RSN_PROBE_OK);
						assert_true(ch[i].t_ns >= recover_ns);
						assert_int_equal(went_bad, 1);
						came_back++;
					}
				}
				if (went_bad != expect || came_back != expect)
					print_error("seed %llu: h%u peer h%u ev %u: bad %d good %d, want %d\n",
						    (unsigned long long)seed, h, r, ev, went_bad,
						    came_back, expect);
				assert_int_equal(went_bad, expect);
				assert_int_equal(came_back, expect);
				struct mrce_ev_info in;
				assert_int_equal(mrce_ev_info(mrc_sim_engine(s, h), peer, ev, &in), 0);
				assert_int_not_equal(in.state, MRCE_EV_ASSUMED_BAD);
			}
		}
	mrc_sim_destroy(s);
}

static char *run_json(const char *const *kv)
{
	struct mrc_sim *s = make(kv);
	char *j = NULL;
	assert_int_equal(mrc_sim_report_json(s, 0, &j), 0);
	mrc_sim_destroy(s);
	return j;
}

/* Same scenario and seed: the same report, byte for byte (with random
 * loss, jitter and a fault, so every random stream is exercised). */
static void same_seed_same_output(void **st)
{
	(void)st;
	const char *kv[] = { "topo=clos:planes=2,leaves=4,spines=2,hosts=4",
		"workload=permutation:size=200K,jitter=10us", "workload=incast:size=64K,senders=8",
		"fault=20us:loss=0.02:p1l0-p1s1", "fault=40us:down:p0s0", "buffer=64K",
		"trim=48K", "ecn=16K", NULL };
	char *a = run_json(kv), *b = run_json(kv);
	assert_non_null(a);
	assert_non_null(b);
	if (strcmp(a, b))
		print_error("seed %llu: reports differ\n", (unsigned long long)seed);
	assert_string_equal(a, b);
	assert_non_null(strstr(a, "\"random_loss\": "));
	uint64_t keep = seed;
	seed = keep + 1;
	char *c = run_json(kv);
	seed = keep;
	assert_string_not_equal(a, c);   /* the seed does matter */
	free(a);
	free(b);
	free(c);
}

/* An idle path: FCT = wire bytes / host capacity + base RTT within 1%,
 * with the expectation derived here from rates and delays. */
static void check_single_flow(const char *topo, const char *cc, uint32_t planes,
			      uint32_t hops, uint64_t size, uint64_t rate_mbit,
			      uint64_t delay_ns)
{
	char wl[96], ccs[32];
	snprintf(wl, sizeof(wl), "workload=flow:src=h0,dst=h15,size=%llu",
		 (unsigned long long)size);
	snprintf(ccs, sizeof(ccs), "cc=%s", cc);
	const char *kv[] = { topo, wl, ccs, NULL };
	struct mrc_sim *s = make(kv);
	struct mrc_sim_flow_info f;
	assert_int_equal(mrc_sim_flow(s, 0, &f), 0);
	assert_int_equal(f.status, 0);
	const double ovh = 86, mtu = 4096;
	double npk = (double)((size + 4095) / 4096);
	double wire = (double)size + npk * (MRC_DATA_HDR_LEN + MRC_TRAILER_LEN + ovh);
	double bits_per_ns = (double)rate_mbit / 1000.0;
	double data = (MRC_DATA_HDR_LEN + mtu + MRC_TRAILER_LEN + ovh) * 8 / bits_per_ns;
	double ack = (MRC_ACK_HDR_LEN + ovh) * 8 / bits_per_ns;
	double rtt = hops * (data + (double)delay_ns) + hops * (ack + (double)delay_ns);
	double ideal = wire * 8 / (bits_per_ns * planes) + rtt;
	double fct = (double)(f.end_ns - f.start_ns);
	print_message("%s cc=%s: fct %.0f ns, theory %.0f ns (%+.3f%%)\n", topo, cc, fct,
		      ideal, 100 * (fct / ideal - 1));
	assert_true(fct > ideal * 0.99 && fct < ideal * 1.01);
	assert_true(llabs((long long)mrc_sim_base_rtt(s, 0, 15) - (long long)(rtt + 0.5)) <= 1);
	mrc_sim_destroy(s);
}

static void single_flow_matches_theory(void **st)
{
	(void)st;
	check_single_flow("topo=clos:planes=2,leaves=4,spines=4,hosts=4,rate=100G,delay=500ns",
			  "fixed", 2, 4, 4 << 20, 100000, 500);
	check_single_flow("topo=clos:planes=2,leaves=4,spines=4,hosts=4,rate=100G,delay=500ns",
			  "nscc", 2, 4, 4 << 20, 100000, 500);
	/* h0 and h15 sit in different pods of a k=4 fat tree: 6 hops. */
	check_single_flow("topo=fattree:k=4,rate=400G,delay=1us", "fixed", 1, 6, 3 << 20,
			  400000, 1000);
}

/* A permutation sprayed over more paths gets closer to the ideal: the
 * slowest flow's FCT/ideal does not grow as paths per pair grow (within
 * 2%), the full set is within 25% of ideal, and one path (random per
 * pair) is clearly worse. */
static void spraying_approaches_ideal(void **st)
{
	(void)st;
	const uint32_t paths[] = { 1, 2, 4, 8 };
	double prev = 1e9, first = 0, last = 0;
	for (int i = 0; i < 4; i++) {
		char p[32];
		snprintf(p, sizeof(p), "paths=%u", paths[i]);
		const char *kv[] = { "topo=clos:planes=1,leaves=8,spines=8,hosts=8",
			"workload=permutation:size=512K", p, NULL };
		struct mrc_sim *s = make(kv);
		struct mrc_sim_summary sum;
		mrc_sim_summary(s, &sum);
		assert_int_equal(sum.flows_done, sum.flows);
		print_message("paths %u: FCT/ideal p99 %.3f max %.3f\n", paths[i], sum.slow_p99,
			      sum.slow_max);
		if (sum.slow_max > prev * 1.02)
			print_error("seed %llu: paths %u max %.3f > previous %.3f\n",
				    (unsigned long long)seed, paths[i], sum.slow_max, prev);
		assert_true(sum.slow_max <= prev * 1.02);
		prev = sum.slow_max;
		if (!i)
			first = sum.slow_max;
		last = sum.slow_max;
		mrc_sim_destroy(s);
	}
	assert_true(last < 1.25);
	assert_true(first > 1.5 * last);
}

int main(void)
{
	const char *e = getenv("MRC_TEST_SEED");
	if (e)
		seed = strtoull(e, NULL, 0);
	print_message("test_sim: seed %llu (MRC_TEST_SEED)\n", (unsigned long long)seed);
	const struct CMUnitTest t[] = {
		cmocka_unit_test(permutation_delivers_every_byte),
		cmocka_unit_test(workloads_complete),
		cmocka_unit_test(oversized_message_refused),
		cmocka_unit_test(blackhole_spine_ev_states),
		cmocka_unit_test(same_seed_same_output),
		cmocka_unit_test(single_flow_matches_theory),
		cmocka_unit_test(spraying_approaches_ideal),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}

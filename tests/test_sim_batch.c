/* mrcsim's receive batches (--rx-batch, docs/sim.md "Receive batches"):
 * packets that reach a host in one batch are answered by one send turn,
 * so the engine coalesces their ACKs; "off" asks the engine for packets
 * after every arrival (one ACK each); a batch with a window takes the
 * arrivals within it; a batched run replays identically. */
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

static uint64_t seed = 1;

static struct mrc_sim *run(const char *topo, const char *wl, const char *batch)
{
	struct mrc_sim_cfg c;
	char err[MRC_SIM_ERRLEN], sd[24];
	mrc_sim_cfg_default(&c);
	snprintf(sd, sizeof(sd), "%llu", (unsigned long long)seed);
	assert_int_equal(mrc_sim_cfg_set(&c, "seed", sd, err, sizeof(err)), 0);
	assert_int_equal(mrc_sim_cfg_set(&c, "topo", topo, err, sizeof(err)), 0);
	assert_int_equal(mrc_sim_cfg_set(&c, "workload", wl, err, sizeof(err)), 0);
	if (batch && mrc_sim_cfg_set(&c, "rx-batch", batch, err, sizeof(err))) {
		print_error("rx-batch %s: %s\n", batch, err);
		fail();
	}
	struct mrc_sim *s;
	if (mrc_sim_create(&c, &s, err, sizeof(err)) || mrc_sim_run(s, err, sizeof(err))) {
		print_error("%s (seed %llu)\n", err, (unsigned long long)seed);
		fail();
	}
	struct mrc_sim_summary sum;
	mrc_sim_summary(s, &sum);
	assert_int_equal(sum.flows_done, sum.flows);
	assert_int_equal(sum.bytes_placed, sum.bytes);
	return s;
}

static uint64_t acks_of(const struct mrc_sim *s, uint32_t h)
{
	struct mrce_stats es;
	mrce_stats(mrc_sim_engine(s, h), &es);
	return es.tx_acks;
}

/* Two planes, one packet on each: both leave h0 at once over equal
 * paths, so they reach h4 (another leaf) at the same picosecond. */
#define TWO_PLANES "clos:planes=2,leaves=2,spines=2,hosts=4,rate=100G,delay=500ns"
#define TWO_PKTS "flow:src=h0,dst=h4,size=8K"

static void same_instant_arrivals_get_one_ack(void **st)
{
	(void)st;
	struct mrc_sim *s = run(TWO_PLANES, TWO_PKTS, NULL);   /* the default */
	uint64_t batched = acks_of(s, 4);
	mrc_sim_destroy(s);
	s = run(TWO_PLANES, TWO_PKTS, "0");
	assert_int_equal(acks_of(s, 4), batched);
	mrc_sim_destroy(s);
	s = run(TWO_PLANES, TWO_PKTS, "off");
	uint64_t off = acks_of(s, 4);
	mrc_sim_destroy(s);
	if (batched != 1 || off != 2)
		print_error("seed %llu: ACKs batched %llu, off %llu\n", (unsigned long long)seed,
			    (unsigned long long)batched, (unsigned long long)off);
	assert_int_equal(batched, 1);
	assert_int_equal(off, 2);
}

/* One plane: 8 packets arrive one frame time (339 ns) apart.  Without a
 * window each is its own batch (one NIC: no batch at all, as "off"), 8
 * ACKs; a 10 us window holds them all, and the engine sends one ACK per
 * ack_every (4) of them: 2. */
#define ONE_PLANE "clos:planes=1,leaves=2,spines=2,hosts=4,rate=100G,delay=500ns"
#define EIGHT_PKTS "flow:src=h0,dst=h4,size=32K"

static void window_takes_later_arrivals(void **st)
{
	(void)st;
	struct mrce_cfg ec;
	mrce_cfg_default(&ec);
	struct mrc_sim *s = run(ONE_PLANE, EIGHT_PKTS, "0");
	uint64_t zero = acks_of(s, 4);
	mrc_sim_destroy(s);
	s = run(ONE_PLANE, EIGHT_PKTS, "10us");
	uint64_t wide = acks_of(s, 4);
	mrc_sim_destroy(s);
	if (zero != 8 || wide != 8 / ec.ack_every)
		print_error("seed %llu: ACKs window 0: %llu, 10us: %llu\n",
			    (unsigned long long)seed, (unsigned long long)zero,
			    (unsigned long long)wide);
	assert_int_equal(zero, 8);
	assert_int_equal(wide, 8 / ec.ack_every);
}

/* A congested permutation, batched at the same instant (the batches end
 * when the run leaves the instant) and with a window (the batch end is an
 * event like any other): the same report twice. */
static void batched_run_replays(void **st)
{
	(void)st;
	const char *topo = "clos:planes=2,leaves=4,spines=2,hosts=4,rate=100G,delay=500ns";
	const char *batch[] = { "0", "1us", "off" };
	char *rep[3];
	for (int i = 0; i < 3; i++) {
		char *a, *b;
		struct mrc_sim *s = run(topo, "permutation:size=256K", batch[i]);
		assert_int_equal(mrc_sim_report_json(s, 0, &a), 0);
		mrc_sim_destroy(s);
		s = run(topo, "permutation:size=256K", batch[i]);
		assert_int_equal(mrc_sim_report_json(s, 0, &b), 0);
		mrc_sim_destroy(s);
		if (strcmp(a, b))
			print_error("seed %llu, rx-batch %s: reports differ\n",
				    (unsigned long long)seed, batch[i]);
		assert_string_equal(a, b);
		free(b);
		rep[i] = a;
	}
	assert_non_null(strstr(rep[1], "\"rx_batch_ns\": 1000"));
	assert_non_null(strstr(rep[2], "\"rx_batch\": \"off\""));
	for (int i = 0; i < 3; i++)
		free(rep[i]);
}

static void setting_is_checked(void **st)
{
	(void)st;
	struct mrc_sim_cfg c;
	char err[MRC_SIM_ERRLEN];
	mrc_sim_cfg_default(&c);
	assert_int_equal(mrc_sim_cfg_set(&c, "rx-batch", "2ms", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "rx-batch"));
	assert_int_equal(mrc_sim_cfg_set(&c, "rx-batch", "x", err, sizeof(err)), -EINVAL);
	assert_int_equal(mrc_sim_cfg_set(&c, "rx-batch", "500ns", err, sizeof(err)), 0);
	assert_int_equal(c.rx_batch_ns, 500);
	assert_int_equal(c.rx_batch_off, 0);
	assert_int_equal(mrc_sim_cfg_set(&c, "rx-batch", "off", err, sizeof(err)), 0);
	assert_int_equal(c.rx_batch_off, 1);
}

int main(void)
{
	const char *e = getenv("MRC_TEST_SEED");
	if (e)
		seed = strtoull(e, NULL, 10);
	printf("test_sim_batch: seed %llu\n", (unsigned long long)seed);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(same_instant_arrivals_get_one_ack),
		cmocka_unit_test(window_takes_later_arrivals),
		cmocka_unit_test(batched_run_replays),
		cmocka_unit_test(setting_is_checked),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

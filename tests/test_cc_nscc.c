/* Unit tests of the default congestion control (transport/cc_nscc.c)
 * through its ops table, without an engine: how often it may cut the
 * window when the fabric marks nothing (no ECN: the emulated fabric's tbf
 * queues, or a busy host's late ACKs).  Deterministic: fixed ACK spacing, no randomness. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "transport/cc.h"

#define US 1000ull
#define MS (1000 * US)
#define MTU 4096u
#define WIN 256u

static const struct mrce_cc_ops *cc = &mrce_cc_nscc;

static uint32_t start(uint64_t *st)
{
	cc->init(st, &(struct mrce_cc_params){ .mtu = MTU, .min_cwnd = MTU,
					       .max_cwnd = WIN * MTU, .planes = 2 });
	return cc->cwnd(st);
}

/* One packet acked every gap from t0 for span, each with round trip rtt
 * over a base of 200 us, no ECN; returns the time after the last. */
static uint64_t acks(uint64_t *st, uint64_t t0, uint64_t span, uint64_t gap, uint64_t rtt)
{
	uint64_t t = t0;
	for (; t < t0 + span; t += gap)
		cc->on_ack(st, &(struct mrce_cc_sample){ .now = t, .rtt_ns = rtt,
							 .base_rtt_ns = 200 * US,
							 .acked_bytes = MTU });
	return t;
}

/* Round trips of 20 ms against a 200 us base (far past 4x the target,
 * no ECN): one round trip of ACKs, one every 100 us, cuts the window at
 * most twice (once per sampled RTT: a cut shows only a round trip later).
 * Once per base RTT cut it a hundred times here, to one packet, as it
 * cut QPs of the MPI all-to-all on the emulated fabric (issue 32). */
static void test_no_ecn_delay_cut_per_rtt(void **state)
{
	uint64_t st[MRCE_CC_STATE_MAX / 8];
	uint32_t w0 = start(st);
	acks(st, 1 * MS, 20 * MS, 100 * US, 20 * MS);
	uint32_t w = cc->cwnd(st);
	assert_true(w < w0);                       /* it does back off */
	assert_true(w >= (uint64_t)w0 * 49 / 64);  /* by 1/8 at most twice */
	(void)state;
}

/* The delay that persists keeps cutting, once per round trip: ten round
 * trips of it take the window below half. */
static void test_no_ecn_delay_keeps_cutting(void **state)
{
	uint64_t st[MRCE_CC_STATE_MAX / 8];
	uint32_t w0 = start(st);
	acks(st, 1 * MS, 200 * MS, 100 * US, 20 * MS);
	uint32_t w = cc->cwnd(st);
	assert_true(w < w0 / 2);
	assert_true(w >= MTU);
	(void)state;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_ecn_delay_cut_per_rtt),
		cmocka_unit_test(test_no_ecn_delay_keeps_cutting),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

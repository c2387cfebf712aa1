/* The engine's cost per daemon loop round as idle QPs grow: one engine
 * with N connected, idle QPs and one busy QP (one packet sent and never
 * acknowledged, so its RTO is armed); the time of mrce_next_deadline (mrcd
 * calls it once per round, mrcd_flush) and of an mrce_tick that finds
 * nothing due, per call.  No I/O, no clock other than the measurement's.
 * Issue 16: idle QPs must cost nothing; the engine walked every QP in both
 * before its timer heap (transport/timers.c).  Build this file against an
 * older engine for the baseline (the report names the command).
 * MRC_BENCH_RUNS runs (default 5): median (min..max). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "transport/engine.h"

#define CALLS 20000
#define MAXRUNS 16

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* ns per call of mrce_next_deadline and of an idle mrce_tick. */
static int one(uint32_t nidle, double *dl_ns, double *tick_ns)
{
	struct mrce_cfg c;
	mrce_cfg_default(&c);
	c.max_qps = 16384;
	struct mrce *e;
	const char *why;
	if (mrce_create(&c, &e, &why))
		return -1;
	uint8_t planes[8] = { 0, 0, 0, 0, 1, 1, 1, 1 };
	uint32_t peer, qpn, key;
	static uint8_t buf[4096];
	int rc = -1;
	if (mrce_peer_add(e, 8, planes, &peer) ||
	    mrce_mr_add(e, 0, buf, sizeof(buf), MRCE_ACCESS_LOCAL_READ, &key))
		goto out;
	for (uint32_t i = 0; i <= nidle; i++) {
		struct mrce_qp_attr a = { 0 };
		if (mrce_qp_open(e, &a, &qpn) || mrce_qp_connect(e, qpn, peer, 1000 + i, 0, 0))
			goto out;
	}
	/* The last QP is the busy one: a packet in flight, RTO armed. */
	struct mrc_sqe w = { .op = MRC_SQE_WRITE, .wr_id = 1, .lkey = key, .len = 64, .rkey = 1 };
	struct mrce_tx_pkt pk[4];
	if (mrce_qp_post(e, 1, qpn, &w) || mrce_tx(e, 1, pk, 4) != 1 ||
	    mrce_next_deadline(e) == UINT64_MAX)
		goto out;
	volatile uint64_t sink = 0;
	uint64_t t0 = now_ns();
	for (int k = 0; k < CALLS; k++)
		sink += mrce_next_deadline(e);
	uint64_t t1 = now_ns();
	for (int k = 0; k < CALLS; k++)
		mrce_tick(e, 2);   /* long before the RTO: nothing due */
	uint64_t t2 = now_ns();
	(void)sink;
	*dl_ns = (double)(t1 - t0) / CALLS;
	*tick_ns = (double)(t2 - t1) / CALLS;
	rc = 0;
out:
	mrce_destroy(e);
	return rc;
}

int main(void)
{
	unsigned runs = 5;
	const char *s = getenv("MRC_BENCH_RUNS");
	if (s && atoi(s) > 0)
		runs = (unsigned)atoi(s) < MAXRUNS ? (unsigned)atoi(s) : MAXRUNS;
	printf("## bench_timers: engine cost per loop round with idle QPs\n\n");
	printf("One engine, N connected idle QPs and one with a packet in flight (RTO armed); "
	       "ns per call, %d calls, %u runs: median (min..max).  mrcd calls "
	       "mrce_next_deadline once per loop round; mrce_tick here finds nothing due.\n\n",
	       CALLS, runs);
	printf("| idle QPs | mrce_next_deadline ns | mrce_tick ns |\n|--:|--:|--:|\n");
	static const uint32_t ns[] = { 0, 1000, 10000 };
	for (unsigned i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
		double d[MAXRUNS], t[MAXRUNS];
		unsigned ok = 0;
		for (unsigned r = 0; r < runs; r++)
			if (!one(ns[i], &d[ok], &t[ok]))
				ok++;
		if (!ok) {
			printf("| %u | failed | failed |\n", ns[i]);
			continue;
		}
		qsort(d, ok, sizeof(d[0]), cmp_d);
		qsort(t, ok, sizeof(t[0]), cmp_d);
		printf("| %u | %.1f (%.1f..%.1f) | %.1f (%.1f..%.1f) |\n", ns[i], d[ok / 2], d[0],
		       d[ok - 1], t[ok / 2], t[0], t[ok - 1]);
	}
	return 0;
}

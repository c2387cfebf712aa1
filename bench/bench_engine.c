/* Engine-only throughput on one core: two engines on the in-memory
 * channel (tests/support/chan), 4 KiB MTU, 64 EVs over 8 planes, 2..4 us
 * one-way delays, clean and with 1% random loss, 1 and 64 QPs each keeping
 * four 1 MiB WRITEs outstanding.  Wall time covers everything one core does
 * for both ends: the sender's header and CRC work, the channel's copy of
 * every datagram (what a NIC's DMA would do), the receiver's checks and
 * placement copy, ACK generation and processing.  Prints a markdown table
 * of medians (min..max) over MRC_BENCH_RUNS runs (default 5) of
 * MRC_BENCH_MB MiB each (default 512); MRC_BENCH_QPS=<n> runs only the
 * rows with n QPs. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/support/chan.h"
#include "tests/support/gbuf.h"

#define MSG      (1u << 20)
#define OUTSTAND 4
#define BUF      (8u << 20)
#define MAXQ     64

struct bench {
	struct chan *ch;
	uint32_t qa[MAXQ], nq;
	uint32_t lkey, rkey;
	uint64_t posted, target_msgs, done_msgs, err;
	struct mrc_rng r;
};

static void post_one(struct bench *b, uint32_t qi)
{
	struct mrc_sqe wr = { .wr_id = qi, .op = MRC_SQE_WRITE, .lkey = b->lkey,
			     .loff = mrc_rng_below(&b->r, (BUF - MSG) / 4096) * 4096,
			     .len = MSG, .rkey = b->rkey,
			     .roff = mrc_rng_below(&b->r, (BUF - MSG) / 4096) * 4096 };
	if (mrce_qp_post(b->ch->node[0].e, b->ch->now, b->qa[qi], &wr) == 0)
		b->posted++;
	else
		b->err++;
}

static void on_wc(struct chan *ch, uint32_t n, const struct mrce_wc *wc, void *arg)
{
	struct bench *b = arg;
	if (n != 0)
		return;
	if (wc->status)
		b->err++;
	b->done_msgs++;
	if (b->posted < b->target_msgs)
		post_one(b, (uint32_t)wc->wr_id);
}

static int done(struct chan *ch, void *arg)
{
	struct bench *b = arg;
	return b->done_msgs >= b->target_msgs || b->err;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

struct result {
	double pps, gbps, all_pps, retx_pct;
	size_t qp_bytes;
};

static int run_once(uint32_t nq, double loss, uint64_t mib, uint64_t seed, uint32_t mtu,
		    struct result *res)
{
	struct chan_cfg cc;
	struct bench b = { .nq = nq };
	struct chan_gbuf src, dst;
	struct mrce_qp_attr attr = { .pd = 1 };
	const char *why = NULL;
	int rc;

	chan_cfg_default(&cc, seed);
	cc.nev = 64;
	cc.planes = 8;
	cc.delay_min = 2000;
	cc.delay_max = 4000;
	cc.keep_logs = 0;
	cc.path.loss = loss;
	cc.ecfg.mtu = mtu;
	cc.ecfg.max_qps = 128;
	rc = chan_create(&cc, &b.ch, &why);
	if (rc) {
		fprintf(stderr, "chan_create: %d %s\n", rc, why ? why : "");
		return rc;
	}
	mrc_rng_seed(&b.r, seed);
	if (chan_gbuf_alloc(&src, BUF, 64, seed, 1, 0) || chan_gbuf_alloc(&dst, BUF, 64, seed + 1, 0, 0))
		return -1;
	mrce_mr_add(b.ch->node[0].e, 1, src.p, BUF, MRCE_ACCESS_LOCAL_READ, &b.lkey);
	mrce_mr_add(b.ch->node[1].e, 1, dst.p, BUF, MRCE_ACCESS_REMOTE_WRITE, &b.rkey);
	for (uint32_t i = 0; i < nq; i++) {
		uint32_t qb;
		if (chan_qp_pair(b.ch, 0, 1, &attr, &attr, &b.qa[i], &qb))
			return -1;
	}
	b.target_msgs = mib;     /* 1 MiB messages */
	b.ch->on_wc = on_wc;
	b.ch->hook_arg = &b;
	for (uint32_t i = 0; i < nq; i++)
		for (int k = 0; k < OUTSTAND && b.posted < b.target_msgs; k++)
			post_one(&b, i);
	double t0 = now_s();
	rc = chan_run(b.ch, done, &b, 3600ull * 1000000000ull, UINT64_MAX);
	double dt = now_s() - t0;
	if (rc || b.err) {
		fprintf(stderr, "bench run failed: rc %d, %" PRIu64 " errors\n", rc, b.err);
		rc = -1;
	} else {
		struct mrce_stats s0, s1;
		mrce_stats(b.ch->node[0].e, &s0);
		mrce_stats(b.ch->node[1].e, &s1);
		res->pps = (double)s1.bytes_placed / mtu / dt;
		res->gbps = (double)s1.bytes_placed * 8 / dt / 1e9;
		res->all_pps = (double)(s0.tx_pkts + s1.tx_pkts) / dt;
		res->retx_pct = s0.tx_data ? 100.0 * (double)s0.tx_retx / (double)s0.tx_data : 0;
		res->qp_bytes = mrce_qp_bytes(b.ch->node[0].e);
	}
	chan_destroy(b.ch);
	chan_gbuf_free(&src);
	chan_gbuf_free(&dst);
	return rc;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void stat3(double *v, int n, char *out, size_t sz, const char *fmt)
{
	char a[32], b[32], c[32];
	qsort(v, (size_t)n, sizeof(*v), cmp_d);
	snprintf(a, sizeof(a), fmt, v[n / 2]);
	snprintf(b, sizeof(b), fmt, v[0]);
	snprintf(c, sizeof(c), fmt, v[n - 1]);
	snprintf(out, sz, "%s (%s..%s)", a, b, c);
}

int main(void)
{
	const char *e;
	int runs = (e = getenv("MRC_BENCH_RUNS")) ? atoi(e) : 5;
	uint64_t mib = (e = getenv("MRC_BENCH_MB")) ? strtoull(e, NULL, 0) : 512;
	char model[600] = "unknown", date[64];
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[512];
	time_t t = time(NULL);

	if (runs < 1 || runs > 99)
		runs = 5;
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "model name", 10)) {
			char *p = strchr(line, ':');
			snprintf(model, sizeof(model), "%s", p ? p + 2 : line);
			model[strcspn(model, "\n")] = 0;
			break;
		}
	if (f)
		fclose(f);
	strftime(date, sizeof(date), "%Y-%m-%d %H:%M UTC", gmtime(&t));

	printf("## bench_engine: MRC engine throughput on one core\n\n");
	printf("Machine: %s; date: %s; %d runs of %" PRIu64 " MiB each, median (min..max).\n",
	       model, date, runs, mib);
	printf("Two engines in one thread over the in-memory channel (every datagram copied "
	       "once, as a NIC's DMA would), 4 KiB MTU, 64 EVs / 8 planes, 1 MiB WRITEs, "
	       "4 outstanding per QP.\n\n");
	printf("| QPs | loss | placed pkts/s | placed Gbit/s | all pkts/s (data+ACK) | retx %% |\n");
	printf("|----:|-----:|--------------:|--------------:|----------------------:|-------:|\n");
	size_t qp_bytes = 0;
	static const uint32_t nqs[] = { 1, 64 };
	static const double losses[] = { 0.0, 0.01 };
	/* MRC_BENCH_QPS=<n>: only the rows with n QPs (for profiling). */
	uint32_t only = (e = getenv("MRC_BENCH_QPS")) ? (uint32_t)atoi(e) : 0;
	for (int qi = 0; qi < 2; qi++)
		for (int li = 0; li < 2; li++) {
			if (only && nqs[qi] != only)
				continue;
			double pps[99], gbps[99], all[99], retx[99];
			struct result r;
			for (int k = 0; k < runs; k++) {
				if (run_once(nqs[qi], losses[li], mib, 1000 + (uint64_t)k, 4096, &r))
					return 1;
				pps[k] = r.pps / 1e6;
				gbps[k] = r.gbps;
				all[k] = r.all_pps / 1e6;
				retx[k] = r.retx_pct;
				qp_bytes = r.qp_bytes;
			}
			char a[128], b[128], c[128], d[128];
			stat3(pps, runs, a, sizeof(a), "%.2fM");
			stat3(gbps, runs, b, sizeof(b), "%.1f");
			stat3(all, runs, c, sizeof(c), "%.2fM");
			stat3(retx, runs, d, sizeof(d), "%.2f");
			printf("| %u | %.0f%% | %s | %s | %s | %s |\n", nqs[qi], losses[li] * 100,
			       a, b, c, d);
			fflush(stdout);
		}
	/* Header work alone: small packets, where per-packet protocol work
	 * (not CRC and copying of payload) sets the rate. */
	printf("\nHeader-dominated: 256-byte MTU (payload work small), 1 QP, no loss, "
	       "%" PRIu64 " MiB:\n\n| MTU | placed pkts/s | all pkts/s (data+ACK) |\n|----:|----:|----:|\n",
	       mib / 8);
	{
		double pps[99], all[99];
		struct result r;
		for (int k = 0; k < runs; k++) {
			if (run_once(1, 0.0, mib / 8, 2000 + (uint64_t)k, 256, &r))
				return 1;
			pps[k] = r.pps / 1e6;
			all[k] = r.all_pps / 1e6;
		}
		char a[128], c[128];
		stat3(pps, runs, a, sizeof(a), "%.2fM");
		stat3(all, runs, c, sizeof(c), "%.2fM");
		printf("| 256 | %s | %s |\n", a, c);
	}
	printf("\nMemory per QP (mrce_qp_bytes, default config: window 256, "
	       "sq/rq depth 256): %zu bytes\n", qp_bytes);
	return 0;
}

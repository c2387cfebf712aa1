/* mrc_coll_straggler's read of its QPs' counters (issue 34 item 4): the
 * wall time to read Q QPs with mrc_qp_stats, one mrcd round trip per QP,
 * against mrc_qp_stats_n, one per 12, on a private mrcd on loopback.  The
 * two alternate within each rep (the order swapped every rep); each rep
 * prints the median of ITERS reads of each, and the end the median
 * [min, max] over the reps and the load average (bench/results/qpstats.md).
 *   bench_qpstats [REPS [ITERS]]     (defaults 9, 200) */
#include <stdio.h>
#include <stdlib.h>

#include "bench/bench_mrcd.h"
#include "mrc/mrc.h"

#define MAXQ 96

static uint64_t read_all(struct mrc_qp **qps, unsigned q, int batched, int iters)
{
	static uint64_t t[4096];
	static struct mrc_qp_stats st[MAXQ];
	static int rc[MAXQ];
	for (int i = 0; i < iters; i++) {
		uint64_t t0 = bm_now_ns();
		if (batched) {
			if (mrc_qp_stats_n(qps, q, st, rc))
				exit(1);
		} else {
			for (unsigned k = 0; k < q; k++)
				if (mrc_qp_stats(qps[k], &st[k]))
					exit(1);
		}
		t[i] = bm_now_ns() - t0;
	}
	return bm_quantile(t, (size_t)iters, 0.5, 0);
}

int main(int argc, char **argv)
{
	int reps = argc > 1 ? atoi(argv[1]) : 9, iters = argc > 2 ? atoi(argv[2]) : 200;
	static const unsigned qs[] = { 3, 12, 48, 96 };
	enum { NQ = sizeof(qs) / sizeof(qs[0]) };
	if (reps < 1 || reps > 64 || iters < 1 || iters > 4096)
		return 2;
	const char *extra[] = { "--client_max_qps=128", "--uid_max_qps=128", NULL };
	struct bm_mrcd d;
	struct mrc_ctx *ctx;
	struct mrc_qp *qps[MAXQ];
	if (bm_mrcd_start(&d, extra) || mrc_open(d.sock, &ctx))
		return 1;
	for (unsigned k = 0; k < MAXQ; k++)
		if (mrc_create_qp(ctx, NULL, &qps[k]))
			return 1;
	double one[NQ][64], batch[NQ][64];
	for (int r = 0; r < reps; r++)
		for (unsigned i = 0; i < NQ; i++)
			for (int o = 0; o < 2; o++) {
				int b = (o + r) % 2;
				double us = (double)read_all(qps, qs[i], b, iters) / 1000.0;
				(b ? batch : one)[i][r] = us;
				printf("rep %d Q %u %s %.1f us\n", r, qs[i], b ? "qp_stats_n" : "qp_stats", us);
			}
	double la[3] = { 0 };
	getloadavg(la, 3);
	printf("| QPs | mrc_qp_stats x Q (us) | mrc_qp_stats_n (us) |\n|---|---|---|\n");
	for (unsigned i = 0; i < NQ; i++) {
		char a[96], b[96];
		printf("| %u | %s | %s |\n", qs[i], bm_spread(a, sizeof(a), one[i], reps, "%.1f"),
		       bm_spread(b, sizeof(b), batch[i], reps, "%.1f"));
	}
	printf("load average %.2f %.2f %.2f, %d reps of %d reads each\n", la[0], la[1], la[2], reps, iters);
	for (unsigned k = 0; k < MAXQ; k++)
		mrc_destroy_qp(qps[k]);
	mrc_close(ctx);
	bm_mrcd_stop(&d);
	return 0;
}

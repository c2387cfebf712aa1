/* The power-floor hint's cost on the client path (docs/power.md "Power
 * floor"): sequential 8-byte WRITE round trips through a private mrcd on
 * loopback with power_floor off (the default) and on (hold 0: the word is
 * raised and lowered on every WRITE, its worst case), the two alternated
 * rep by rep so the shared machine's load falls on both alike; median
 * [min, max] of the reps' mean, and the load average.
 * Usage: bench_floor [writes per rep, 2000] [reps, 5] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_mrcd.h"
#include "mrc/mrc.h"

/* One rep: mean ns per WRITE round trip, or a negative errno. */
static double rep(const char *const *extra, int n)
{
	struct bm_mrcd d;
	memset(&d, 0, sizeof(d));
	if (bm_mrcd_start(&d, extra))
		return -1;
	struct mrc_ctx *ctx = NULL;
	struct mrc_qp *a = NULL, *b = NULL;
	struct mrc_mr *src = NULL, *dst = NULL;
	struct mrc_qp_addr la, lb;
	double r = -1;
	if (mrc_open(d.sock, &ctx) || mrc_alloc_mr(ctx, 4096, MRC_MR_LOCAL_READ, &src) ||
	    mrc_alloc_mr(ctx, 4096, MRC_MR_ALL, &dst) || mrc_create_qp(ctx, NULL, &a) ||
	    mrc_create_qp(ctx, NULL, &b) || mrc_qp_info_get(a, &la) || mrc_qp_info_get(b, &lb) ||
	    mrc_connect_oob(a, &lb) || mrc_connect_oob(b, &la))
		goto out;
	uint64_t t0 = 0;
	for (int i = -100; i < n; i++) {   /* 100 warm-up WRITEs */
		if (i == 0)
			t0 = bm_now_ns();
		if (mrc_post_write(a, (uint64_t)(i + 100), mrc_mr_key(src), 0, 8, mrc_mr_key(dst), 0))
			goto out;
		struct mrc_completion c;
		int got;
		while ((got = mrc_poll_cq(a, &c, 1)) == 0)
			bm_cpu_relax();
		if (got < 0 || c.status)
			goto out;
	}
	r = (double)(bm_now_ns() - t0) / n;
out:
	if (ctx)
		mrc_close(ctx);
	bm_mrcd_stop(&d);
	return r;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 2000, reps = argc > 2 ? atoi(argv[2]) : 5;
	if (n < 1 || reps < 1 || reps > 64)
		return 2;
	static const char *const off[] = { NULL };
	static const char *const on[] = { "--power_floor=1", "--power_floor_hold_us=0", NULL };
	double v[2][64];
	char m[256], s0[96], s1[96];
	bm_machine(m, sizeof(m));
	for (int k = 0; k < reps; k++)
		for (int w = 0; w < 2; w++)
			if ((v[w][k] = rep(w ? on : off, n)) < 0) {
				fprintf(stderr, "bench_floor: rep %d (%s) failed\n", k, w ? "on" : "off");
				return 1;
			}
	double la[3] = { 0, 0, 0 };
	getloadavg(la, 3);
	printf("%s; load average at end %.2f\n", m, la[0]);
	printf("%d WRITEs x %d reps each, off/on alternated; us per WRITE round trip, median (min..max)\n",
	       n, reps);
	for (int k = 0; k < reps; k++)
		v[0][k] /= 1000, v[1][k] /= 1000;
	printf("| power_floor | us/WRITE |\n|---|---:|\n| off | %s |\n| on, hold 0 | %s |\n",
	       bm_spread(s0, sizeof(s0), v[0], reps, "%.2f"),
	       bm_spread(s1, sizeof(s1), v[1], reps, "%.2f"));
	return 0;
}

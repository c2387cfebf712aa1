/* mrc-coll-perf -C moe: one MoE layer's dispatch + combine, flat and 2-D
 * hierarchical alternated in one run, median time of each and the ratio.
 * Routing is seeded per rank (uniform top-k over the experts, weights
 * 0.75 / 0.25 / ...), the experts are the identity (the exchange is what
 * is measured), and the result of the last run of each is checked against
 * the local reference: out[t] = sum of the kept weights x token t. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coll/coll_int.h"
#include "coll/perf_moe.h"
#include "common/prng.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_d);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* One dispatch + combine; *wrong counts output elements off the
 * reference (capacity unlimited: every pair kept). */
static int once(struct mrc_coll *c, const struct mrc_coll_moe_cfg *mc, size_t T, const int32_t *idx,
		const float *w, const uint16_t *x, uint16_t *out, size_t *wrong)
{
	struct mrc_coll_moe_plan *plan;
	void *ein;
	size_t *counts = calloc(mc->n_experts, sizeof(*counts));
	if (!counts)
		return -ENOMEM;
	int r = mrc_coll_moe_dispatch(c, mc, T, idx, x, &plan, &ein, counts);
	if (!r) {
		r = mrc_coll_moe_combine(c, plan, ein, w, out);
		mrc_coll_moe_plan_free(plan);
		free(ein);
	}
	free(counts);
	if (r || !wrong)
		return r;
	for (size_t t = 0; t < T; t++) {
		float ws = 0;
		for (uint32_t k = 0; k < mc->top_k; k++)
			ws += w[t * mc->top_k + k];
		for (size_t h = 0; h < mc->hidden; h++) {
			size_t i = t * mc->hidden + h;
			*wrong += out[i] != mrc__coll_f2bf(ws * mrc__coll_bf2f(x[i]));
		}
	}
	return 0;
}

int mrc__perf_moe(struct mrc_coll *c, size_t T, size_t H, uint32_t E, uint32_t K, uint32_t L,
		  int iters)
{
	uint32_t n = mrc_coll_size(c), me = mrc_coll_rank(c);
	if (!L)
		L = n % 2 ? 1 : 2;
	if (E % n || n % L || K == 0 || K > E || iters < 1 || iters > 64)
		return -EINVAL;
	struct mrc_rng g;
	mrc_rng_seed(&g, 4242 + me);
	int32_t *idx = malloc(T * K * sizeof(*idx));
	float *w = malloc(T * K * sizeof(*w));
	uint16_t *x = malloc(T * H * 2), *out = malloc(T * H * 2);
	int r = idx && w && x && out ? 0 : -ENOMEM;
	for (size_t t = 0; !r && t < T; t++) {
		/* K distinct experts: a random start, then random strides. */
		uint32_t e = (uint32_t)mrc_rng_below(&g, E);
		for (uint32_t k = 0; k < K; k++) {
			idx[t * K + k] = (int32_t)((e + k) % E);
			w[t * K + k] = k ? 0.25f / (float)(K - 1) : 0.75f;
		}
	}
	for (size_t i = 0; !r && i < T * H; i++)
		x[i] = mrc__coll_f2bf((float)((i * 7 + me) % 13) - 6);
	double t[2][64];
	size_t wrong = 0;
	if (!r && me == 0)
		printf("# moe: %u ranks, %zu tokens x %zu hidden bfloat16 per rank, %u experts, top-%u, "
		       "2-D with %u ranks per node; %d runs each, alternated\n", n, T, H, E, K, L, iters);
	for (int it = 0; it <= iters && !r; it++)   /* run 0 warms up */
		for (int v = 0; v < 2 && !r; v++) {
			struct mrc_coll_moe_cfg mc = { .n_experts = E, .top_k = K, .hidden = H,
						       .dtype = MRC_COLL_BFLOAT16, .local_ranks = v ? L : 0 };
			if ((r = mrc_coll_barrier(c)))
				break;
			double t0 = now_s();
			r = once(c, &mc, T, idx, w, x, out, it == iters ? &wrong : NULL);
			double dt = now_s() - t0;
			if (!r)
				r = mrc_coll_allreduce(c, &dt, &dt, 1, MRC_COLL_FLOAT64, MRC_COLL_MAX);
			if (it)
				t[v][it - 1] = dt;
		}
	int64_t bad = (int64_t)wrong;
	if (!r)
		r = mrc_coll_allreduce(c, &bad, &bad, 1, MRC_COLL_INT64, MRC_COLL_SUM);
	if (!r && me == 0) {
		double f = median(t[0], iters), d = median(t[1], iters);
		printf("# %10s %12s %12s %8s\n", "variant", "median ms", "min ms", "#wrong");
		printf("  %10s %12.1f %12.1f %8s\n", "flat", f * 1e3, t[0][0] * 1e3, "");
		printf("  %10s %12.1f %12.1f %8s\n", "2-D", d * 1e3, t[1][0] * 1e3, "");
		printf("  %10s %12.3f %12s %8lld\n", "2-D/flat", d / f, "", (long long)bad);
		printf("# Out of bounds values : %lld %s\n", (long long)bad, bad ? "FAILED" : "OK");
	}
	free(idx), free(w), free(x), free(out);
	return r ? r : bad ? -EPROTO : 0;
}

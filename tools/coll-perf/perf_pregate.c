/* mrc-coll-perf's pre-gate mode (-C pregate; docs/coll.md "Pre-gated
 * dispatch"): one MoE layer after a layer of compute, plain against
 * pre-gated, with 0, 10 and 30 % of the predicted experts changed, the
 * nine variants alternated step by step:
 *   plain     compute(layer l); dispatch_kept(actual); combine;
 *   pregated  ipregate(predicted); compute(layer l), testing the request
 *             every tick; dispatch_pregated(actual); combine;
 *   slack     pregated with MRC_COLL_PREGATE_SLACK: the prediction's
 *             rows plus that many percent, room for mispredicted rows.
 * With ranks per node (1 < L < ranks) the layer is 2-D: plain is the 2-D
 * dispatch of rows per rank (MRC__MOE_RANK_2D, as the pre-gated one).
 * The compute stub sleeps in slices (the CPU is free, as while a GPU
 * computes).  Per variant the MoE layer's latency (end of compute to end
 * of combine) and the exposed time (step - compute), medians over the
 * steps, the slowest rank's; the rows the correction exchange carried and
 * its time.  Every pre-gated step's experts' input, counts and output
 * are compared, element by element, with the plain variant's of the same
 * routing in that step (the experts are the identity, so the output alone
 * would not see a token at the wrong expert), and every plain step's
 * output with the local reference; the wrong elements are counted. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/prng.h"
#include "coll/coll_int.h"
#include "coll/moe_int.h"
#include "tools/coll-perf/perf_pregate.h"

#define NMIS 3
#define NV 3                   /* plain, pregated, slack */
static const double mis_rate[NMIS] = { 0, 0.1, 0.3 };

struct pgb {
	struct mrc_coll *c;
	struct mrc_coll_moe_cfg cfg;
	size_t T;
	double comp, tick;         /* seconds */
	char slack[16];            /* MRC_COLL_PREGATE_SLACK of the slack variant */
	int32_t *pred, *act[NMIS];
	float *w;
	uint16_t *x, *out[2];      /* tokens; plain's and pre-gated's output */
	uint16_t *ref_in;          /* plain's experts' input, its counts */
	size_t ref_cap, ref_counts[64];
	int64_t wrong[4];          /* elements off: input, counts (rows), output, plain's output */
};

/* Plain (pg 0): keeps its experts' input and counts.  Pre-gated: counts
 * the elements of its experts' input that differ from plain's, and an
 * expert's rows one has and the other not as wrong. */
static int check_in(struct pgb *b, int pg, const uint16_t *ein, const size_t *counts)
{
	uint32_t epr = b->cfg.n_experts / mrc_coll_size(b->c);
	size_t H = b->cfg.hidden, n = 0;
	if (!pg) {
		for (uint32_t e = 0; e < epr; e++)
			n += counts[e];
		if (n * H > b->ref_cap) {
			uint16_t *m = realloc(b->ref_in, n * H * sizeof(*m));
			if (!m)
				return -ENOMEM;
			b->ref_in = m, b->ref_cap = n * H;
		}
		if (n)
			memcpy(b->ref_in, ein, n * H * sizeof(*ein));
		memcpy(b->ref_counts, counts, epr * sizeof(*counts));
		return 0;
	}
	const uint16_t *q = b->ref_in;
	for (uint32_t e = 0; e < epr; e++) {
		size_t k = counts[e] < b->ref_counts[e] ? counts[e] : b->ref_counts[e];
		for (size_t i = 0; i < k * H; i++)
			b->wrong[0] += ein[i] != q[i];
		b->wrong[1] += (int64_t)((counts[e] + b->ref_counts[e] - 2 * k) * H);
		ein += counts[e] * H, q += b->ref_counts[e] * H;
	}
	return 0;
}

/* Pre-gated: its output's elements off plain's.  Plain: off the local
 * reference, x times the token's summed weights (x small integers, the
 * weights quarters: exact in bfloat16 whatever the order of the sums). */
static void check_out(struct pgb *b, int pg)
{
	size_t K = b->cfg.top_k, H = b->cfg.hidden;
	for (size_t t = 0; t < b->T; t++) {
		float ws = 0;
		for (size_t k = 0; k < K; k++)
			ws += b->w[t * K + k];
		for (size_t h = 0; h < H; h++) {
			size_t i = t * H + h;
			if (pg)
				b->wrong[2] += b->out[1][i] != b->out[0][i];
			else
				b->wrong[3] += b->out[0][i] != mrc__coll_f2bf(mrc__coll_bf2f(b->x[i]) * ws);
		}
	}
}

/* Sleeps t seconds in slices of tick, testing *q between them. */
static int compute(const struct pgb *b, struct mrc_coll_req **q)
{
	double end = mrc__mono_s() + b->comp, now;
	while ((now = mrc__mono_s()) < end) {
		double d = end - now < b->tick ? end - now : b->tick;
		struct timespec ts = { (time_t)d, (long)((d - (time_t)d) * 1e9) };
		nanosleep(&ts, NULL);   /* the stub itself, not a synchronisation */
		if (*q) {
			int r = mrc_coll_test(*q);
			if (r != -EINPROGRESS) {
				*q = NULL;
				if (r)
					return r;
			}
		}
	}
	return 0;
}

/* One step of mis level m, plain (pg 0), pre-gated (1) or with slack
 * (2): layer and step seconds, the correction's rows and time. */
static int step(struct pgb *b, int m, int pg, double *layer, double *stepd, double *extra,
		double *tcorr)
{
	struct mrc_coll_moe_plan *plan = NULL;
	struct mrc_coll_moe_pregate *g = NULL;
	struct mrc_coll_req *q = NULL;
	void *ein = NULL;
	size_t counts[64];
	int r = mrc_coll_barrier(b->c);
	double t0 = mrc__mono_s();
	if (pg)   /* read at the pre-gate's start */
		setenv("MRC_COLL_PREGATE_SLACK", pg == 2 ? b->slack : "0", 1);
	if (!r && pg)
		r = mrc_coll_moe_ipregate(b->c, &b->cfg, b->T, b->pred, &g, &q);
	if (!r)
		r = compute(b, &q);
	double t1 = mrc__mono_s();
	if (!r)
		r = pg ? mrc_coll_moe_dispatch_pregated(b->c, g, b->act[m], b->w, b->x, &plan, &ein,
							counts)
		       : mrc__coll_moe_dispatch_run(b->c, &b->cfg, b->T, b->act[m], b->w, b->x,
						    MRC__MOE_KEPT | (b->cfg.local_ranks ? MRC__MOE_RANK_2D : 0),
						    &plan, &ein, counts);
	double tc0 = mrc__mono_s();
	if (!r)   /* outside the timed span: a copy, or a comparison */
		r = check_in(b, pg, ein, counts);
	double tc = mrc__mono_s();
	if (!r)   /* the experts: the identity, in place */
		r = mrc_coll_moe_combine(b->c, plan, ein, b->out[pg > 0]);
	double t2 = mrc__mono_s();
	if (q) {
		int w = mrc_coll_wait(q);
		r = r ? r : w;
	}
	*layer = t2 - t1 - (tc - tc0), *stepd = t2 - t0 - (tc - tc0);
	if (!r && plan) {
		struct mrc__coll_moe_stats st;
		mrc__coll_moe_stats(plan, &st);
		*extra = (double)st.rows_extra, *tcorr = st.t_corr;
	}
	if (!r)
		check_out(b, pg);
	mrc_coll_moe_plan_free(plan);
	mrc_coll_moe_pregate_free(g);
	return r;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The routings (distinct experts per token; act[m]: each pair changed
 * with chance mis_rate[m] to one the token has not), weights, tokens. */
static void make_layer(struct pgb *b, uint64_t seed)
{
	uint32_t K = b->cfg.top_k, E = b->cfg.n_experts;
	struct mrc_rng g;
	mrc_rng_seed(&g, seed);
	for (size_t i = 0; i < b->T * K; i++) {
		int32_t e;
		int dup;
		do {
			e = (int32_t)mrc_rng_below(&g, E), dup = 0;
			for (size_t j = i - i % K; j < i; j++)
				dup |= b->pred[j] == e;
		} while (dup);
		b->pred[i] = e, b->w[i] = (float)(1 + mrc_rng_below(&g, 4)) / 4;
	}
	for (int m = 0; m < NMIS; m++) {
		memcpy(b->act[m], b->pred, b->T * K * sizeof(*b->pred));
		for (size_t i = 0; i < b->T * K; i++) {
			if (!mrc_rng_chance(&g, mis_rate[m]))
				continue;
			int32_t e;
			int dup;
			do {
				e = (int32_t)mrc_rng_below(&g, E), dup = 0;
				for (size_t j = i - i % K; j < i - i % K + K; j++)
					dup |= b->act[m][j] == e;
			} while (dup);
			b->act[m][i] = e;
		}
	}
	for (size_t i = 0; i < b->T * b->cfg.hidden; i++)   /* bfloat16 of small integers */
		b->x[i] = (uint16_t)(mrc__coll_f2bf((float)(int)mrc_rng_below(&g, 9) - 4));
}

static void print(const struct pgb *b, int iters, double med[NV * NMIS][4])
{
	static const char *const name[NV] = { "plain", "pregated", "slack" };
	char lay[32] = "flat";
	if (b->cfg.local_ranks)
		snprintf(lay, sizeof(lay), "2-D, nodes of %u ranks", b->cfg.local_ranks);
	printf("# mrc-coll-perf pregate: %u ranks, %s, %zu tokens x %zu bfloat16 per rank, %u experts, top-%u, compute %.0f us (sleeping), tests every %.0f us, slack %s%%, %d steps\n"
	       "# %-8s %5s %12s %12s %14s %12s\n", mrc_coll_size(b->c),
	       lay, b->T, b->cfg.hidden,
	       b->cfg.n_experts, b->cfg.top_k, b->comp * 1e6, b->tick * 1e6, b->slack, iters,
	       "variant", "mis%", "layer_us", "exposed_us", "corr_rows/rk", "corr_us");
	for (int v = 0; v < NV * NMIS; v++)
		printf("  %-8s %5.0f %12.0f %12.0f %14.0f %12.0f\n", name[v % NV],
		       mis_rate[v / NV] * 100, med[v][0] * 1e6, med[v][1] * 1e6, med[v][2],
		       med[v][3] * 1e6);
	int64_t all = b->wrong[0] + b->wrong[1] + b->wrong[2] + b->wrong[3];
	printf("# wrong elements, all ranks: experts' input %lld, rows missing or extra %lld, output %lld (pre-gated against plain), plain's output %lld (against the reference)\n",
	       (long long)b->wrong[0], (long long)b->wrong[1], (long long)b->wrong[2],
	       (long long)b->wrong[3]);
	printf("# Out of bounds values : %lld %s\n", (long long)all, all ? "FAILED" : "OK");
}

int mrc__perf_pregate(struct mrc_coll *c, size_t T, size_t H, uint32_t E, uint32_t K,
		      double comp_us, unsigned slack, uint32_t L, int iters, int warm)
{
	uint32_t me = mrc_coll_rank(c), n = mrc_coll_size(c);
	if (!T || !H || !K || K > E || E % n || E / n > 64 || iters < 1 || (L && n % L))
		return -EINVAL;
	struct pgb b = { .c = c, .T = T, .comp = comp_us * 1e-6, .tick = 100e-6,
			 .cfg = { .n_experts = E, .top_k = K, .hidden = H, .dtype = MRC_COLL_BFLOAT16,
				  .local_ranks = L > 1 && L < n ? L : 0 } };
	snprintf(b.slack, sizeof(b.slack), "%u", slack);
	b.pred = malloc(T * K * sizeof(int32_t)), b.w = malloc(T * K * sizeof(float));
	b.x = malloc(T * H * 2), b.out[0] = malloc(T * H * 2), b.out[1] = malloc(T * H * 2);
	double *all = calloc(NV * NMIS * 4 * (size_t)iters, sizeof(*all)), med[NV * NMIS][4];
	int r = b.pred && b.w && b.x && b.out[0] && b.out[1] && all ? 0 : -ENOMEM;
	for (int m = 0; m < NMIS; m++)
		if (!(b.act[m] = malloc(T * K * sizeof(int32_t))))
			r = -ENOMEM;
	if (!r)
		make_layer(&b, 0x9a7e + me);
	/* Variants in turn, step by step: a drift of the machine touches each alike. */
	for (int i = -warm; i < iters && !r; i++)
		for (int v = 0; v < NV * NMIS && !r; v++) {
			double s[4] = { 0 };
			r = step(&b, v / NV, v % NV, &s[0], &s[1], &s[2], &s[3]);
			s[1] -= b.comp;
			for (int k = 0; k < 4 && i >= 0; k++)
				all[((size_t)v * 4 + k) * iters + i] = s[k];
		}
	for (int v = 0; v < NV * NMIS && !r; v++)
		for (int k = 0; k < 4 && !r; k++) {
			double *col = all + ((size_t)v * 4 + k) * iters;
			qsort(col, (size_t)iters, sizeof(*col), cmp);
			med[v][k] = col[iters / 2];
			/* The slowest rank's median: the step waits for it. */
			r = mrc_coll_allreduce(c, &med[v][k], &med[v][k], 1, MRC_COLL_FLOAT64,
					       MRC_COLL_MAX);
		}
	if (!r)
		r = mrc_coll_allreduce(c, b.wrong, b.wrong, 4, MRC_COLL_INT64, MRC_COLL_SUM);
	if (!r && me == 0)
		print(&b, iters, med);
	for (int m = 0; m < NMIS; m++)
		free(b.act[m]);
	free(b.pred), free(b.w), free(b.x), free(b.out[0]), free(b.out[1]), free(all), free(b.ref_in);
	int64_t bad = b.wrong[0] + b.wrong[1] + b.wrong[2] + b.wrong[3];
	return !r && bad ? -EPROTO : r;
}

/* libmrc-coll on one machine: 4 ranks as threads, each with its own
 * context, through a private mrcd on loopback (tests/support/mrcd_spawn).
 *
 *   - MoE dispatch + combine of one layer (MRC_BENCH_MOE_TOKENS tokens per
 *     rank, default 1024, x 1024 hidden, bfloat16, 8 experts, top-2,
 *     capacity factor 1.25), flat all-to-all vs the 2-D hierarchical one
 *     (2 "nodes" of 2 ranks), and the flat one with the experts' input
 *     malloc'd per call (mrc_coll_moe_dispatch) vs kept by the
 *     communicator (mrc_coll_moe_dispatch_kept), runs alternating in one
 *     process;
 *   - all-reduce (float sum) from 4 KiB to 4 MiB, ring vs double binary
 *     tree vs the plane-aware multi-tree (forest; one plane on loopback),
 *     alternating: the measurements behind MRC_COLL_ALGO=auto's
 *     thresholds (MRC_BENCH_MOE=0 runs only these).
 * Times are rank 0's, each run between two barriers; medians over
 * MRC_BENCH_RUNS runs (default 5) with (min..max), and the ratio of the
 * medians.  On loopback every "link" is the same daemon, so the 2-D
 * exchange can only show its extra copies and phases here, not the fewer
 * fabric messages it exists for: the figures are a baseline, not the
 * issue's fabric benchmark. */
#include <pthread.h>

#include "bench/bench_mrcd.h"
#include "coll/coll_int.h"
#include "common/prng.h"
#include "tests/support/mrcd_spawn.h"

#define N 4
#define MAXRUNS 64

static struct mrcd_proc D;
static unsigned runs = 5;
static size_t tokens = 1024;
enum { H = 1024, E = 8, K = 2 };
/* [case][run] seconds */
enum { NSZ = 5, NALG = 3 };
static const size_t ar_bytes[NSZ] = { 4u << 10, 64u << 10, 256u << 10, 1u << 20, 4u << 20 };
static const char *const alg_name[NALG] = { "ring", "tree", "forest" };
static int moe = 1;
/* MoE variants: flat, 2-D (both with expert_in kept), flat malloc'd */
enum { NMOE = 3 };
static const char *const moe_name[NMOE] = { "flat", "2-D (2 x 2)",
					    "flat, expert_in malloc'd per call" };
static double t_moe[NMOE][MAXRUNS], t_ar[NSZ][NALG][MAXRUNS];

struct rank { pthread_t th; uint32_t me; int rc; };

static double now_s(void)
{
	return (double)bm_now_ns() * 1e-9;
}

static int moe_once(struct mrc_coll *c, const struct mrc_coll_moe_cfg *cfg, const int32_t *idx,
		    const float *w, const void *x, void *out, int kept)
{
	struct mrc_coll_moe_plan *plan;
	void *ein;
	size_t counts[E / N];
	int r = (kept ? mrc_coll_moe_dispatch_kept : mrc_coll_moe_dispatch)(c, cfg, tokens, idx, w,
									     x, &plan, &ein, counts);
	if (r)
		return r;
	/* The experts are the identity: the exchange is what is measured. */
	r = mrc_coll_moe_combine(c, plan, ein, out);
	mrc_coll_moe_plan_free(plan);
	if (!kept)
		free(ein);
	return r;
}

static void *rank_main(void *arg)
{
	struct rank *rk = arg;
	struct mrc_coll_cfg cfg = { .sock = D.sock, .nranks = N, .rank = rk->me, .root_host = 0,
				    .sid = 7900, .timeout_ms = 60000 };
	struct mrc_coll *c;
	if ((rk->rc = mrc_coll_init(&cfg, &c)))
		return NULL;
	struct mrc_rng g;
	mrc_rng_seed(&g, 42 + rk->me);
	int32_t *idx = malloc(tokens * K * sizeof(*idx));
	float *w = malloc(tokens * K * sizeof(*w));
	uint16_t *x = malloc(tokens * H * 2), *out = malloc(tokens * H * 2);
	for (size_t t = 0; t < tokens; t++) {
		idx[t * K] = (int32_t)mrc_rng_below(&g, E);
		idx[t * K + 1] = (idx[t * K] + 1 + (int32_t)mrc_rng_below(&g, E - 1)) % E;
		w[t * K] = 0.75f, w[t * K + 1] = 0.25f;
	}
	for (size_t i = 0; i < tokens * H; i++)
		x[i] = mrc__coll_f2bf((float)(i % 7));
	float *abuf = calloc(1, ar_bytes[NSZ - 1]);
	int r = 0;
	for (unsigned run = 0; run < runs && !r; run++) {
		for (int v = 0; v < NMOE * moe && !r; v++) {
			struct mrc_coll_moe_cfg mc = { .n_experts = E, .top_k = K, .hidden = H,
				.dtype = MRC_COLL_BFLOAT16, .capacity_factor = 1.25,
				.local_ranks = v == 1 ? 2 : 0 };
			if ((r = mrc_coll_barrier(c)))
				break;
			double t0 = now_s();
			r = moe_once(c, &mc, idx, w, x, out, v != 2);
			if (!r)
				r = mrc_coll_barrier(c);
			if (rk->me == 0)
				t_moe[v][run] = now_s() - t0;
		}
		for (int v = 0; v < NSZ * NALG && !r; v++) {
			int alg = v % NALG;
			/* The barrier itself is an all-reduce of 4 bytes: a tree. */
			c->algo = MRC_COLL_ALGO_TREE;
			if ((r = mrc_coll_barrier(c)))
				break;
			c->algo = alg == 0 ? MRC_COLL_ALGO_RING : alg == 1 ? MRC_COLL_ALGO_TREE
								 : MRC_COLL_ALGO_FOREST;
			double t0 = now_s();
			r = mrc_coll_allreduce(c, abuf, abuf, ar_bytes[v / NALG] / 4, MRC_COLL_FLOAT32,
					       MRC_COLL_SUM);
			if (rk->me == 0)
				t_ar[v / NALG][alg][run] = now_s() - t0;
		}
	}
	rk->rc = r;
	free(idx), free(w), free(x), free(out), free(abuf);
	mrc_coll_destroy(c);
	return NULL;
}

static double median(double *v, unsigned n)
{
	double s[MAXRUNS];
	memcpy(s, v, n * sizeof(double));
	qsort(s, n, sizeof(double), bm_cmp_dbl);
	return s[n / 2];
}

int main(void)
{
	if (getenv("MRC_BENCH_RUNS"))
		runs = (unsigned)atoi(getenv("MRC_BENCH_RUNS"));
	if (getenv("MRC_BENCH_MOE_TOKENS"))
		tokens = (size_t)atol(getenv("MRC_BENCH_MOE_TOKENS"));
	if (getenv("MRC_BENCH_MOE"))
		moe = atoi(getenv("MRC_BENCH_MOE")) != 0;
	if (runs < 1 || runs > MAXRUNS || tokens < 1)
		return 2;
	char mach[512], a[96], b[96];
	bm_machine(mach, sizeof(mach));
	if (!mrcd_spawn_available() || mrcd_spawn_start(&D, NULL)) {
		printf("bench_coll: no mrcd (build/bin/mrcd): skipped\n");
		return 0;
	}
	struct rank R[N];
	for (uint32_t i = 0; i < N; i++) {
		R[i] = (struct rank){ .me = i };
		pthread_create(&R[i].th, NULL, rank_main, &R[i]);
	}
	int bad = 0;
	for (uint32_t i = 0; i < N; i++) {
		pthread_join(R[i].th, NULL);
		if (R[i].rc) {
			fprintf(stderr, "bench_coll: rank %u: %s\n", i, strerror(-R[i].rc));
			bad = 1;
		}
	}
	mrcd_spawn_stop(&D);
	if (bad)
		return 1;
	printf("# libmrc-coll on loopback (bench/bench_coll.c)\n\nMachine: %s.  %u ranks as threads, "
	       "one mrcd; %u runs, medians (min..max).\n\n", mach, N, runs);
	if (moe)
		printf("## MoE dispatch + combine: %zu tokens x %d hidden per rank, bfloat16, %d experts, "
		       "top-%d, capacity 1.25\n\n| exchange | ms |\n|---|--:|\n", tokens, H, E, K);
	for (int v = 0; v < NMOE * moe; v++) {
		double ms[MAXRUNS];
		for (unsigned i = 0; i < runs; i++)
			ms[i] = t_moe[v][i] * 1e3;
		printf("| %s | %s |\n", moe_name[v], bm_spread(a, sizeof(a), ms, (int)runs, "%.1f"));
	}
	if (moe)
		printf("| **2-D / flat** | **%.2f** |\n| **flat, kept / malloc'd** | **%.2f** |\n\n",
		       median(t_moe[1], runs) / median(t_moe[0], runs),
		       median(t_moe[0], runs) / median(t_moe[2], runs));
	printf("## All-reduce, float sum\n\n| size | ring ms | tree ms | forest ms | tree / ring | "
	       "forest / ring |\n|---|--:|--:|--:|--:|--:|\n");
	for (int sz = 0; sz < NSZ; sz++) {
		printf("| %zu KiB |", ar_bytes[sz] >> 10);
		for (int alg = 0; alg < NALG; alg++) {
			double ms[MAXRUNS];
			for (unsigned i = 0; i < runs; i++)
				ms[i] = t_ar[sz][alg][i] * 1e3;
			printf(" %s |", bm_spread(a, sizeof(a), ms, (int)runs, "%.2f"));
		}
		printf(" %.2f | %.2f |\n", median(t_ar[sz][1], runs) / median(t_ar[sz][0], runs),
		       median(t_ar[sz][2], runs) / median(t_ar[sz][0], runs));
	}
	(void)b;
	(void)alg_name;
	return 0;
}

/* mrc-coll-perf -C moe: one MoE layer's dispatch + combine, its variants
 * alternated in one run: flat and 2-D hierarchical, each with the per-rank
 * deduplicated dispatch (the library's; 2-D also deduplicates per node)
 * and, with MRC_COLL_MOE_VARIANTS=flat,2d,flat-pe,2d-pe,2d-rank, the old
 * per-expert one and the 2-D without the node dedupe (rows per rank
 * through mrc_coll_alltoallv_2d); median time of each, the phases'
 * medians, and the rows and bytes each sends across ranks and across
 * nodes.  Routing is seeded per rank (top-k consecutive experts from a
 * uniform start, weights 0.75 / 0.25 / ...), the experts are the identity
 * (the exchange is what is measured), and the result of the last run of
 * each is checked element by element against the local reference, which
 * rounds as the combine does: per destination rank (or per pair) a
 * weighted sum rounded to bfloat16, with the node dedupe each node's sum
 * of those rounded, then their sum, rounded. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/clock.h"
#include "coll/coll_int.h"
#include "coll/moe_int.h"
#include "tools/coll-perf/perf_moe.h"
#include "common/prng.h"

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(const double *v, int n)
{
	double s[64];
	memcpy(s, v, (size_t)n * sizeof(*s));
	qsort(s, (size_t)n, sizeof(*s), cmp_d);
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/* Columns timed per run (seconds, the slowest rank's). */
enum { C_TOTAL, C_LAYOUT, C_D_CNT, C_D_1, C_D_2, C_D_UNP, C_EXPAND, C_REDUCE, C_C_CNT, C_C_1,
       C_C_2, C_C_UNP, C_ACC, C_N };
static const char *const col_name[C_N] = { "total", "layout", "d.counts", "d.ph1", "d.ph2",
	"d.unpack", "expand", "reduce", "c.counts", "c.ph1", "c.ph2", "c.unpack", "acc" };

struct variant { const char *name; int twod, per_expert; };
static const struct variant variants[] = {
	{ "flat", 0, 0 }, { "2d", 1, 0 }, { "flat-pe", 0, MRC__MOE_PER_EXPERT },
	{ "2d-pe", 1, MRC__MOE_PER_EXPERT }, { "2d-rank", 1, MRC__MOE_RANK_2D },
};
#define NVAR (sizeof(variants) / sizeof(variants[0]))

struct layer {
	size_t T, H;
	uint32_t E, K, epr;
	const int32_t *idx;
	const float *w;
	const uint16_t *x;
};

/* Elements of out off the reference for this routing and variant (L:
 * ranks per node of the node dedupe, else 1). */
static size_t wrong_elems(const struct layer *ly, int per_expert, uint32_t L, const uint16_t *out)
{
	size_t bad = 0;
	uint32_t K = ly->K;
	for (size_t t = 0; t < ly->T; t++) {
		/* Weight of each row the token sends: its pairs grouped by rank,
		 * then (stable) in rank order, the order the sums take. */
		float part[64];
		uint32_t np = 0, prank[64];
		for (uint32_t k = 0; k < K && k < 64; k++) {
			uint32_t r = (uint32_t)ly->idx[t * K + k] / ly->epr, j = 0;
			while (!per_expert && j < np && prank[j] != r)
				j++;
			if (per_expert || j == np)
				prank[np] = r, part[np++] = 0, j = np - 1;
			part[j] += ly->w[t * K + k];
		}
		for (uint32_t j = 1; j < np; j++)
			for (uint32_t q = j; q > 0 && prank[q - 1] > prank[q]; q--) {
				uint32_t a = prank[q];
				float b = part[q];
				prank[q] = prank[q - 1], part[q] = part[q - 1];
				prank[q - 1] = a, part[q - 1] = b;
			}
		for (size_t h = 0; h < ly->H; h++) {
			float xv = mrc__coll_bf2f(ly->x[t * ly->H + h]), s = 0;
			for (uint32_t j = 0; j < np;) {
				/* The node's ranks' rows, rounded, summed, rounded. */
				float nsum = 0;
				uint32_t q = j;
				for (; q < np && prank[q] / L == prank[j] / L; q++)
					nsum += mrc__coll_bf2f(mrc__coll_f2bf(part[q] * xv));
				s += mrc__coll_bf2f(mrc__coll_f2bf(nsum));
				j = q;
			}
			bad += out[t * ly->H + h] != mrc__coll_f2bf(s);
		}
	}
	return bad;
}

/* One dispatch + combine: the columns of this run (this rank's), the
 * statistics, and (when wrong) the elements off the reference. */
static int once(struct mrc_coll *c, const struct mrc_coll_moe_cfg *mc, const struct layer *ly,
		int per_expert, uint32_t L, uint16_t *out, double *col, struct mrc__coll_moe_stats *st,
		size_t *across, size_t *wrong)
{
	struct mrc_coll_moe_plan *plan;
	void *ein;
	size_t counts[64];
	double t0 = mrc__mono_s();
	/* expert_in kept by the communicator, as a training step would use it */
	int r = mrc__coll_moe_dispatch_run(c, mc, ly->T, ly->idx, ly->w, ly->x,
				       per_expert | MRC__MOE_KEPT, &plan, &ein, counts);
	if (r)
		return r;
	r = mrc_coll_moe_combine(c, plan, ein, out);
	col[C_TOTAL] = mrc__mono_s() - t0;
	mrc__coll_moe_stats(plan, st);
	*across = mrc__coll_moe_rows_across(plan, L);
	mrc_coll_moe_plan_free(plan);
	col[C_LAYOUT] = st->t_layout, col[C_EXPAND] = st->t_expand;
	col[C_REDUCE] = st->t_reduce, col[C_ACC] = st->t_acc;
	for (int i = 0; i < MRC__MOE_PH_N; i++)
		col[C_D_CNT + i] = st->t_disp[i], col[C_C_CNT + i] = st->t_comb[i];
	int dedupe = mc->local_ranks > 1 && mc->local_ranks < mrc_coll_size(c) && !per_expert;
	if (!r && wrong)
		*wrong += wrong_elems(ly, per_expert, dedupe ? mc->local_ranks : 1, out);
	return r;
}

/* CPU seconds (user + system) of process pid from /proc (0: unknown),
 * and of this one: on a machine where the ranks and daemons share the
 * cores, what a variant costs shows here better than in its time. */
static double proc_cpu_s(pid_t pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = pid > 0 ? fopen(path, "r") : NULL;
	if (!f)
		return 0;
	size_t k = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[k] = 0;
	/* Fields after the command's closing parenthesis: state is 3rd,
	 * utime the 14th and stime the 15th of the line. */
	char *q = strrchr(buf, ')');
	unsigned long ut = 0, st = 0;
	if (!q || sscanf(q + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
		return 0;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static double self_cpu_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

/* The variants named in MRC_COLL_MOE_VARIANTS (default flat,2d). */
static int pick(int *use)
{
	const char *v = getenv("MRC_COLL_MOE_VARIANTS");
	char buf[128];
	snprintf(buf, sizeof(buf), "%s", v && *v ? v : "flat,2d");
	int any = 0;
	for (char *save, *s = strtok_r(buf, ",", &save); s; s = strtok_r(NULL, ",", &save)) {
		size_t i = 0;
		while (i < NVAR && strcmp(s, variants[i].name))
			i++;
		if (i == NVAR)
			return -EINVAL;
		use[i] = any = 1;
	}
	return any ? 0 : -EINVAL;
}

int mrc__perf_moe(struct mrc_coll *c, size_t T, size_t H, uint32_t E, uint32_t K, uint32_t L,
		  int iters)
{
	uint32_t n = mrc_coll_size(c), me = mrc_coll_rank(c);
	if (!L)
		L = n % 2 ? 1 : 2;
	int use[NVAR] = { 0 };
	if (E % n || n % L || K == 0 || K > E || K > 64 || E / n > 64 || iters < 1 || iters > 64 ||
	    pick(use))
		return -EINVAL;
	struct mrc_rng g;
	mrc_rng_seed(&g, 4242 + me);
	int32_t *idx = malloc(T * K * sizeof(*idx));
	float *w = malloc(T * K * sizeof(*w));
	uint16_t *x = malloc(T * H * 2), *out = malloc(T * H * 2);
	int r = idx && w && x && out ? 0 : -ENOMEM;
	for (size_t t = 0; !r && t < T; t++) {
		/* K distinct consecutive experts from a random start: with 2
		 * experts per rank, top-2 shares a rank for half the tokens. */
		uint32_t e = (uint32_t)mrc_rng_below(&g, E);
		for (uint32_t k = 0; k < K; k++) {
			idx[t * K + k] = (int32_t)((e + k) % E);
			w[t * K + k] = k ? 0.25f / (float)(K - 1) : 0.75f;
		}
	}
	for (size_t i = 0; !r && i < T * H; i++)
		x[i] = mrc__coll_f2bf((float)((i * 7 + me) % 13) - 6);
	struct layer ly = { .T = T, .H = H, .E = E, .K = K, .epr = E / n, .idx = idx, .w = w, .x = x };
	static double t[NVAR][64][C_N];
	/* Per variant, summed over ranks: pairs and rows to other ranks,
	 * wrong elements, rows to other nodes (of L ranks). */
	int64_t cnt[NVAR][4] = { { 0 } };
	struct mrc__coll_moe_stats st = { 0 };
	/* Our mrcd, whose CPU per run is counted too (once per daemon). */
	pid_t dpid = 0;
	struct ucred uc;
	socklen_t ul = sizeof(uc);
	if (!getsockopt(mrc_ctx_fd(c->ctx), SOL_SOCKET, SO_PEERCRED, &uc, &ul))
		dpid = uc.pid;
	double *cpu = malloc(3 * (size_t)n * sizeof(*cpu));
	if (!cpu)
		r = -ENOMEM;
	if (!r && me == 0)
		printf("# moe: %u ranks, %zu tokens x %zu hidden bfloat16 per rank, %u experts, top-%u, "
		       "2-D with %u ranks per node; %d runs each, alternated; shared memory with %u peers\n",
		       n, T, H, E, K, L, iters, c->nshm);
	for (int it = 0; it <= iters && !r; it++)   /* run 0 warms up */
		for (size_t v = 0; v < NVAR && !r; v++) {
			if (!use[v])
				continue;
			struct mrc_coll_moe_cfg mc = { .n_experts = E, .top_k = K, .hidden = H,
						       .dtype = MRC_COLL_BFLOAT16,
						       .local_ranks = variants[v].twod ? L : 0 };
			double col[C_N] = { 0 };
			size_t wrong = 0, across = 0;
			if ((r = mrc_coll_barrier(c)))
				break;
			double c0 = self_cpu_s(), d0 = proc_cpu_s(dpid);
			r = once(c, &mc, &ly, variants[v].per_expert, L, out, col, &st, &across,
				 it == iters ? &wrong : NULL);
			double mine[3] = { dpid, self_cpu_s() - c0, proc_cpu_s(dpid) - d0 };
			if (!r)
				r = mrc_coll_allreduce(c, col, col, C_N, MRC_COLL_FLOAT64, MRC_COLL_MAX);
			if (!r)
				r = mrc_coll_allgather(c, mine, cpu, 3, MRC_COLL_FLOAT64);
			/* Ranks' CPU summed; each daemon's once (the most its ranks saw). */
			double cr = 0, cd = 0;
			for (uint32_t i = 0; !r && i < n; i++) {
				cr += cpu[3 * i + 1];
				int first = 1;
				double most = cpu[3 * i + 2];
				for (uint32_t j = 0; j < n; j++)
					if (cpu[3 * j] == cpu[3 * i] && j != i) {
						first &= j > i;
						most = most > cpu[3 * j + 2] ? most : cpu[3 * j + 2];
					}
				if (first && cpu[3 * i] > 0)
					cd += most;
			}
			if (it)
				memcpy(t[v][it - 1], col, sizeof(col));
			if (!r && me == 0) {   /* progress: a run cut short still says something */
				printf("# run %d %s %.1f ms; cpu s: ranks %.2f, mrcds %.2f\n", it,
				       variants[v].name, col[C_TOTAL] * 1e3, cr, cd);
				fflush(stdout);
			}
			if (it == iters) {
				cnt[v][0] = (int64_t)st.pairs_remote, cnt[v][1] = (int64_t)st.rows_remote;
				cnt[v][2] = (int64_t)wrong, cnt[v][3] = (int64_t)across;
			}
		}
	if (!r)
		r = mrc_coll_allreduce(c, cnt, cnt, NVAR * 4, MRC_COLL_INT64, MRC_COLL_SUM);
	int64_t bad = 0;
	for (size_t v = 0; v < NVAR; v++)
		bad += cnt[v][2];
	if (!r && me == 0) {
		double med[NVAR][C_N];
		for (size_t v = 0; v < NVAR; v++)
			for (int k = 0; use[v] && k < C_N; k++) {
				double s[64];
				for (int i = 0; i < iters; i++)
					s[i] = t[v][i][k];
				med[v][k] = median(s, iters);
			}
		printf("# %10s %12s %12s %8s %12s %12s %14s %12s %14s\n", "variant", "median ms",
		       "min ms", "#wrong", "pairs out", "rows out", "dispatch MB", "rows x-node",
		       "x-node MB");
		for (size_t v = 0; v < NVAR; v++) {
			if (!use[v])
				continue;
			double mn = t[v][0][C_TOTAL];
			for (int i = 1; i < iters; i++)
				mn = t[v][i][C_TOTAL] < mn ? t[v][i][C_TOTAL] : mn;
			/* "flat" and "2-D" keep the names bench/fabric/coll.sh reads. */
			const char *nm = !strcmp(variants[v].name, "2d") ? "2-D" : variants[v].name;
			double rowb = (double)(st.row_bytes + st.meta_bytes);
			printf("  %10s %12.1f %12.1f %8lld %12lld %12lld %14.2f %12lld %14.2f\n", nm,
			       med[v][C_TOTAL] * 1e3, mn * 1e3, (long long)cnt[v][2], (long long)cnt[v][0],
			       (long long)cnt[v][1], (double)cnt[v][1] * rowb / 1e6,
			       (long long)cnt[v][3], (double)cnt[v][3] * rowb / 1e6);
		}
		if (use[0] && use[1])
			printf("  %10s %12.3f %12s %8lld\n", "2-D/flat", med[1][C_TOTAL] / med[0][C_TOTAL],
			       "", (long long)bad);
		printf("# phases, ms (median of the slowest rank's):");
		for (int k = 1; k < C_N; k++)
			printf(" %s", col_name[k]);
		printf("\n");
		for (size_t v = 0; v < NVAR; v++) {
			if (!use[v])
				continue;
			printf("  phase %-8s", variants[v].name);
			for (int k = 1; k < C_N; k++)
				printf(" %.1f", med[v][k] * 1e3);
			printf("\n");
		}
		printf("# Out of bounds values : %lld %s\n", (long long)bad, bad ? "FAILED" : "OK");
	}
	free(idx), free(w), free(x), free(out), free(cpu);
	return r ? r : bad ? -EPROTO : 0;
}

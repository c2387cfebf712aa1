/* libmrc-coll against a real mrcd on the loopback fabric (no root): ranks
 * as threads of this process, each with its own context.  Every
 * collective x type x op at sizes 0, 1, not a multiple of the ranks and
 * many chunks, in and out of place, checked element by element; the
 * bootstrap from the environment; an abort on one rank reaching every
 * other within the bound; a rank that leaves mid-collective.  Skipped
 * when build/bin/mrcd has not been built. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <time.h>
#include <cmocka.h>

#include "tests/support/mrcd_spawn.h"
#include "tests/support/coll_matrix.h"
#include "tests/support/skip.h"

#include "coll/coll_int.h"
#include "coll/moe_int.h"
#include "common/prng.h"

/* The no-progress bound of the failure tests; the others use a generous
 * one, so that a loaded machine (sanitizers, other tests) cannot fail a
 * correct run. */
#define TIMEOUT_MS 3000
static int timeout_ms = 30000;
static uint32_t next_sid = 7400;
static uint32_t root_host;         /* 0, or MRC_COLL_HOST_ANY to probe */
static int algo;                   /* MRC_COLL_ALGO_* */
static uint32_t planes;            /* cfg.planes */

struct rank {
	pthread_t th;
	struct mrc_coll_cfg cfg;
	int (*body)(struct rank *);
	struct mrc_coll *c;
	int rc;
	int64_t t_end;             /* when body returned (ms) */
	size_t wrong;
	char why[160];
	void *arg;
};

static void *rank_main(void *p)
{
	struct rank *r = p;
	r->rc = mrc_coll_init(&r->cfg, &r->c);
	if (!r->rc)
		r->rc = r->body(r);
	r->t_end = mrcd_spawn_now_ms();
	mrc_coll_destroy(r->c);
	return NULL;
}

/* Runs body on n ranks as threads; chunk 0: the default. */
static void run_ranks(struct rank *R, uint32_t n, int (*body)(struct rank *), uint32_t chunk,
		      void *arg)
{
	uint32_t sid = next_sid++;
	for (uint32_t i = 0; i < n; i++) {
		R[i] = (struct rank){ .cfg = { .sock = mrcd_group.d.sock, .nranks = n, .rank = i, .root_host = root_host,
			.sid = sid, .chunk_bytes = chunk, .window = 2, .timeout_ms = timeout_ms, .algo = algo,
			.planes = planes },
			.body = body, .arg = arg };
		assert_int_equal(pthread_create(&R[i].th, NULL, rank_main, &R[i]), 0);
	}
	for (uint32_t i = 0; i < n; i++)
		pthread_join(R[i].th, NULL);
}

#define NEED_DAEMON() MRCD_GROUP_NEED()

/* One case of the matrix on one communicator, checked element by element. */
static int matrix_case(void *arg, const struct coll_case *k)
{
	struct rank *r = arg;
	struct mrc_coll *c = r->c;
	uint32_t n = mrc_coll_size(c), me = mrc_coll_rank(c);
	int kind = k->kind, dt = k->dt, op = k->op, inplace = k->inplace;
	size_t count = k->count, esz = mrc_coll_dtype_size(dt);
	uint32_t root = (uint32_t)(k->ci % n);
	size_t inb = mrc__coll_in_count(kind, n, count) * esz;
	size_t outb = mrc__coll_out_count(kind, n, count) * esz;
	uint8_t *in = malloc(inb + 1), *out = malloc(outb + 1), *src, *dst;
	memset(out, 0xa5, outb);   /* nothing left over from before */
	mrc__coll_place(kind, inplace, me, count, esz, in, out, &src, &dst);
	mrc__coll_fill(kind, src, n, me, count, dt, op, root);
	int rc = mrc__coll_call(c, kind, src, dst, count, dt, op, root);
	size_t bad = rc ? 0 : mrc__coll_wrong(kind, dst, n, me, count, dt, op, root);
	free(in);
	free(out);
	if (rc || bad) {
		snprintf(r->why, sizeof(r->why), "%s %s %s count %zu %s: %s, %zu wrong",
			 mrc__coll_name[kind], mrc_coll_dtype_name(dt), mrc_coll_op_name(op),
			 count, inplace ? "in place" : "out of place", rc ? strerror(-rc) : "ok",
			 bad);
		r->wrong += bad;
		return rc ? rc : -EIO;
	}
	return 0;
}

/* Every collective x type x op x size x placement on one communicator. */
static int body_matrix(struct rank *r)
{
	return coll_matrix(mrc_coll_size(r->c), matrix_case, r);
}

static void check_all_ok(struct rank *R, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (R[i].rc || R[i].wrong)
			fail_msg("rank %u of %u: %s (%s)", i, n, strerror(-R[i].rc), R[i].why);
}

static void test_matrix_3(void **state)
{
	NEED_DAEMON();
	struct rank R[3];
	run_ranks(R, 3, body_matrix, 4096, NULL);
	check_all_ok(R, 3);
}

static void test_matrix_4_and_1(void **state)
{
	NEED_DAEMON();
	struct rank R[5];
	run_ranks(R, 4, body_matrix, 4096, NULL);
	check_all_ok(R, 4);
	/* Every size by each all-reduce algorithm (auto picks by size). */
	algo = MRC_COLL_ALGO_TREE;
	run_ranks(R, 5, body_matrix, 4096, NULL);
	check_all_ok(R, 5);
	algo = MRC_COLL_ALGO_RING;
	run_ranks(R, 5, body_matrix, 4096, NULL);
	algo = MRC_COLL_ALGO_AUTO;
	check_all_ok(R, 5);
	/* The forest on 5 ranks, over QP sets pinned to 2 planes (loopback has
	 * one: the plane-1 QPs fall back to it, as when a plane is dead). */
	algo = MRC_COLL_ALGO_FOREST;
	planes = 2;
	run_ranks(R, 5, body_matrix, 4096, NULL);
	algo = MRC_COLL_ALGO_AUTO;
	planes = 0;
	check_all_ok(R, 5);
	run_ranks(R, 1, body_matrix, 4096, NULL);
	check_all_ok(R, 1);
}

/* all-to-allv with uneven counts (some zero), every pair checked. */
static int body_alltoallv(struct rank *r)
{
	uint32_t n = mrc_coll_size(r->c), me = mrc_coll_rank(r->c);
	size_t sc[8], sd[8], rcn[8], rd[8], st = 0, rt = 0;
	for (uint32_t j = 0; j < n; j++) {
		sc[j] = (me * 3 + j * 5) % 7 * 1000;    /* what me sends j */
		rcn[j] = (j * 3 + me * 5) % 7 * 1000;   /* what j sends me */
		sd[j] = st;
		rd[j] = rt;
		st += sc[j];
		rt += rcn[j];
	}
	int64_t *in = malloc(st * 8 + 8), *out = calloc(rt + 1, 8);
	for (uint32_t j = 0; j < n; j++)
		for (size_t i = 0; i < sc[j]; i++)
			in[sd[j] + i] = (int64_t)me << 40 | (int64_t)j << 32 | (int64_t)i;
	uint32_t L = r->arg ? *(uint32_t *)r->arg : 0;
	int rc = L ? mrc_coll_alltoallv_2d(r->c, L, in, sc, sd, out, rcn, rd, MRC_COLL_INT64)
		   : mrc_coll_alltoallv(r->c, in, sc, sd, out, rcn, rd, MRC_COLL_INT64);
	for (uint32_t j = 0; !rc && j < n; j++)
		for (size_t i = 0; i < rcn[j]; i++)
			r->wrong += out[rd[j] + i] != ((int64_t)j << 40 | (int64_t)me << 32 | (int64_t)i);
	free(in);
	free(out);
	return rc;
}

/* Spread over 2 plane-pinned QP sets (loopback has one plane: the
 * plane-1 QPs fall back to it): three exchanges back to back (a rank that
 * finishes first sends the next one's chunks early, which must wait in
 * their slots), then every chunk must have gone on a pinned QP. */
static int body_alltoallv_spread(struct rank *r)
{
	struct mrc_coll *c = r->c;
	for (int k = 0; k < 3; k++) {
		int rc = body_alltoallv(r);
		if (rc || r->wrong)
			return rc ? rc : -EIO;
	}
	for (uint32_t j = 0; j < c->n; j++) {
		if (j == c->me)
			continue;
		uint64_t bytes = (c->me * 3 + j * 5) % 7 * 1000 * 8;   /* body_alltoallv's sc[j] */
		uint64_t q = c->chunk / 4;   /* the spread chunk */
		uint64_t want = 3 * ((bytes + q - 1) / q);
		uint64_t pinned = c->p[j + c->n].sent + c->p[j + 2 * c->n].sent;
		if (c->p[j].any_tx != want || pinned != want || c->p[j].sent) {
			snprintf(r->why, sizeof(r->why), "to %u: %llu chunks spread, %llu on pinned QPs, %llu on set 0; want %llu",
				 j, (unsigned long long)c->p[j].any_tx, (unsigned long long)pinned,
				 (unsigned long long)c->p[j].sent, (unsigned long long)want);
			return -EIO;
		}
	}
	return 0;
}

static void test_alltoallv(void **state)
{
	NEED_DAEMON();
	struct rank R[4];
	run_ranks(R, 4, body_alltoallv, 2048, NULL);
	check_all_ok(R, 4);
	/* The same exchange in two levels: 2 nodes of 2 ranks. */
	uint32_t L = 2;
	run_ranks(R, 4, body_alltoallv, 2048, &L);
	check_all_ok(R, 4);
	planes = 2;
	run_ranks(R, 4, body_alltoallv_spread, 2048, NULL);
	planes = 0;
	check_all_ok(R, 4);
}

/* MoE dispatch + combine against a local reference: E = 8 experts on 4
 * ranks, top-2, seeded routing, every expert multiplies its tokens by
 * (its id + 1).  Routings: skewed (expert 0 half the time, so capacity
 * 1.0 drops), "one rank" (both experts of a token on one rank: every
 * token crosses once) and uniform.  Values are small integers and
 * weights quarters, so float sums are exact; the reference rounds where
 * the combine does (each rank's weighted sum, with 2-D each node's sum of
 * those, then their sum).  The dispatch's rows are checked against the
 * layout step: one per token and destination rank, not one per expert;
 * with 2-D (2 ranks per node) one per token and destination node. */
enum { MOE_SKEWED, MOE_ONE_RANK, MOE_UNIFORM, MOE_ONE_NODE };
struct moe_case {
	struct mrc_coll_moe_cfg cfg;
	uint64_t seed;
	int routing, per_expert;
	size_t dropped[4];
	struct mrc__coll_moe_stats st[4];
	size_t T[4], to_rank[4][4];   /* tokens, and rows the layout says go to each rank */
	size_t to_node[4][2];      /* tokens going to each node of 2 ranks */
	size_t across[4];          /* rows the dispatch sent to the other node of 2 ranks */
};

/* The dispatch deduplicates per node (2-D, rows per rank). */
static int node_dedupe(const struct moe_case *mc)
{
	return mc->cfg.local_ranks > 1 && mc->cfg.local_ranks < 4 && !mc->per_expert;
}

static void moe_route(struct moe_case *mc, struct mrc_rng *g, uint32_t n, size_t T, int32_t *idx,
		      float *w)
{
	uint32_t K = mc->cfg.top_k, E = mc->cfg.n_experts, epr = E / n;
	for (size_t t = 0; t < T; t++)
		for (uint32_t k = 0; k < K; k++) {
			int32_t e;
			if (mc->routing == MOE_ONE_RANK)   /* experts 2r, 2r+1 of one rank r */
				e = (int32_t)((t % n) * epr + k % epr);
			else if (mc->routing == MOE_ONE_NODE)   /* one expert on each rank of node t % 2 */
				e = (int32_t)(((t % 2) * 2 + k % 2) * epr + mrc_rng_below(g, epr));
			else
				do   /* distinct experts per token */
					e = mc->routing == MOE_SKEWED && mrc_rng_chance(g, 0.5)
						? 0 : (int32_t)mrc_rng_below(g, E);
				while (k > 0 && e == idx[t * K]);
			idx[t * K + k] = e;
			w[t * K + k] = (float)(1 + mrc_rng_below(g, 4)) / 4;
		}
}

static int body_moe(struct rank *r)
{
	struct moe_case *mc = r->arg;
	const struct mrc_coll_moe_cfg *cfg = &mc->cfg;
	uint32_t n = mrc_coll_size(r->c), me = mrc_coll_rank(r->c), K = cfg->top_k, E = cfg->n_experts;
	uint32_t epr = E / n;
	size_t T = 40 + me * 7, H = cfg->hidden;   /* ranks differ in token count */
	struct mrc_rng g;
	mrc_rng_seed(&g, mc->seed + me);
	int32_t *idx = malloc(T * K * sizeof(*idx));
	float *w = malloc(T * K * sizeof(*w));
	void *x = malloc(T * H * 4), *out = malloc(T * H * 4), *ref = malloc(T * H * 4);
	moe_route(mc, &g, n, T, idx, w);
	for (size_t i = 0; i < T * H; i++)
		mrc__coll_put(x, cfg->dtype, i, (double)(int)mrc_rng_below(&g, 9) - 4);
	/* The layout step agrees with a direct count. */
	uint32_t per_rank[8], per_exp[16];
	uint8_t *in_rank = malloc(T * n);
	if (mrc_coll_moe_layout(n, E, K, T, idx, per_rank, per_exp, in_rank))
		return -EINVAL;
	uint32_t sum_e = 0;
	for (uint32_t e = 0; e < E; e++)
		sum_e += per_exp[e];
	if (sum_e != T * K || in_rank[idx[0] / (E / n)] != 1)
		return -EBADMSG;
	mc->T[me] = T;
	for (uint32_t j = 0; j < n; j++)
		mc->to_rank[me][j] = per_rank[j];
	for (size_t t = 0; t < T; t++)
		for (uint32_t nd = 0; nd < 2; nd++)
			mc->to_node[me][nd] += in_rank[t * n + 2 * nd] | in_rank[t * n + 2 * nd + 1];
	struct mrc_coll_moe_plan *plan;
	void *ein;
	size_t counts[4];
	int rc = mrc__coll_moe_dispatch(r->c, cfg, T, idx, w, x, mc->per_expert, &plan, &ein, counts);
	if (rc)
		return rc;
	/* The experts. */
	size_t row = 0;
	for (uint32_t el = 0; el < epr; el++)
		for (size_t i = 0; i < counts[el]; i++, row++)
			for (size_t h = 0; h < H; h++)
				mrc__coll_put(ein, cfg->dtype, row * H + h,
					      (me * epr + el + 1) * mrc__coll_get(ein, cfg->dtype, row * H + h));
	rc = mrc_coll_moe_combine(r->c, plan, ein, out);
	mrc__coll_moe_stats(plan, &mc->st[me]);
	mc->across[me] = mrc__coll_moe_rows_across(plan, 2);
	/* Reference: the documented capacity policy, computed here; each
	 * rank's (each pair's, per expert) weighted sum rounded to the type. */
	uint64_t cap = cfg->capacity_factor > 0 ? (uint64_t)ceil(cfg->capacity_factor * T * K / E) : UINT64_MAX;
	uint64_t used[16] = { 0 };
	uint8_t *kept = calloc(T * K, 1);
	size_t dropped = 0;
	for (uint32_t k = 0; k < K; k++)
		for (size_t t = 0; t < T; t++) {
			int32_t e = idx[t * K + k];
			if (used[e] >= cap) {
				dropped++;
				continue;
			}
			used[e]++;
			kept[t * K + k] = 1;
		}
	float part[4];   /* per rank (per pair, per expert) */
	for (size_t t = 0; t < T; t++)
		for (size_t h = 0; h < H; h++) {
			float xv = (float)mrc__coll_get(x, cfg->dtype, t * H + h), s = 0;
			memset(part, 0, sizeof(part));
			for (uint32_t k = 0; k < K; k++)
				if (kept[t * K + k]) {
					int32_t e = idx[t * K + k];
					part[mc->per_expert ? k : (uint32_t)e / epr] +=
						w[t * K + k] * (float)(e + 1) * xv;
				}
			/* The rank's row, rounded to the type as it crosses back;
			 * with node dedupe the node's sum of them, rounded. */
			uint32_t per_node = node_dedupe(mc) ? cfg->local_ranks : 1;
			float node[4] = { 0 };
			for (uint32_t j = 0; j < 4; j++) {
				mrc__coll_put(ref, cfg->dtype, t * H + h, part[j]);
				node[j / per_node] += (float)mrc__coll_get(ref, cfg->dtype, t * H + h);
			}
			for (uint32_t j = 0; j < 4 / per_node; j++) {
				mrc__coll_put(ref, cfg->dtype, t * H + h, node[j]);
				s += (float)mrc__coll_get(ref, cfg->dtype, t * H + h);
			}
			mrc__coll_put(ref, cfg->dtype, t * H + h, s);
		}
	for (size_t i = 0; !rc && i < T * H; i++)
		r->wrong += mrc__coll_get(ref, cfg->dtype, i) != mrc__coll_get(out, cfg->dtype, i);
	mc->dropped[me] = dropped;
	mrc_coll_moe_plan_free(plan);
	free(ein), free(idx), free(w), free(x), free(out), free(ref), free(kept), free(in_rank);
	return rc;
}

static void moe_run(struct moe_case *mc, const char *what)
{
	struct rank R[4];
	run_ranks(R, 4, body_moe, 1024, mc);
	for (uint32_t i = 0; i < 4; i++)
		if (R[i].rc || R[i].wrong)
			fail_msg("moe %s cf %g %s %s rank %u: %s, %zu wrong (seed %llu)", what,
				 mc->cfg.capacity_factor, mc->cfg.local_ranks ? "2-D" : "flat",
				 mrc_coll_dtype_name(mc->cfg.dtype), i, strerror(-R[i].rc), R[i].wrong,
				 (unsigned long long)mc->seed);
}

/* Rows and bytes: without drops, rank i sends to rank j exactly the
 * layout's tokens_per_rank[j] rows (per expert: one per pair); what
 * crosses to other ranks is those rows' payload and routing metadata.
 * With node dedupe (2 ranks per node) one row per token and destination
 * node leaves it, across nodes only those for the other node, and the
 * experts' ranks still get one row per token and rank; as many rows leave
 * ranks, all together, as flat. */
static void moe_check_rows(const struct moe_case *mc)
{
	size_t sent = 0, got = 0, remote_all = 0, left_all = 0;
	for (uint32_t i = 0; i < 4; i++) {
		const struct mrc__coll_moe_stats *s = &mc->st[i];
		size_t rows = 0, remote = 0, across = 0;
		for (uint32_t j = 0; j < 4; j++) {
			rows += mc->to_rank[i][j];
			remote += j == i ? 0 : mc->to_rank[i][j];
			across += j / 2 == i / 2 ? 0 : mc->to_rank[i][j];
		}
		sent += rows, got += s->rows_recv;
		remote_all += remote, left_all += s->rows_remote;
		assert_int_equal(s->pairs, mc->T[i] * mc->cfg.top_k);
		if (mc->per_expert) {
			assert_int_equal(s->rows, s->pairs);
			assert_int_equal(s->rows_remote, s->pairs_remote);
		} else if (node_dedupe(mc)) {
			assert_int_equal(s->rows, mc->to_node[i][0] + mc->to_node[i][1]);
			assert_int_equal(mc->across[i], mc->to_node[i][1 - i / 2]);
		} else {
			assert_int_equal(s->rows, rows);
			assert_int_equal(s->rows_remote, remote);
			assert_int_equal(mc->across[i], across);
		}
		assert_int_equal(s->row_bytes, mc->cfg.hidden * mrc_coll_dtype_size(mc->cfg.dtype));
		/* Node dedupe: the source rank and token after the entries. */
		assert_int_equal(s->meta_bytes, mc->cfg.top_k * 8 + (node_dedupe(mc) ? 16 : 0));
	}
	if (!mc->per_expert) {
		assert_int_equal(got, sent);
		/* Node dedupe: every forward replaces a direct row, so as many
		 * rows leave ranks (through mrcd) as flat. */
		assert_int_equal(left_all, remote_all);
	}
}

static void test_moe(void **state)
{
	NEED_DAEMON();
	uint64_t seed = (uint64_t)time(NULL);
	const double cfs[] = { 0, 1.0 };
	const uint32_t locals[] = { 0, 2 };
	const int types[] = { MRC_COLL_FLOAT32, MRC_COLL_BFLOAT16 };
	for (int a = 0; a < 2; a++)
		for (int b = 0; b < 2; b++)
			for (int d = 0; d < 2; d++) {
				struct moe_case mc = { .cfg = { .n_experts = 8, .top_k = 2, .hidden = 24,
					.dtype = types[d], .capacity_factor = cfs[a], .local_ranks = locals[b] },
					.seed = seed, .routing = MOE_SKEWED };
				moe_run(&mc, "skewed");
				size_t drops = 0, shared = 0;
				for (uint32_t i = 0; i < 4; i++) {
					drops += mc.dropped[i];
					shared += mc.st[i].pairs - mc.st[i].rows;
					/* A row per (token, rank): never more rows than pairs. */
					assert_true(mc.st[i].rows <= mc.st[i].pairs);
				}
				/* Capacity 1.0 with a popular expert must drop; none without. */
				if (cfs[a] > 0) {
					assert_true(drops > 0);
				} else {
					assert_int_equal(drops, 0);
					moe_check_rows(&mc);
				}
				/* Expert 0 half the time: some tokens' two experts share rank 0. */
				assert_true(shared > 0);
			}
}

/* A token whose experts all live on one rank crosses once: rows = tokens
 * (not pairs), to other ranks the tokens for them (2-D too: the rank is
 * its own proxy, nothing forwarded to another), and the dispatch's
 * payload to other ranks is those rows; the per-expert dispatch sends
 * twice the rows for the same result.  Then uniform routings (top-2 and
 * top-3), flat and 2-D, against the reference. */
static void test_moe_dedup(void **state)
{
	NEED_DAEMON();
	uint64_t seed = (uint64_t)time(NULL) ^ 0x5eed;
	for (int pe = 0; pe < 2; pe++)
		for (uint32_t L = 0; L <= 2; L += 2) {
			struct moe_case mc = { .cfg = { .n_experts = 8, .top_k = 2, .hidden = 24,
				.dtype = MRC_COLL_BFLOAT16, .local_ranks = L },
				.seed = seed, .routing = MOE_ONE_RANK, .per_expert = pe };
			moe_run(&mc, pe ? "one rank, per expert" : "one rank");
			moe_check_rows(&mc);
			for (uint32_t i = 0; i < 4; i++) {
				size_t T = mc.T[i], mine = 0;
				for (size_t t = 0; t < T; t++)
					mine += t % 4 == i;
				assert_int_equal(mc.st[i].rows, pe ? 2 * T : T);
				/* 2-D: straight to the one rank, no forward across ranks. */
				assert_int_equal(mc.st[i].rows_remote, (pe ? 2 : 1) * (T - mine));
				assert_int_equal(mc.st[i].pairs_remote, 2 * (T - mine));
				/* Every rank's experts receive the tokens the others route to them. */
				size_t in = 0;
				for (uint32_t j = 0; j < 4; j++)
					for (size_t t = 0; t < mc.T[j]; t++)
						in += t % 4 == i;
				assert_int_equal(mc.st[i].rows_recv, pe ? 2 * in : in);
			}
		}
	for (uint32_t K = 2; K <= 3; K++)
		for (uint32_t L = 0; L <= 2; L += 2) {
			struct moe_case mc = { .cfg = { .n_experts = 8, .top_k = K, .hidden = 24,
				.dtype = MRC_COLL_BFLOAT16, .local_ranks = L },
				.seed = seed + K, .routing = MOE_UNIFORM };
			moe_run(&mc, "uniform");
			moe_check_rows(&mc);
		}
}

/* Node dedupe: 4 ranks as 2 nodes of 2 (the map the 2-D's local_ranks
 * gives; on the fabric a node is a host).  Every token picks one expert
 * on each rank of one node (node t % 2): flat sends it to both ranks,
 * across nodes twice for the other node's tokens; 2-D sends it across
 * once, and the proxy there forwards it to the 2 ranks.  Result exact
 * against the reference (bf16, float32; skewed and uniform routings too),
 * rows across nodes counted from the plans. */
static void test_moe_node_dedupe(void **state)
{
	NEED_DAEMON();
	uint64_t seed = (uint64_t)time(NULL) ^ 0x40de;
	const int types[] = { MRC_COLL_BFLOAT16, MRC_COLL_FLOAT32 };
	for (int d = 0; d < 2; d++)
		for (uint32_t L = 0; L <= 2; L += 2) {
			struct moe_case mc = { .cfg = { .n_experts = 8, .top_k = 2, .hidden = 24,
				.dtype = types[d], .local_ranks = L },
				.seed = seed, .routing = MOE_ONE_NODE };
			moe_run(&mc, "one node");
			moe_check_rows(&mc);
			size_t across = 0, other = 0, fwd = 0;
			for (uint32_t i = 0; i < 4; i++) {
				for (size_t t = 0; t < mc.T[i]; t++)
					other += t % 2 != i / 2;
				across += mc.across[i];
				fwd += mc.st[i].rows_fwd;
			}
			assert_true(other > 0);
			/* Once per token and other node with 2-D, twice flat. */
			if (L) {
				assert_int_equal(across, other);
				/* Each row received by a proxy goes to both ranks. */
				size_t rows = 0;
				for (uint32_t i = 0; i < 4; i++)
					rows += mc.st[i].rows;
				assert_int_equal(fwd, 2 * rows);
			} else {
				assert_int_equal(across, 2 * other);
				assert_int_equal(fwd, 0);
			}
		}
	/* Capacity drops and a third expert: still exact, fewer rows across. */
	for (uint32_t K = 2; K <= 3; K++) {
		size_t across[2] = { 0 };
		for (uint32_t L = 0; L <= 2; L += 2) {
			struct moe_case mc = { .cfg = { .n_experts = 8, .top_k = K, .hidden = 24,
				.dtype = MRC_COLL_BFLOAT16, .local_ranks = L, .capacity_factor = 1.0 },
				.seed = seed + K, .routing = MOE_SKEWED };
			moe_run(&mc, "skewed");
			for (uint32_t i = 0; i < 4; i++)
				across[L / 2] += mc.across[i];
		}
		if (across[1] >= across[0])
			fail_msg("top-%u: 2-D sent %zu rows across nodes, flat %zu (seed %llu)", K,
				 across[1], across[0], (unsigned long long)(seed + K));
	}
}

/* Rank 1 aborts before the all-reduce; the others, already waiting in it
 * for rank 1's data, return -ECONNABORTED well within the timeout: the
 * abort message, not the timeout, ended their wait. */
static int body_abort(struct rank *r)
{
	int32_t x[1024] = { 0 };
	/* A rank still finishing the barrier when rank 1 aborts fails there. */
	int rc = mrc_coll_barrier(r->c);
	if (rc)
		return rc;
	int64_t *t0 = r->arg;
	if (mrc_coll_rank(r->c) == 1) {
		*t0 = mrcd_spawn_now_ms();
		return mrc_coll_abort(r->c, -ECANCELED);
	}
	rc = mrc_coll_allreduce(r->c, x, x, 1024, MRC_COLL_INT32, MRC_COLL_SUM);
	/* Sticky: the next call fails at once. */
	if (rc && mrc_coll_barrier(r->c) != rc)
		return -EINVAL;
	return rc;
}

/* Runs a failure test's body on 4 ranks with the short bound; checks that
 * the victim returned want_victim and that every other rank failed, and
 * prints how long after *t0 each one returned. */
static void run_failure(struct rank *R, int (*body)(struct rank *), int64_t *t0, uint32_t victim,
			int want_victim)
{
	timeout_ms = TIMEOUT_MS;
	run_ranks(R, 4, body, 0, t0);
	timeout_ms = 30000;
	assert_int_equal(R[victim].rc, want_victim);
	for (uint32_t i = 0; i < 4; i++) {
		if (i == victim)
			continue;
		print_message("rank %u: %s after %lld ms\n", i, strerror(-R[i].rc),
			      (long long)(R[i].t_end - *t0));
		if (R[i].rc == 0)
			fail_msg("rank %u completed without rank %u", i, victim);
	}
}

static void test_abort_reaches_all(void **state)
{
	NEED_DAEMON();
	struct rank R[4];
	int64_t t0 = 0;
	run_failure(R, body_abort, &t0, 1, -ECANCELED);
	for (uint32_t i = 0; i < 4; i++) {
		if (i == 1)
			continue;
		assert_int_equal(R[i].rc, -ECONNABORTED);
		/* Well inside the no-progress timeout (3 s). */
		assert_true(R[i].t_end - t0 < TIMEOUT_MS / 2);
	}
}

/* Rank 2 leaves (destroys its communicator, its QPs go) while the others
 * wait in an all-reduce for it: every other rank returns an error within
 * the bound (timeout_ms plus one delivery), none hangs. */
static int body_leave(struct rank *r)
{
	static int32_t x[4][65536];
	if (mrc_coll_barrier(r->c))
		return -EIO;
	int64_t *t0 = r->arg;
	if (mrc_coll_rank(r->c) == 2) {
		*t0 = mrcd_spawn_now_ms();
		return -EOWNERDEAD;   /* rank_main destroys it */
	}
	return mrc_coll_allreduce(r->c, x[mrc_coll_rank(r->c)], x[mrc_coll_rank(r->c)], 65536,
				  MRC_COLL_INT32, MRC_COLL_SUM);
}

static void test_rank_leaves(void **state)
{
	NEED_DAEMON();
	struct rank R[4];
	int64_t t0 = 0;
	run_failure(R, body_leave, &t0, 2, -EOWNERDEAD);
	for (uint32_t i = 0; i < 4; i++) {
		if (i == 2)
			continue;
		assert_true(R[i].t_end - t0 <= TIMEOUT_MS + 1000);
	}
}

/* Rank 2 stays alive but never calls the all-reduce (a hung process):
 * the others give up after timeout_ms without progress and every one
 * returns within the bound; the first to time out tells the rest. */
static int n_returned;

static int others_done(void *arg)
{
	return __atomic_load_n(&n_returned, __ATOMIC_ACQUIRE) == 3;
}

static int body_hang(struct rank *r)
{
	static int32_t x[4][4096];
	int rc = mrc_coll_barrier(r->c);
	if (rc)
		return rc;
	int64_t *t0 = r->arg;
	uint32_t me = mrc_coll_rank(r->c);
	if (me == 2) {
		*t0 = mrcd_spawn_now_ms();
		/* Not a synchronisation sleep: the hung rank waits (bounded)
		 * for the others to give up, so its QPs outlive their wait. */
		mrcd_spawn_wait_for(others_done, NULL, 3 * TIMEOUT_MS);
		return -EOWNERDEAD;
	}
	rc = mrc_coll_allreduce(r->c, x[me], x[me], 4096, MRC_COLL_INT32, MRC_COLL_SUM);
	r->t_end = mrcd_spawn_now_ms();
	__atomic_add_fetch(&n_returned, 1, __ATOMIC_RELEASE);
	return rc;
}

static void test_rank_hangs(void **state)
{
	NEED_DAEMON();
	struct rank R[4];
	int64_t t0 = 0;
	n_returned = 0;
	run_failure(R, body_hang, &t0, 2, -EOWNERDEAD);
	int timed_out = 0;
	for (uint32_t i = 0; i < 4; i++) {
		if (i == 2)
			continue;
		assert_true(R[i].rc == -ETIMEDOUT || R[i].rc == -ECONNABORTED);
		timed_out += R[i].rc == -ETIMEDOUT;
		assert_true(R[i].t_end - t0 <= TIMEOUT_MS + 1000);
	}
	assert_true(timed_out >= 1);
}

/* The bootstrap from the environment as a launcher sets it. */
static void test_cfg_from_env(void **state)
{
	struct mrc_coll_cfg cfg;
	unsetenv("MRC_COLL_SIZE");
	unsetenv("MRC_COLL_RANK");
	unsetenv("PMI_SIZE");
	unsetenv("PMI_RANK");
	unsetenv("SLURM_NTASKS");
	unsetenv("SLURM_PROCID");
	setenv("OMPI_COMM_WORLD_SIZE", "8", 1);
	setenv("OMPI_COMM_WORLD_RANK", "5", 1);
	setenv("MRC_COLL_SID", "7777", 1);
	setenv("MRC_COLL_ROOT_HOST", "3", 1);
	assert_int_equal(mrc_coll_cfg_from_env(&cfg), 0);
	assert_int_equal(cfg.nranks, 8);
	assert_int_equal(cfg.rank, 5);
	assert_int_equal(cfg.sid, 7777);
	assert_int_equal(cfg.root_host, 3);
	assert_int_equal(cfg.algo, MRC_COLL_ALGO_AUTO);
	setenv("MRC_COLL_ALGO", "tree", 1);
	assert_int_equal(mrc_coll_cfg_from_env(&cfg), 0);
	assert_int_equal(cfg.algo, MRC_COLL_ALGO_TREE);
	setenv("MRC_COLL_ALGO", "forest", 1);
	setenv("MRC_COLL_PLANES", "2", 1);
	setenv("MRC_COLL_HOSTS_PER_LEAF", "4", 1);
	assert_int_equal(mrc_coll_cfg_from_env(&cfg), 0);
	assert_int_equal(cfg.algo, MRC_COLL_ALGO_FOREST);
	assert_int_equal(cfg.planes, 2);
	assert_int_equal(cfg.hosts_per_leaf, 4);
	unsetenv("MRC_COLL_PLANES");
	unsetenv("MRC_COLL_HOSTS_PER_LEAF");
	setenv("MRC_COLL_ALGO", "bogus", 1);
	assert_int_equal(mrc_coll_cfg_from_env(&cfg), -EINVAL);
	unsetenv("MRC_COLL_ALGO");
	setenv("OMPI_COMM_WORLD_RANK", "8", 1);
	assert_int_equal(mrc_coll_cfg_from_env(&cfg), -EINVAL);
	setenv("OMPI_COMM_WORLD_RANK", "x", 1);
	assert_int_equal(mrc_coll_cfg_from_env(&cfg), -EINVAL);
	unsetenv("OMPI_COMM_WORLD_SIZE");
	unsetenv("OMPI_COMM_WORLD_RANK");
	unsetenv("MRC_COLL_ROOT_HOST");
	unsetenv("MRC_COLL_SID");
	assert_int_equal(mrc_coll_cfg_from_env(&cfg), -ENOENT);
	setenv("MRC_COLL_SIZE", "2", 1);
	setenv("MRC_COLL_RANK", "1", 1);
	assert_int_equal(mrc_coll_cfg_from_env(&cfg), 0);
	assert_int_equal(cfg.root_host, MRC_COLL_HOST_ANY);
	unsetenv("MRC_COLL_SIZE");
	unsetenv("MRC_COLL_RANK");
}

/* Rank 0's host found by probing (MRC_COLL_HOST_ANY). */
static int body_barrier(struct rank *r)
{
	return mrc_coll_barrier(r->c);
}

static void test_probe_root(void **state)
{
	NEED_DAEMON();
	struct rank R[3];
	root_host = MRC_COLL_HOST_ANY;
	run_ranks(R, 3, body_barrier, 0, NULL);
	root_host = 0;
	check_all_ok(R, 3);
}

/* Bad arguments are refused before anything is sent. */
static void test_bad_args(void **state)
{
	struct mrc_coll *c = NULL;
	struct mrc_coll_cfg cfg = { .nranks = 2, .rank = 2 };
	assert_int_equal(mrc_coll_init(&cfg, &c), -EINVAL);
	cfg = (struct mrc_coll_cfg){ .nranks = 2, .rank = 0, .chunk_bytes = 100 };
	assert_int_equal(mrc_coll_init(&cfg, &c), -EINVAL);
	cfg = (struct mrc_coll_cfg){ .nranks = 2, .rank = 0, .window = 65 };
	assert_int_equal(mrc_coll_init(&cfg, &c), -EINVAL);
	cfg = (struct mrc_coll_cfg){ .nranks = 2, .rank = 0, .algo = MRC_COLL_ALGO_FOREST + 1 };
	assert_int_equal(mrc_coll_init(&cfg, &c), -EINVAL);
	cfg = (struct mrc_coll_cfg){ .nranks = 2, .rank = 0, .planes = MRC_QP_MAX_PLANES + 1 };
	assert_int_equal(mrc_coll_init(&cfg, &c), -EINVAL);
	assert_int_equal(mrc_coll_dtype_size(MRC_COLL_NTYPES), 0);
	assert_string_equal(mrc_coll_dtype_name(MRC_COLL_BFLOAT16), "bfloat16");
	assert_string_equal(mrc_coll_op_name(MRC_COLL_MAX), "max");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_args),
		cmocka_unit_test(test_cfg_from_env),
		cmocka_unit_test(test_probe_root),
		cmocka_unit_test(test_matrix_3),
		cmocka_unit_test(test_matrix_4_and_1),
		cmocka_unit_test(test_alltoallv),
		cmocka_unit_test(test_moe),
		cmocka_unit_test(test_moe_dedup),
		cmocka_unit_test(test_moe_node_dedupe),
		cmocka_unit_test(test_abort_reaches_all),
		cmocka_unit_test(test_rank_leaves),
		cmocka_unit_test(test_rank_hangs),
	};
	/* The QP path through mrcd: these ranks share a host, which would
	 * otherwise put every pair on shared memory (tests/test_coll_shm.c). */
	setenv("MRC_COLL_SHM", "0", 1);
	return cmocka_run_group_tests(tests, mrcd_group_setup, mrcd_group_teardown);
}

/* MoE dispatch and combine (coll/moe.c) against a real mrcd on the
 * loopback fabric (no root), 4 ranks as threads of this process
 * (tests/support/coll_ranks.h): flat and 2-D, every routing and capacity
 * case against a local reference, rows per rank and per node as the
 * layout step says.  Skipped when build/bin/mrcd has not been built. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tests/support/mrcd_spawn.h"
#include "tests/support/coll_ranks.h"
#include "tests/support/skip.h"

#include "coll/coll_int.h"
#include "coll/moe_int.h"
#include "common/prng.h"

#define NEED_DAEMON() MRCD_GROUP_NEED()

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
	int kept;                  /* mrc_coll_moe_dispatch_kept, twice in a row */
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

static int body_moe(struct coll_rank *r)
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
	struct mrc_coll_moe_plan *plan = NULL;
	void *ein = NULL, *first = NULL;
	size_t counts[4];
	int rc = 0;
	/* Kept: the second layer's experts' input is the first's memory,
	 * written over (the experts work in place) and handed out again. */
	for (int pass = 0; pass < (mc->kept ? 2 : 1) && !rc; pass++) {
		if (plan)
			mrc_coll_moe_plan_free(plan);
		memset(out, 0x7f, T * H * 4);
		if (mc->kept && !mc->per_expert)
			rc = mrc_coll_moe_dispatch_kept(r->c, cfg, T, idx, w, x, &plan, &ein, counts);
		else
			rc = mrc__coll_moe_dispatch_run(r->c, cfg, T, idx, w, x,
						    mc->per_expert | (mc->kept ? MRC__MOE_KEPT : 0),
						    &plan, &ein, counts);
		if (rc)
			return rc;
		if (pass && ein != first)
			return -EFAULT;
		first = ein;
		/* The experts. */
		size_t row = 0;
		for (uint32_t el = 0; el < epr; el++)
			for (size_t i = 0; i < counts[el]; i++, row++)
				for (size_t h = 0; h < H; h++)
					mrc__coll_put(ein, cfg->dtype, row * H + h,
						      (me * epr + el + 1) *
						      mrc__coll_get(ein, cfg->dtype, row * H + h));
		rc = mrc_coll_moe_combine(r->c, plan, ein, out);
	}
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
	if (!mc->kept)
		free(ein);
	free(idx), free(w), free(x), free(out), free(ref), free(kept), free(in_rank);
	return rc;
}

static void moe_run(struct moe_case *mc, const char *what)
{
	struct coll_rank R[4];
	coll_ranks_run(R, 4, body_moe, 1024, mc);
	/* The path main() asked for: every pair over shared memory (these
	 * ranks share a host), or every pair over its QP. */
	const char *e = getenv("MRC_COLL_SHM");
	int shm = e && !strcmp(e, "1");
	for (uint32_t i = 0; i < 4; i++) {
		if (R[i].rc || R[i].wrong)
			fail_msg("moe %s cf %g %s %s rank %u: %s, %zu wrong (seed %llu)", what,
				 mc->cfg.capacity_factor, mc->cfg.local_ranks ? "2-D" : "flat",
				 mrc_coll_dtype_name(mc->cfg.dtype), i, strerror(-R[i].rc), R[i].wrong,
				 (unsigned long long)mc->seed);
		if (R[i].nshm != (shm ? 3u : 0u) || (shm ? R[i].qp_msgs != 0 : !R[i].qp_msgs))
			fail_msg("moe %s rank %u: %u shared-memory peers and %llu messages on QPs "
				 "with MRC_COLL_SHM=%s", what, i, R[i].nshm,
				 (unsigned long long)R[i].qp_msgs, e ? e : "(unset)");
	}
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

/* mrc_coll_moe_dispatch_kept: two layers in a row, flat and 2-D (node
 * dedupe), with drops: the experts' input is the same memory both times
 * (the experts write over it in place), never freed by the caller (ASan
 * builds would report a leak or a double free), and the combine's result
 * matches the reference each time. */
static void test_moe_kept(void **state)
{
	NEED_DAEMON();
	uint64_t seed = (uint64_t)time(NULL) ^ 0x6e97;
	const int types[] = { MRC_COLL_FLOAT32, MRC_COLL_BFLOAT16 };
	for (int d = 0; d < 2; d++)
		for (uint32_t L = 0; L <= 2; L += 2) {
			struct moe_case mc = { .cfg = { .n_experts = 8, .top_k = 2, .hidden = 24,
				.dtype = types[d], .capacity_factor = 1.0, .local_ranks = L },
				.seed = seed + d, .routing = MOE_SKEWED, .kept = 1 };
			moe_run(&mc, "kept");
		}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_moe),
		cmocka_unit_test(test_moe_dedup),
		cmocka_unit_test(test_moe_node_dedupe),
		cmocka_unit_test(test_moe_kept),
	};
	/* Once over the QPs through mrcd, once over shared memory: these
	 * ranks share a host, so MRC_COLL_SHM picks the path (coll/shm.h). */
	setenv("MRC_COLL_SHM", "0", 1);
	int r = cmocka_run_group_tests_name("moe over mrcd", tests, mrcd_group_setup,
					    mrcd_group_teardown);
	setenv("MRC_COLL_SHM", "1", 1);
	return r + cmocka_run_group_tests_name("moe over shared memory", tests, mrcd_group_setup,
					       mrcd_group_teardown);
}

/* Pre-gated MoE dispatch and the expert fetch (coll/pregate.c,
 * coll/pregate_fetch.c) against a real mrcd on the loopback fabric, 4
 * ranks as threads of this process (tests/support/coll_ranks.h):
 *   - the pre-gated dispatch of the actual routing equals a plain dispatch
 *     of it, element by element (experts' input, counts, the combine's
 *     output), with 0, 10 and 30 % of the predicted experts changed,
 *     float32 and bfloat16, with and without capacity drops; the
 *     correction exchange is checked to have carried rows (or none at 0 %);
 *     a second dispatch from the same pre-gate equals too; with 50 %
 *     slack the same results;
 *   - the pre-gate, an all-reduce and the dispatch in flight together,
 *     tested in a random order (they still run in start order);
 *   - the expert fetch: each rank gets exactly the blobs it asked for,
 *     with an all-reduce in flight beside it;
 *   - 2-D (local_ranks 2: two nodes of two ranks): the same, against the
 *     plain 2-D dispatch of rows per rank (MRC__MOE_RANK_2D), whose
 *     experts' input and counts also equal the node-dedupe dispatch's
 *     (mrc_coll_moe_dispatch with local_ranks); the main exchange checked
 *     to have gone through the 2-D all-to-allv's inter-node phase;
 *   - local_ranks not dividing the ranks is refused (-EINVAL);
 *   - the 2-D pre-gate's reading of the gathered counts (peers' words):
 *     a negative count, one past 32 bits, or rows whose bytes could not
 *     be addressed are -EPROTO; good ones get their header row.
 * Seeded (MRC_TEST_SEED replays; the seed is printed).  Skipped when
 * build/bin/mrcd has not been built. */
#include <errno.h>
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
#include "tests/support/seeded.h"
#include "tests/support/coll_nb.h"

#include "coll/coll_int.h"
#include "coll/moe_int.h"
#include "coll/pregate_hdr.h"

#define NEED_DAEMON() MRCD_GROUP_NEED()

struct pg_case {
	struct mrc_coll_moe_cfg cfg;
	uint64_t seed;
	double mis;                /* chance each predicted expert is changed */
	size_t changed[4];         /* (token, k) pairs changed, per rank */
	struct mrc__coll_moe_stats st[4];
};

/* An expert none of row[0..m) names. */
static int32_t fresh_expert(struct mrc_rng *g, uint32_t E, const int32_t *row, uint32_t m)
{
	for (;;) {
		int32_t e = (int32_t)mrc_rng_below(g, E), dup = 0;
		for (uint32_t j = 0; j < m; j++)
			dup |= row[j] == e;
		if (!dup)
			return e;
	}
}

/* Distinct experts per token, weights in quarters; then act = pred with
 * each pair changed with chance mis to an expert the token has not. */
static size_t route(struct mrc_rng *g, const struct pg_case *pc, size_t T, int32_t *pred,
		    int32_t *act, float *w)
{
	uint32_t K = pc->cfg.top_k, E = pc->cfg.n_experts;
	size_t changed = 0;
	for (size_t t = 0; t < T; t++)
		for (uint32_t k = 0; k < K; k++) {
			pred[t * K + k] = act[t * K + k] = fresh_expert(g, E, pred + t * K, k);
			w[t * K + k] = (float)(1 + mrc_rng_below(g, 4)) / 4;
		}
	for (size_t t = 0; t < T; t++)
		for (uint32_t k = 0; k < K; k++)
			if (mrc_rng_chance(g, pc->mis)) {
				act[t * K + k] = fresh_expert(g, E, act + t * K, K);
				changed++;
			}
	return changed;
}

/* The experts: expert e multiplies its tokens by e + 1. */
static void experts(const struct mrc_coll_moe_cfg *cfg, uint32_t me, uint32_t epr, void *ein,
		    const size_t *counts)
{
	size_t row = 0;
	for (uint32_t el = 0; el < epr; el++)
		for (size_t i = 0; i < counts[el]; i++, row++)
			for (size_t h = 0; h < cfg->hidden; h++)
				mrc__coll_put(ein, cfg->dtype, row * cfg->hidden + h,
					      (me * epr + el + 1) *
					      mrc__coll_get(ein, cfg->dtype, row * cfg->hidden + h));
}

/* The calls in flight together: the pre-gate, an all-reduce, the
 * pre-gated dispatch. */
struct pg_start {
	struct mrc_coll *c;
	const struct mrc_coll_moe_cfg *cfg;
	size_t T;
	const int32_t *pred, *act;
	const float *w;
	const void *x;
	struct mrc_coll_moe_pregate **pg;
	struct mrc_coll_moe_plan **plan;
	void **ein;
	size_t *counts;
	int64_t *ar_in, *ar;
};

static int pg_start(void *arg, size_t i, struct mrc_coll_req **q)
{
	struct pg_start *s = arg;
	if (i == 0)
		return mrc_coll_moe_ipregate(s->c, s->cfg, s->T, s->pred, s->pg, q);
	if (i == 1)
		return mrc_coll_iallreduce(s->c, s->ar_in, s->ar, 8, MRC_COLL_INT64, MRC_COLL_SUM, q);
	return mrc_coll_moe_idispatch_pregated(s->c, *s->pg, s->act, s->w, s->x, s->plan, s->ein,
					       s->counts, q);
}

/* 2-D: the node-dedupe dispatch (mrc_coll_moe_dispatch with local_ranks)
 * gives the experts the same input and counts as the rows-per-rank one. */
static int check_node_dedupe(struct coll_rank *r, const struct mrc_coll_moe_cfg *cfg, size_t T,
			     const int32_t *act, const float *w, const void *x, const void *e1,
			     const size_t *c1)
{
	struct mrc_coll_moe_plan *p = NULL;
	void *e = NULL;
	size_t c[4] = { 0 }, rows = 0;
	uint32_t epr = cfg->n_experts / mrc_coll_size(r->c);
	int rc = mrc_coll_moe_dispatch(r->c, cfg, T, act, w, x, &p, &e, c);
	if (rc)
		return rc;
	for (uint32_t i = 0; i < epr; i++)
		r->wrong += c[i] != c1[i], rows += c[i];
	r->wrong += memcmp(e, e1, rows * cfg->hidden * mrc_coll_dtype_size(cfg->dtype)) != 0;
	mrc_coll_moe_plan_free(p), free(e);
	return 0;
}

/* Plain dispatch + combine of the actual routing, then the pre-gate of
 * the predicted one, an all-reduce and the pre-gated dispatch in flight
 * together, and its combine: equal byte for byte. */
static int body_pregate(struct coll_rank *r)
{
	struct pg_case *pc = r->arg;
	const struct mrc_coll_moe_cfg *cfg = &pc->cfg;
	uint32_t n = mrc_coll_size(r->c), me = mrc_coll_rank(r->c), K = cfg->top_k;
	uint32_t epr = cfg->n_experts / n;
	size_t T = 40 + me * 7, H = cfg->hidden, esz = mrc_coll_dtype_size(cfg->dtype);
	struct mrc_rng g;
	mrc_rng_seed(&g, pc->seed + me);
	int32_t *pred = malloc(T * K * sizeof(*pred)), *act = malloc(T * K * sizeof(*act));
	float *w = malloc(T * K * sizeof(*w));
	uint8_t *x = malloc(T * H * esz), *o1 = malloc(T * H * esz), *o2 = malloc(T * H * esz);
	pc->changed[me] = route(&g, pc, T, pred, act, w);
	for (size_t i = 0; i < T * H; i++)
		mrc__coll_put(x, cfg->dtype, i, (double)(int)mrc_rng_below(&g, 9) - 4);
	struct mrc_coll_moe_plan *p1 = NULL, *p2 = NULL;
	struct mrc_coll_moe_pregate *pg = NULL;
	void *e1 = NULL, *e2 = NULL;
	size_t c1[4] = { 0 }, c2[4] = { 0 }, rows = 0;
	int64_t ar[8], ar_in[8];
	for (int i = 0; i < 8; i++)
		ar_in[i] = (int64_t)me * 10 + i;
	struct pg_start st = { .c = r->c, .cfg = cfg, .T = T, .pred = pred, .act = act, .w = w,
			       .x = x, .pg = &pg, .plan = &p2, .ein = &e2, .counts = c2,
			       .ar_in = ar_in, .ar = ar };
	/* 2-D: the plain dispatch of rows per rank through the 2-D
	 * all-to-allv, as the pre-gated one sends them. */
	int rc = cfg->local_ranks
		? mrc__coll_moe_dispatch_run(r->c, cfg, T, act, w, x, MRC__MOE_RANK_2D, &p1, &e1, c1)
		: mrc_coll_moe_dispatch(r->c, cfg, T, act, w, x, &p1, &e1, c1);
	if (!rc && cfg->local_ranks)
		rc = check_node_dedupe(r, cfg, T, act, w, x, e1, c1);
	if (!rc)
		rc = coll_nb_run(r->c, 3, pg_start, &st, &g, 20, NULL, NULL);
	if (rc)
		return rc;
	for (int i = 0; i < 8; i++)
		r->wrong += ar[i] != (int64_t)(n * (n - 1) / 2 * 10 + n * i);
	for (uint32_t e = 0; e < epr; e++)
		r->wrong += c1[e] != c2[e], rows += c1[e];
	r->wrong += memcmp(e1, e2, rows * H * esz) != 0;
	/* The pre-gate serves a second dispatch alike. */
	struct mrc_coll_moe_plan *p3 = NULL;
	void *e3 = NULL;
	size_t c3[4] = { 0 };
	if ((rc = mrc_coll_moe_dispatch_pregated(r->c, pg, act, w, x, &p3, &e3, c3)))
		return rc;
	r->wrong += memcmp(c1, c3, sizeof(c1)) != 0 || memcmp(e1, e3, rows * H * esz) != 0;
	mrc_coll_moe_plan_free(p3);
	experts(cfg, me, epr, e1, c1);
	experts(cfg, me, epr, e2, c2);
	memset(o1, 0x7f, T * H * esz), memset(o2, 0x11, T * H * esz);
	if (!(rc = mrc_coll_moe_combine(r->c, p1, e1, o1)) &&
	    !(rc = mrc_coll_moe_combine(r->c, p2, e2, o2)))
		for (size_t i = 0; i < T * H; i++)
			r->wrong += memcmp(o1 + i * esz, o2 + i * esz, esz) != 0;
	mrc__coll_moe_stats(p2, &pc->st[me]);
	/* 2-D: the plan combines through the 2-D all-to-allv, and the main
	 * exchange ran its inter-node phase (a flat one leaves it 0). */
	if (cfg->local_ranks)
		r->wrong += p2->L2d != cfg->local_ranks || !(pc->st[me].t_disp[MRC__MOE_PH_2] > 0);
	mrc_coll_moe_plan_free(p1), mrc_coll_moe_plan_free(p2), mrc_coll_moe_pregate_free(pg);
	free(e1), free(pred), free(act), free(w), free(x), free(o1), free(o2);
	return rc;
}

static void pregate_run(struct pg_case *pc)
{
	struct coll_rank R[4];
	coll_ranks_run(R, 4, body_pregate, 1024, pc);
	for (uint32_t i = 0; i < 4; i++)
		CHECK(!R[i].rc && !R[i].wrong,
		      "pre-gate L %u mis %.0f%% cf %g %s rank %u: %s, %zu wrong",
		      pc->cfg.local_ranks, pc->mis * 100, pc->cfg.capacity_factor,
		      mrc_coll_dtype_name(pc->cfg.dtype), i,
		      strerror(-R[i].rc), R[i].wrong);
}

/* Every misprediction rate, capacity and type, flat (L 0) or 2-D. */
static void mispredict(uint32_t L)
{
	const double mis[] = { 0, 0.1, 0.3 }, cfs[] = { 0, 1.0 };
	const int types[] = { MRC_COLL_FLOAT32, MRC_COLL_BFLOAT16 };
	for (int m = 0; m < 3; m++)
		for (int a = 0; a < 2; a++)
			for (int d = 0; d < 2; d++) {
				struct pg_case pc = { .cfg = { .n_experts = 8, .top_k = 2, .hidden = 24,
					.dtype = types[d], .capacity_factor = cfs[a],
					.local_ranks = L }, .seed = rnd(), .mis = mis[m] };
				pregate_run(&pc);
				size_t changed = 0, extra = 0, pad = 0;
				for (uint32_t i = 0; i < 4; i++) {
					changed += pc.changed[i];
					extra += pc.st[i].rows_extra, pad += pc.st[i].rows_pad;
				}
				/* Predicted exactly: nothing to correct; else the
				 * correction exchange carried rows (and some
				 * predicted rows were padding). */
				if (m == 0) {
					CHECK(changed == 0 && extra == 0 && pad == 0,
					      "0%%: %zu changed, %zu extra, %zu pad", changed, extra, pad);
				} else {
					CHECK(changed > 0 && extra > 0 && pad > 0,
					      "%.0f%%: %zu changed, %zu extra, %zu pad", mis[m] * 100,
					      changed, extra, pad);
				}
			}
}

static void test_pregate_mispredict(void **state)
{
	NEED_DAEMON();
	const double mis[] = { 0, 0.1, 0.3 };
	mispredict(0);
	/* With slack (rows added to each prediction) the result is the same;
	 * at 0 % the slack is padding only, never a correction. */
	setenv("MRC_COLL_PREGATE_SLACK", "50", 1);
	for (int m = 0; m < 3; m++) {
		struct pg_case pc = { .cfg = { .n_experts = 8, .top_k = 2, .hidden = 24,
			.dtype = MRC_COLL_BFLOAT16, .capacity_factor = 1.0 }, .seed = rnd(),
			.mis = mis[m] };
		pregate_run(&pc);
		size_t extra = 0, pad = 0;
		for (uint32_t i = 0; i < 4; i++)
			extra += pc.st[i].rows_extra, pad += pc.st[i].rows_pad;
		CHECK(pad > 0 && (m > 0 || extra == 0), "slack 50%%, %.0f%%: %zu extra, %zu pad",
		      mis[m] * 100, extra, pad);
	}
	unsetenv("MRC_COLL_PREGATE_SLACK");
}

/* 2-D: two nodes of two ranks. */
static void test_pregate_2d(void **state)
{
	NEED_DAEMON();
	mispredict(2);
	/* With slack too (the padding through both phases). */
	setenv("MRC_COLL_PREGATE_SLACK", "50", 1);
	for (int m = 0; m < 3; m += 2) {
		struct pg_case pc = { .cfg = { .n_experts = 8, .top_k = 2, .hidden = 24,
			.dtype = MRC_COLL_BFLOAT16, .capacity_factor = 1.0, .local_ranks = 2 },
			.seed = rnd(), .mis = m * 0.15 };
		pregate_run(&pc);
		size_t extra = 0, pad = 0;
		for (uint32_t i = 0; i < 4; i++)
			extra += pc.st[i].rows_extra, pad += pc.st[i].rows_pad;
		CHECK(pad > 0 && (m > 0 || extra == 0), "2-D slack 50%%, %.0f%%: %zu extra, %zu pad",
		      pc.mis * 100, extra, pad);
	}
	unsetenv("MRC_COLL_PREGATE_SLACK");
}

/* ---- the expert fetch ----------------------------------------------------- */

#define BLOB_WORDS 16

/* The fetch and an all-reduce in flight together. */
struct fetch_start {
	struct mrc_coll *c;
	const int32_t *owned;
	const uint8_t *need;
	int32_t *got;
	int64_t *one, *sum;
};

static int fetch_start(void *arg, size_t i, struct mrc_coll_req **q)
{
	struct fetch_start *s = arg;
	return i == 0 ? mrc_coll_moe_ifetch_experts(s->c, 8, BLOB_WORDS * 4, s->owned, s->need,
						    s->got, q)
		      : mrc_coll_iallreduce(s->c, s->one, s->sum, 1, MRC_COLL_INT64, MRC_COLL_SUM, q);
}

static int body_fetch(struct coll_rank *r)
{
	uint32_t n = mrc_coll_size(r->c), me = mrc_coll_rank(r->c), E = 8, epr = E / n;
	struct mrc_rng g;
	mrc_rng_seed(&g, *(uint64_t *)r->arg + me);
	int32_t owned[8 * BLOB_WORDS], got[8 * BLOB_WORDS];
	uint8_t need[8];
	size_t nneed = 0;
	for (uint32_t i = 0; i < epr * BLOB_WORDS; i++)
		owned[i] = (int32_t)((me * epr + i / BLOB_WORDS) * 1000 + i % BLOB_WORDS);
	for (uint32_t e = 0; e < E; e++)
		nneed += need[e] = mrc_rng_chance(&g, 0.5) || e == (me * epr + epr) % E;
	memset(got, 0xee, sizeof(got));
	int64_t one = 1, sum = 0;
	struct fetch_start st = { .c = r->c, .owned = owned, .need = need, .got = got, .one = &one,
				  .sum = &sum };
	int rc = coll_nb_run(r->c, 2, fetch_start, &st, &g, 20, NULL, NULL);
	if (rc)
		return rc;
	r->wrong += sum != (int64_t)n;
	for (uint32_t e = 0, k = 0; e < E; e++)
		for (uint32_t i = 0; need[e] && i < BLOB_WORDS; i++)
			r->wrong += got[k * BLOB_WORDS + i] != (int32_t)(e * 1000 + i),
				k += i == BLOB_WORDS - 1;
	/* Nothing past the wanted blobs was written. */
	for (size_t i = nneed * BLOB_WORDS; i < 8 * BLOB_WORDS; i++)
		r->wrong += got[i] != (int32_t)0xeeeeeeee;
	return 0;
}

static void test_fetch_experts(void **state)
{
	NEED_DAEMON();
	for (int rep = 0; rep < 3; rep++) {
		uint64_t seed = rnd();
		struct coll_rank R[4];
		coll_ranks_run(R, 4, body_fetch, 1024, &seed);
		for (uint32_t i = 0; i < 4; i++)
			CHECK(!R[i].rc && !R[i].wrong, "fetch rank %u: %s, %zu wrong", i,
			      strerror(-R[i].rc), R[i].wrong);
	}
}

static int body_refuse(struct coll_rank *r)
{
	struct mrc_coll_moe_cfg cfg = { .n_experts = 8, .top_k = 2, .hidden = 8,
					.dtype = MRC_COLL_FLOAT32, .local_ranks = 2 };
	int32_t idx[4] = { 0, 1, 2, 3 };
	struct mrc_coll_moe_pregate *pg = NULL;
	cfg.local_ranks = 3;   /* does not divide the 4 ranks */
	r->wrong += mrc_coll_moe_pregate(r->c, &cfg, 2, idx, &pg) != -EINVAL || pg;
	cfg.local_ranks = 0, idx[3] = 8;   /* expert out of range */
	r->wrong += mrc_coll_moe_pregate(r->c, &cfg, 2, idx, &pg) != -EINVAL || pg;
	return mrc_coll_barrier(r->c);
}

static void test_pregate_refuses(void **state)
{
	NEED_DAEMON();
	struct coll_rank R[4];
	coll_ranks_run(R, 4, body_refuse, 1024, NULL);
	coll_ranks_check_ok(R, 4);
}

/* mrc__coll_pregate_counts (coll/pregate_hdr.c) on 3 ranks, as rank 1. */
static void test_pregate_counts(void **state)
{
	(void)state;
	int64_t M[9] = { 0, 5, 1, 2, 0, 7, 3, 4, 0 };
	size_t prc[3] = { 99, 99, 99 };
	assert_int_equal(mrc__coll_pregate_counts(3, 1, M, 64, prc), 0);
	const int64_t want[9] = { 1, 6, 2, 3, 1, 8, 4, 5, 1 };   /* each block's header row added */
	for (int i = 0; i < 9; i++)
		assert_int_equal(M[i], want[i]);
	assert_int_equal(prc[0], 5), assert_int_equal(prc[1], 0), assert_int_equal(prc[2], 4);
	int64_t bad[3][9] = { { 0, -1 }, { 0, 0, (int64_t)UINT32_MAX }, { 0, (int64_t)1 << 31 } };
	/* Negative, past 32 bits, and (at a 2^33-byte stride) not addressable. */
	size_t stride[3] = { 64, 64, (size_t)1 << 33 };
	for (int k = 0; k < 3; k++)
		assert_int_equal(mrc__coll_pregate_counts(3, 1, bad[k], stride[k], prc), -EPROTO);
	assert_int_equal(mrc__coll_pregate_counts(3, 3, M, 64, prc), -EINVAL);
}

int main(void)
{
	seed_init("test_coll_pregate");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_pregate_mispredict, reseed),
		cmocka_unit_test_setup(test_pregate_2d, reseed),
		cmocka_unit_test_setup(test_fetch_experts, reseed),
		cmocka_unit_test_setup(test_pregate_refuses, reseed),
		cmocka_unit_test(test_pregate_counts),
	};
	/* Over the QPs through mrcd, then over shared memory (coll/shm.h). */
	setenv("MRC_COLL_SHM", "0", 1);
	int r = cmocka_run_group_tests_name("pre-gate over mrcd", tests, mrcd_group_setup,
					    mrcd_group_teardown);
	setenv("MRC_COLL_SHM", "1", 1);
	return r + cmocka_run_group_tests_name("pre-gate over shared memory", tests,
					       mrcd_group_setup, mrcd_group_teardown);
}

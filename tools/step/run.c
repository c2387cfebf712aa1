/* mrc-step's step (docs/step.md): per rank, the same program as mrcsim's
 * step workload (sim/step.c), over libmrc-coll:
 *   staging  read `stage` bytes of the next batch;
 *   forward  `layers` compute stubs of `fwd`; at layer `moe` the MoE layer:
 *            dispatch (2-D with `local` ranks per node, capacity `cap`),
 *            the expert's stub (`fwd`), combine;
 *   backward the stubs of `bwd` in reverse, the MoE layer's dispatch,
 *            expert (`bwd`) and combine as its backward all-to-alls; each
 *            layer adds `grad` bytes to the open bucket, and a full bucket
 *            (or the last layer's) is reduce-scattered then all-gathered;
 *   end      the step waits for its buckets.
 * Blocking: each bucket's calls complete before the next layer.  Overlap:
 * they are started (mrc_coll_ireduce_scatter, _iallgather) and the stubs
 * test the oldest every `tick`, as an MPI code's MPI_Test.  The gradients
 * go on a communicator of their own (as DDP's process group beside the
 * expert-parallel one), so the MoE all-to-alls do not queue behind them.
 * The stub spins (or sleeps): time, not FLOPs.  Every bucket of every step is checked
 * element by element against the all-reduce's result. */
#include <errno.h>
#include <stdlib.h>

#include "common/clock.h"
#include "coll/coll_int.h"
#include "coll/moe_int.h"
#include "tools/step/step.h"

struct st {
	struct mrc_coll *c, *g;
	struct step_bulk *bk;
	const struct step_par *p;
	uint32_t n, me;
	/* MoE */
	struct mrc_coll_moe_cfg mc;
	int32_t *idx;
	float *w;
	uint16_t *x, *y;
	size_t *counts;
	/* buckets: nb, each cnt[b] floats; t[b] its reduce-scatter's block */
	size_t nb, *cnt;
	uint32_t *close_at;        /* backward layer index closing each bucket */
	float **gb, **t;
	struct mrc_coll_req **q;   /* 2 per bucket */
	size_t nq, head;
	struct step_stage sg;
	uint64_t tokens, dropped;
	int64_t wrong;
	double t_moe;              /* this step: waiting on the MoE's calls (s) */
};

/* Moves the gradients' calls on (the oldest first) and the background. */
static int progress(struct st *s)
{
	while (s->head < s->nq && s->q[s->head]) {
		int r = mrc_coll_test(s->q[s->head]);
		if (r == -EINPROGRESS)
			break;
		s->q[s->head++] = NULL;
		if (r)
			return r;
	}
	return s->bk ? mrc__step_bulk_poll(s->bk) : 0;
}

static int poll_cb(void *arg)
{
	return progress(arg);
}

static int compute(struct st *s, double t_us)
{
	return mrc__step_stub(s->p, t_us, poll_cb, s);
}

/* Waits for q while moving the other communicator and the background on:
 * with nothing else in flight, in mrc_coll_wait (which sleeps on mrcd's
 * completions); else testing every tick, and with stub=sleep sleeping
 * between (a rank spinning on tests takes the core mrcd needs to make the
 * progress it waits for: on 2 shared cores, 15x slower all-to-alls). */
static int await(struct st *s, struct mrc_coll_req *q)
{
	double t0 = mrc__mono_s();
	int r;
	while ((r = mrc_coll_test(q)) == -EINPROGRESS) {
		if (s->head == s->nq && !s->bk) {
			r = mrc_coll_wait(q);
			break;
		}
		if ((r = progress(s)))
			break;
		if (s->p->sleep)
			mrc__step_stub(s->p, s->p->tick_us, NULL, NULL);
	}
	s->t_moe += mrc__mono_s() - t0;
	return r;
}

/* One pass of the MoE layer: dispatch, the expert (identity, t_us of
 * stub), combine. */
static int moe(struct st *s, double t_us)
{
	struct mrc_coll_moe_plan *plan = NULL;
	struct mrc_coll_req *q;
	void *ein;
	int r = mrc_coll_moe_idispatch_kept(s->c, &s->mc, s->p->tokens, s->idx, s->w, s->x, &plan,
					    &ein, s->counts, &q);
	if (!r)
		r = await(s, q);
	if (r)
		return r;
	struct mrc__coll_moe_stats st;
	mrc__coll_moe_stats(plan, &st);
	s->tokens += s->p->tokens * s->p->topk;
	s->dropped += s->p->tokens * s->p->topk - st.pairs;
	r = compute(s, t_us);
	if (!r)
		r = mrc_coll_moe_icombine(s->c, plan, ein, s->y, &q);
	if (!r)
		r = await(s, q);
	mrc_coll_moe_plan_free(plan);
	return r;
}

static int bucket(struct st *s, size_t b, int overlap)
{
	size_t blk = s->cnt[b] / s->n;
	if (!overlap) {
		int r = mrc_coll_reduce_scatter(s->g, s->gb[b], s->t[b], blk, MRC_COLL_FLOAT32,
						MRC_COLL_SUM);
		return r ? r : mrc_coll_allgather(s->g, s->t[b], s->gb[b], blk, MRC_COLL_FLOAT32);
	}
	int r = mrc_coll_ireduce_scatter(s->g, s->gb[b], s->t[b], blk, MRC_COLL_FLOAT32,
					 MRC_COLL_SUM, &s->q[s->nq]);
	if (r)
		return r;
	s->nq++;
	r = mrc_coll_iallgather(s->g, s->t[b], s->gb[b], blk, MRC_COLL_FLOAT32, &s->q[s->nq]);
	if (!r)
		s->nq++;
	return r;
}

/* One step in mode m: its time, and of it the staging, the waits on the
 * MoE's calls and on the buckets at the end (t[STEP_C_*], seconds). */
static int step(struct st *s, int m, uint64_t stepno, double *t)
{
	const struct step_par *p = s->p;
	for (size_t b = 0; b < s->nb; b++)
		mrc__coll_fill(MRC__C_ALLREDUCE, s->gb[b], s->n, s->me, s->cnt[b], MRC_COLL_FLOAT32,
			       MRC_COLL_SUM, 0);
	if (p->moe != UINT32_MAX)
		mrc__step_route(p, s->n, s->me, stepno, s->idx, s->w);
	if (p->bulk && s->bk)
		mrc__step_bulk_add(s->bk, p->bulk);
	int r = mrc_coll_barrier(s->c);
	s->nq = s->head = 0;
	double t0 = mrc__mono_s();
	s->t_moe = 0;
	if (!r && p->stage)
		r = mrc__step_stage_read(p, &s->sg);
	t[STEP_C_STAGE] = mrc__mono_s() - t0;
	for (uint32_t l = 0; l < p->layers && !r; l++) {
		r = compute(s, p->fwd_us);
		if (!r && l == p->moe)
			r = moe(s, p->fwd_us);
	}
	for (uint32_t l = p->layers, b = 0; l-- > 0 && !r;) {
		if (l == p->moe)
			r = moe(s, p->bwd_us);
		if (!r)
			r = compute(s, p->bwd_us);
		for (; !r && b < s->nb && s->close_at[b] == l; b++)
			r = bucket(s, b, m == STEP_OVERLAP);
	}
	double t1 = mrc__mono_s();
	if (s->nq) {
		int w = mrc_coll_waitall(s->q + s->head, s->nq - s->head);
		r = r ? r : w;
	}
	t[STEP_C_STEP] = mrc__mono_s() - t0;
	t[STEP_C_TAIL] = t0 + t[STEP_C_STEP] - t1;
	t[STEP_C_MOE] = s->t_moe;
	for (size_t b = 0; b < s->nb && !r; b++)
		s->wrong += (int64_t)mrc__coll_wrong(MRC__C_ALLREDUCE, s->gb[b], s->n, s->me, s->cnt[b],
						     MRC_COLL_FLOAT32, MRC_COLL_SUM, 0);
	return r;
}

static int buckets(struct st *s)
{
	const struct step_par *p = s->p;
	s->cnt = calloc(p->layers, sizeof(*s->cnt));
	s->close_at = calloc(p->layers, sizeof(*s->close_at));
	if (!s->cnt || !s->close_at)
		return -ENOMEM;
	s->nb = mrc__step_buckets(p, s->n, s->cnt, s->close_at);
	s->gb = calloc(s->nb + 1, sizeof(*s->gb));
	s->t = calloc(s->nb + 1, sizeof(*s->t));
	s->q = calloc(2 * s->nb + 1, sizeof(*s->q));
	if (!s->gb || !s->t || !s->q)
		return -ENOMEM;
	for (size_t b = 0; b < s->nb; b++)
		if (!(s->gb[b] = malloc(s->cnt[b] * 4)) || !(s->t[b] = malloc(s->cnt[b] / s->n * 4 + 4)))
			return -ENOMEM;
	uint32_t want = (uint32_t)(2 * s->nb + 2);
	return want > MRC_COLL_INFLIGHT_DEFAULT ? mrc_coll_set_max_inflight(s->g, want) : 0;
}

static int setup(struct st *s)
{
	const struct step_par *p = s->p;
	int r = buckets(s);
	if (!r && p->moe != UINT32_MAX) {
		uint32_t L = p->local > 1 && p->local < s->n && s->n % p->local == 0 ? p->local : 0;
		s->mc = (struct mrc_coll_moe_cfg){ .n_experts = s->n, .top_k = p->topk,
			.hidden = p->tok / 2, .dtype = MRC_COLL_BFLOAT16, .capacity_factor = p->cap,
			.local_ranks = L };
		if (p->topk > s->n || s->n > MRC_STEP_MAX_RANKS)
			return -EINVAL;
		s->idx = calloc(p->tokens * p->topk + 1, sizeof(*s->idx));
		s->w = calloc(p->tokens * p->topk + 1, sizeof(*s->w));
		s->x = calloc(p->tokens * s->mc.hidden + 1, 2);
		s->y = calloc(p->tokens * s->mc.hidden + 1, 2);
		s->counts = calloc(s->n, sizeof(*s->counts));
		if (!s->idx || !s->w || !s->x || !s->y || !s->counts)
			return -ENOMEM;
		for (size_t i = 0; i < p->tokens * s->mc.hidden; i++)
			s->x[i] = 0x3f80;   /* bfloat16 1.0 */
	}
	if (!r)
		r = mrc__step_stage_open(p, &s->sg);
	return r;
}

static void teardown(struct st *s)
{
	for (size_t b = 0; s->gb && b < s->nb; b++)
		free(s->gb[b]), free(s->t[b]);
	free(s->gb), free(s->t), free(s->q), free(s->cnt), free(s->close_at);
	free(s->idx), free(s->w), free(s->x), free(s->y), free(s->counts);
	mrc__step_stage_close(&s->sg);
}

int mrc__step_run(struct mrc_coll *c, struct mrc_coll *g, struct step_bulk *bk,
		  const struct step_par *p, struct step_report *rep)
{
	struct st s = { .c = c, .g = g, .bk = bk, .p = p, .n = mrc_coll_size(c),
			.me = mrc_coll_rank(c), .sg = { .fd = -1 } };
	size_t per = (size_t)p->runs * p->steps * STEP_NMODES;
	double *col = calloc(per * STEP_NCOLS, sizeof(*col));
	int r = col ? setup(&s) : -ENOMEM;
	uint64_t stepno = 0;
	/* The modes in turn, step by step, so that a drift of the machine over
	 * the run touches each alike. */
	for (uint32_t run = 0; run < p->runs && !r; run++)
		for (int64_t i = -(int64_t)p->warm; i < p->steps && !r; i++) {
			if (i == p->fault_step && p->fault_file && run == 0)
				r = mrc__step_fault_wait(p, s.me, run);
			for (int m = 0; m < STEP_NMODES && !r; m++) {
				if (!(p->modes >> m & 1))
					continue;
				double t[STEP_NCOLS];
				r = step(&s, m, stepno++, t);
				size_t k = ((size_t)run * STEP_NMODES + m) * p->steps + (size_t)i;
				for (int j = 0; j < STEP_NCOLS && !r && i >= 0; j++)
					col[j * per + k] = t[j];
			}
		}
	rep->tokens = s.tokens, rep->dropped = s.dropped, rep->wrong = s.wrong;
	if (!r)
		r = mrc__step_collect(c, p, col, rep);
	free(col);
	teardown(&s);
	return r;
}

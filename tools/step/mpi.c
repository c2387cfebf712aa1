/* mrc-step's Open MPI twin (bench/mpi_step; docs/step.md "Open MPI"): the
 * same step (tools/step/work.c: stubs, routing, buckets, staging) over
 * Open MPI's non-blocking collectives, for the comparison row of
 * bench/fabric/step.sh.  Per bucket MPI_Ireduce_scatter_block, then, when
 * it completes, MPI_Iallgather on a communicator of its own (MPI orders
 * collectives by their start, and the all-gathers start as the
 * reduce-scatters end: their own communicator keeps every rank's order
 * the same); the MoE layer is a flat MPI_Ialltoall of counts and
 * MPI_Ialltoallv of the kept rows (Open MPI has no 2-D all-to-all), with
 * the library's capacity rule, and the combine the way back.  Blocking:
 * the blocking calls.  The report is mrc-step's (print.c).  No background
 * traffic (bulk= is refused). */
#include <errno.h>
#include <math.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "coll/coll_int.h"
#include "tools/step/step.h"

struct ms {
	const struct step_par *p;
	MPI_Comm c, g, ga;         /* MoE; reduce-scatters; all-gathers */
	int n, me;
	size_t nb, *cnt;
	uint32_t *close_at;
	float **gb, **t;
	MPI_Request *rs, *ag;      /* per bucket */
	size_t head, nstarted;     /* oldest bucket not all-gathered; started */
	int32_t *idx;
	float *w;
	uint8_t *x, *sb, *rb;      /* tokens; rows out; rows in */
	int *scnt, *sdsp, *rcnt, *rdsp;
	float *y;
	struct step_stage sg;
	uint64_t tokens, dropped;
	int64_t wrong;
	double t_moe;
};

/* The buckets' calls moved on in order: a reduce-scatter done starts its
 * all-gather; the oldest all-gather done retires the bucket. */
static int progress(void *arg)
{
	struct ms *s = arg;
	int done;
	for (size_t b = s->head; b < s->nstarted; b++) {
		if (s->rs[b] != MPI_REQUEST_NULL) {
			MPI_Test(&s->rs[b], &done, MPI_STATUS_IGNORE);
			if (!done)
				break;
			size_t blk = s->cnt[b] / (size_t)s->n;
			MPI_Iallgather(s->t[b], (int)blk, MPI_FLOAT, s->gb[b], (int)blk, MPI_FLOAT, s->ga,
				       &s->ag[b]);
		}
	}
	while (s->head < s->nstarted && s->rs[s->head] == MPI_REQUEST_NULL) {
		MPI_Test(&s->ag[s->head], &done, MPI_STATUS_IGNORE);
		if (!done)
			break;
		s->head++;
	}
	return 0;
}

/* Waits for q; with the buckets in flight (overlap), moving them on. */
static void await(struct ms *s, MPI_Request *q, int overlap)
{
	double t0 = mrc__mono_s();
	int done = 0;
	if (!overlap)
		MPI_Wait(q, MPI_STATUS_IGNORE);
	while (overlap && MPI_Test(q, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && !done) {
		progress(s);
		if (s->p->sleep)   /* as run.c's await: the CPU to the rest */
			mrc__step_stub(s->p, s->p->tick_us, NULL, NULL);
	}
	s->t_moe += mrc__mono_s() - t0;
}

static float bf16(const uint8_t *p)
{
	uint32_t u = (uint32_t)(p[0] | p[1] << 8) << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

/* One pass of the MoE layer: the kept (token, expert) pairs' rows to the
 * experts' ranks (first choices first, each sender giving each expert at
 * most cap, as libmrc-coll), the expert's stub, the rows back, summed
 * with their weights. */
static void moe(struct ms *s, double t_us, int overlap)
{
	const struct step_par *p = s->p;
	size_t T = p->tokens, K = p->topk, row = p->tok, kept = 0;
	size_t cap = p->cap > 0 ? (size_t)ceil(p->cap * (double)(T * K) / s->n) : SIZE_MAX;
	size_t *used = calloc((size_t)s->n, sizeof(*used));
	uint8_t *keep = calloc(T * K, 1);
	memset(s->scnt, 0, (size_t)s->n * sizeof(int));
	for (size_t k = 0; k < K; k++)
		for (size_t t = 0; t < T; t++) {
			int e = s->idx[t * K + k];
			if (used[e] < cap)
				used[e]++, keep[t * K + k] = 1, s->scnt[e] += (int)row, kept++;
		}
	for (int r = 0, o = 0; r < s->n; r++)
		s->sdsp[r] = o, o += s->scnt[r];
	memset(used, 0, (size_t)s->n * sizeof(*used));
	for (size_t k = 0; k < K; k++)
		for (size_t t = 0; t < T; t++)
			if (keep[t * K + k]) {
				int e = s->idx[t * K + k];
				memcpy(s->sb + s->sdsp[e] + used[e]++ * row, s->x + t * row, row);
			}
	MPI_Request q;
	MPI_Ialltoall(s->scnt, 1, MPI_INT, s->rcnt, 1, MPI_INT, s->c, &q);
	await(s, &q, overlap);
	for (int r = 0, o = 0; r < s->n; r++)
		s->rdsp[r] = o, o += s->rcnt[r];
	MPI_Ialltoallv(s->sb, s->scnt, s->sdsp, MPI_BYTE, s->rb, s->rcnt, s->rdsp, MPI_BYTE, s->c, &q);
	await(s, &q, overlap);
	mrc__step_stub(p, t_us, overlap ? progress : NULL, s);
	/* The expert is the identity: its rows go back as they came. */
	MPI_Ialltoallv(s->rb, s->rcnt, s->rdsp, MPI_BYTE, s->sb, s->scnt, s->sdsp, MPI_BYTE, s->c, &q);
	await(s, &q, overlap);
	memset(s->y, 0, T * (row / 2) * sizeof(float));
	memset(used, 0, (size_t)s->n * sizeof(*used));
	for (size_t k = 0; k < K; k++)
		for (size_t t = 0; t < T; t++)
			if (keep[t * K + k]) {
				int e = s->idx[t * K + k];
				const uint8_t *src = s->sb + s->sdsp[e] + used[e]++ * row;
				for (size_t h = 0; h < row / 2; h++)
					s->y[t * (row / 2) + h] += s->w[t * K + k] * bf16(src + 2 * h);
			}
	s->tokens += T * K, s->dropped += T * K - kept;
	free(used), free(keep);
}

static void bucket(struct ms *s, size_t b, int overlap)
{
	int blk = (int)(s->cnt[b] / (size_t)s->n);
	if (!overlap) {
		MPI_Reduce_scatter_block(s->gb[b], s->t[b], blk, MPI_FLOAT, MPI_SUM, s->g);
		MPI_Allgather(s->t[b], blk, MPI_FLOAT, s->gb[b], blk, MPI_FLOAT, s->ga);
		return;
	}
	MPI_Ireduce_scatter_block(s->gb[b], s->t[b], blk, MPI_FLOAT, MPI_SUM, s->g, &s->rs[b]);
	s->nstarted = b + 1;
}

static void step(struct ms *s, int m, uint64_t stepno, double *t)
{
	const struct step_par *p = s->p;
	int ov = m == STEP_OVERLAP;
	for (size_t b = 0; b < s->nb; b++)
		mrc__coll_fill(MRC__C_ALLREDUCE, s->gb[b], (uint32_t)s->n, (uint32_t)s->me, s->cnt[b],
			       MRC_COLL_FLOAT32, MRC_COLL_SUM, 0);
	if (p->moe != UINT32_MAX)
		mrc__step_route(p, (uint32_t)s->n, (uint32_t)s->me, stepno, s->idx, s->w);
	MPI_Barrier(s->c);
	s->head = s->nstarted = 0, s->t_moe = 0;
	double t0 = mrc__mono_s();
	if (p->stage)
		mrc__step_stage_read(p, &s->sg);
	t[STEP_C_STAGE] = mrc__mono_s() - t0;
	for (uint32_t l = 0; l < p->layers; l++) {
		mrc__step_stub(p, p->fwd_us, ov ? progress : NULL, s);
		if (l == p->moe)
			moe(s, p->fwd_us, ov);
	}
	for (uint32_t l = p->layers, b = 0; l-- > 0;) {
		if (l == p->moe)
			moe(s, p->bwd_us, ov);
		mrc__step_stub(p, p->bwd_us, ov ? progress : NULL, s);
		for (; b < s->nb && s->close_at[b] == l; b++)
			bucket(s, b, ov);
	}
	double t1 = mrc__mono_s();
	while (s->head < s->nstarted)
		progress(s);
	t[STEP_C_STEP] = mrc__mono_s() - t0;
	t[STEP_C_TAIL] = t0 + t[STEP_C_STEP] - t1;
	t[STEP_C_MOE] = s->t_moe;
	for (size_t b = 0; b < s->nb; b++)
		s->wrong += (int64_t)mrc__coll_wrong(MRC__C_ALLREDUCE, s->gb[b], (uint32_t)s->n,
						     (uint32_t)s->me, s->cnt[b], MRC_COLL_FLOAT32,
						     MRC_COLL_SUM, 0);
}

static int setup(struct ms *s)
{
	const struct step_par *p = s->p;
	size_t L = p->layers, T = p->tokens, K = p->topk, n = (size_t)s->n;
	s->cnt = calloc(L, sizeof(*s->cnt));
	s->close_at = calloc(L, sizeof(*s->close_at));
	if (!s->cnt || !s->close_at)
		return -ENOMEM;
	s->nb = mrc__step_buckets(p, (uint32_t)s->n, s->cnt, s->close_at);
	s->gb = calloc(s->nb + 1, sizeof(*s->gb)), s->t = calloc(s->nb + 1, sizeof(*s->t));
	s->rs = calloc(s->nb + 1, sizeof(*s->rs)), s->ag = calloc(s->nb + 1, sizeof(*s->ag));
	if (!s->gb || !s->t || !s->rs || !s->ag)
		return -ENOMEM;
	for (size_t b = 0; b < s->nb; b++) {
		s->rs[b] = s->ag[b] = MPI_REQUEST_NULL;
		if (!(s->gb[b] = malloc(s->cnt[b] * 4)) || !(s->t[b] = malloc(s->cnt[b] / n * 4 + 4)))
			return -ENOMEM;
	}
	if (p->topk > n || n > MRC_STEP_MAX_RANKS)
		return -EINVAL;
	s->idx = calloc(T * K + 1, sizeof(*s->idx)), s->w = calloc(T * K + 1, sizeof(*s->w));
	s->x = calloc(T * p->tok + 1, 1), s->y = calloc(T * p->tok / 2 + 1, sizeof(float));
	/* A rank may receive every rank's T x K rows. */
	s->sb = malloc(T * K * p->tok + 1), s->rb = malloc(n * T * K * p->tok + 1);
	s->scnt = calloc(n, sizeof(int)), s->sdsp = calloc(n, sizeof(int));
	s->rcnt = calloc(n, sizeof(int)), s->rdsp = calloc(n, sizeof(int));
	if (!s->idx || !s->w || !s->x || !s->y || !s->sb || !s->rb || !s->scnt || !s->sdsp ||
	    !s->rcnt || !s->rdsp)
		return -ENOMEM;
	if (n * T * K * p->tok > INT32_MAX)
		return -E2BIG;   /* MPI's int counts */
	return mrc__step_stage_open(p, &s->sg);
}

int main(int argc, char **argv)
{
	struct step_par p;
	struct step_cli cli = { 0 };
	struct ms s = { .p = &p, .sg = { .fd = -1 } };
	MPI_Init(&argc, &argv);
	mrc__step_defaults(&p);
	if (mrc__step_parse(argc, argv, &p, &cli, stderr) || p.bulk) {
		if (p.bulk)
			fprintf(stderr, "mpi_step: no background traffic (bulk=)\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	p.local = 0;   /* flat: the report says so */
	s.c = MPI_COMM_WORLD;
	MPI_Comm_dup(s.c, &s.g);
	MPI_Comm_dup(s.c, &s.ga);
	MPI_Comm_size(s.c, &s.n);
	MPI_Comm_rank(s.c, &s.me);
	int r = setup(&s);
	if (r) {
		fprintf(stderr, "mpi_step: setup: %s\n", strerror(-r));
		MPI_Abort(s.c, 1);
	}
	size_t per = (size_t)p.runs * p.steps * STEP_NMODES;
	double *col = calloc(per * STEP_NCOLS, sizeof(*col));
	uint64_t stepno = 0;
	for (uint32_t run = 0; run < p.runs; run++)
		for (int64_t i = -(int64_t)p.warm; i < p.steps; i++) {
			if (i == p.fault_step && p.fault_file && run == 0 &&
			    mrc__step_fault_wait(&p, (uint32_t)s.me, run))
				MPI_Abort(s.c, 1);
			for (int m = 0; m < STEP_NMODES; m++) {
				if (!(p.modes >> m & 1))
					continue;
				double t[STEP_NCOLS];
				step(&s, m, stepno++, t);
				size_t k = ((size_t)run * STEP_NMODES + m) * p.steps + (size_t)i;
				for (int j = 0; j < STEP_NCOLS && i >= 0; j++)
					col[j * per + k] = t[j];
			}
		}
	MPI_Allreduce(MPI_IN_PLACE, col, (int)(per * STEP_NCOLS), MPI_DOUBLE, MPI_MAX, s.c);
	int64_t v[3] = { (int64_t)s.tokens, (int64_t)s.dropped, s.wrong };
	MPI_Allreduce(MPI_IN_PLACE, v, 3, MPI_INT64_T, MPI_SUM, s.c);
	struct step_report rep = { .ranks = (uint32_t)s.n, .tokens = (uint64_t)v[0],
				   .dropped = (uint64_t)v[1], .wrong = v[2] };
	mrc__step_figures(&p, col, &rep);
	if (s.me == 0) {
		mrc__step_print(&p, &rep, stdout);
		fflush(stdout);
	}
	MPI_Finalize();
	return rep.wrong ? 1 : 0;
}

/* Pre-gated MoE dispatch (include/mrc/coll.h; docs/coll.md "Pre-gated
 * dispatch"): the rows per rank, their exchange and the buffers from a
 * predicted routing ahead of time, so that the dispatch of the actual
 * routing moves data only; rows past the prediction go in a correction
 * exchange.  With local_ranks (1 < L < n) the main exchange is the 2-D
 * all-to-allv (coll/a2a2d.c), its counts gathered by the pre-gate.  The
 * expert fetch is coll/pregate_fetch.c. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "coll/coll_int.h"
#include "coll/moe_int.h"
#include "coll/pregate_hdr.h"

struct mrc_coll_moe_pregate {
	struct mrc_coll_moe_cfg cfg;
	size_t T;
	int32_t *idx;              /* the predicted routing, copied at the start */
	uint32_t n;
	int err;                   /* -EINPROGRESS until it ran */
	size_t *psc, *prc;         /* [n] each: predicted rows to, and from, each rank */
	unsigned slack;            /* % of rows added to each prediction (MRC_COLL_PREGATE_SLACK) */
	uint32_t L;                /* 2-D: ranks per node (1 < L < n); 0: flat */
	int64_t *M;                /* 2-D: [s * n + d] rows s sends d in the main exchange */
};

void mrc_coll_moe_pregate_free(struct mrc_coll_moe_pregate *pg)
{
	if (!pg)
		return;
	free(pg->idx), free(pg->psc), free(pg->M), free(pg);
}

int mrc_coll_moe_pregate_rows(const struct mrc_coll_moe_pregate *pg, size_t *rows_to)
{
	if (!pg || !rows_to || pg->err)
		return -EINVAL;
	memcpy(rows_to, pg->psc, pg->n * sizeof(*rows_to));
	return 0;
}

static size_t stride_bytes(const struct mrc_coll_moe_cfg *cfg)
{
	return cfg->hidden * mrc_coll_dtype_size(cfg->dtype) + cfg->top_k * sizeof(struct moe_meta);
}

/* 2-D: every rank's predicted rows to every rank (the 2-D all-to-allv's
 * intermediate layouts follow from them: its count exchange, done now),
 * and from them ours from each rank. */
static int pregate_gather(struct mrc_coll *c, struct mrc_coll_moe_pregate *pg, size_t strideb,
			  size_t *total)
{
	uint32_t n = c->n;
	int64_t *mine = malloc(n * sizeof(*mine));
	pg->M = malloc((size_t)n * n * sizeof(*pg->M));
	if (!mine || !pg->M) {
		free(mine);
		return -ENOMEM;
	}
	for (uint32_t j = 0; j < n; j++)
		mine[j] = (int64_t)pg->psc[j];
	int r = mrc_coll_allgather(c, mine, pg->M, n, MRC_COLL_INT64);
	free(mine);
	if (!r)
		r = mrc__coll_pregate_counts(n, c->me, pg->M, strideb, pg->prc);
	*total = 0;
	for (uint32_t s = 0; !r && s < n; s++)
		*total += pg->prc[s];
	return r;
}

static int pregate_body(struct mrc_coll *c, void *arg)
{
	struct mrc_coll_moe_pregate *pg = *(struct mrc_coll_moe_pregate **)arg;
	const struct mrc_coll_moe_cfg *cfg = &pg->cfg;
	uint32_t n = c->n;
	size_t rowb = cfg->hidden * mrc_coll_dtype_size(cfg->dtype), strideb = stride_bytes(cfg);
	struct mrc_coll_moe_plan *p = mrc__coll_moe_plan_new(c, cfg, pg->T, 0, rowb,
							     strideb - rowb);
	int64_t *pos = malloc((pg->T * cfg->top_k + 1) * sizeof(*pos));
	int64_t *cnt = malloc(2 * (size_t)n * sizeof(*cnt));
	size_t total = 0, sent = 0;
	int r = -ENOMEM;
	if (p && pos && cnt && !(r = mrc__coll_moe_count_rows(p, pg->idx, 0, pos))) {
		/* Slack: room in the main exchange for rows a misprediction
		 * adds, so that a small one needs no correction exchange. */
		for (uint32_t j = 0; j < n; j++) {
			pg->psc[j] = p->sc[j] + (p->sc[j] * pg->slack + 99) / 100;
			sent += pg->psc[j];
		}
		r = pg->L ? pregate_gather(c, pg, strideb, &total)
			  : mrc__coll_moe_counts(c, n, pg->psc, pg->prc, p->rd, &total, cnt);
	}
	/* The buffers the dispatch will use, sized now (a header row per
	 * rank); a dispatch sending more grows them then. */
	if (!r && (!mrc__coll_scratch(c, MRC__SCR_SEND, (sent + n) * strideb + 1) ||
		   !mrc__coll_scratch(c, MRC__SCR_RECV, (total + n) * strideb + 1)))
		r = -ENOMEM;
	mrc_coll_moe_plan_free(p);
	free(pos), free(cnt);
	pg->err = r;
	return r;
}

static int pregate_start(struct mrc_coll *c, const struct mrc_coll_moe_cfg *cfg, size_t T,
			 const int32_t *idx, struct mrc_coll_moe_pregate **pgp,
			 struct mrc_coll_req **req)
{
	if (!c || !cfg || !pgp || (T && !idx) || !cfg->top_k || !cfg->n_experts ||
	    cfg->n_experts % c->n || !cfg->hidden || !mrc_coll_dtype_size(cfg->dtype) ||
	    (cfg->local_ranks && c->n % cfg->local_ranks))
		return -EINVAL;
	if (T > UINT32_MAX / cfg->top_k)   /* a header's counts are 32 bits */
		return -EINVAL;
	for (size_t i = 0; i < T * cfg->top_k; i++)
		if (idx[i] >= (int32_t)cfg->n_experts)
			return -EINVAL;
	struct mrc_coll_moe_pregate *pg = calloc(1, sizeof(*pg));
	if (!pg)
		return -ENOMEM;
	*pg = (struct mrc_coll_moe_pregate){ .cfg = *cfg, .T = T, .n = c->n, .err = -EINPROGRESS };
	/* 1 or n: one node, the flat exchange (both ways); else 2-D rows per
	 * rank (plan->L2d), the combine's way back 2-D too. */
	pg->L = cfg->local_ranks > 1 && cfg->local_ranks < c->n ? cfg->local_ranks : 0;
	pg->cfg.local_ranks = pg->L;
	pg->idx = malloc((T * cfg->top_k + 1) * sizeof(*pg->idx));
	pg->psc = calloc(2 * (size_t)c->n, sizeof(*pg->psc));
	if (!pg->idx || !pg->psc) {
		mrc_coll_moe_pregate_free(pg);
		return -ENOMEM;
	}
	memcpy(pg->idx, idx, T * cfg->top_k * sizeof(*idx));
	pg->prc = pg->psc + c->n;
	const char *e = getenv("MRC_COLL_PREGATE_SLACK");
	unsigned long sl = e ? strtoul(e, NULL, 10) : 0;
	pg->slack = sl > 1000 ? 1000 : (unsigned)sl;   /* at most 10x the rows */
	int r = mrc__coll_submit_body(c, pregate_body, &pg, sizeof(pg), req);
	if (r) {   /* not started, or (blocking) failed */
		mrc_coll_moe_pregate_free(pg);
		return r;
	}
	*pgp = pg;
	return 0;
}

int mrc_coll_moe_pregate(struct mrc_coll *c, const struct mrc_coll_moe_cfg *cfg, size_t T,
			 const int32_t *idx, struct mrc_coll_moe_pregate **pg)
{
	return pregate_start(c, cfg, T, idx, pg, NULL);
}

int mrc_coll_moe_ipregate(struct mrc_coll *c, const struct mrc_coll_moe_cfg *cfg, size_t T,
			  const int32_t *idx, struct mrc_coll_moe_pregate **pg,
			  struct mrc_coll_req **req)
{
	if (!req)
		return -EINVAL;
	*req = NULL;
	return pregate_start(c, cfg, T, idx, pg, req);
}

/* An all-to-allv of rows of `stride` elements, v in rows: [0,n) send
 * counts, [n,2n) send displacements, then the receive counts and
 * displacements; flat (pg NULL or not 2-D: its time added to *t), or
 * the pre-gate's 2-D (its phases to t[MRC__MOE_PH_*]). */
static int rows_a2av(struct mrc_coll *c, const struct mrc_coll_moe_pregate *pg, int dtype,
		     size_t stride, const void *sb, void *rb, const size_t *v, double *t)
{
	uint32_t n = c->n;
	size_t *e = malloc(4 * (size_t)n * sizeof(*e));
	if (!e)
		return -ENOMEM;
	for (uint32_t i = 0; i < 4 * n; i++)
		e[i] = v[i] * stride;
	double t0 = mrc__mono_s();
	int r = pg && pg->L ? mrc__coll_a2a2d_exec(c, pg->L, pg->M, stride, sb, e, e + n, rb,
						   e + 2 * n, e + 3 * n, dtype, t)
			    : mrc_coll_alltoallv(c, sb, e, e + n, rb, e + 2 * n, e + 3 * n, dtype);
	if (!(pg && pg->L))
		mrc__coll_lap(t, &t0);
	free(e);
	return r;
}

/* A pre-gated dispatch's state: the plan being built and its exchanges'
 * counts (main and correction, each 4n as rows_a2av's). */
struct pgd {
	struct mrc_coll_moe_pregate *pg;
	struct mrc_coll_moe_plan *p;
	size_t strideb, rowb, esz;
	size_t *m, *x;             /* main exchange, correction exchange */
	uint8_t *sbuf, *rbuf, *cbuf;
};

/* Packs the actual rows: rank j's block is a header row, then its rows
 * (as many as predicted in the main exchange, padded; the rest after
 * them for the correction exchange). */
static int pgd_pack(struct mrc_coll *c, struct pgd *d, const int32_t *idx, const float *w,
		    const void *tokens, int64_t *pos)
{
	struct mrc_coll_moe_plan *p = d->p;
	uint32_t n = c->n;
	size_t *shift = calloc(4 * (size_t)n, sizeof(*shift)), rows = 0;
	int r = -ENOMEM;
	if (!shift || (r = mrc__coll_moe_count_rows(p, idx, 0, pos)))
		goto out;
	for (uint32_t j = 0; j < n; j++) {
		size_t ps = d->pg->psc[j], sc = p->sc[j];
		shift[j] = rows + 1 - p->sd[j];
		d->m[j] = 1 + ps, d->m[n + j] = rows;
		d->x[j] = sc > ps ? sc - ps : 0, d->x[n + j] = rows + 1 + ps;
		rows += 1 + (sc > ps ? sc : ps);
		p->st.rows_extra += d->x[j], p->st.rows_pad += ps > sc ? ps - sc : 0;
	}
	r = -ENOMEM;
	d->sbuf = mrc__coll_scratch(c, MRC__SCR_SEND, rows * d->strideb + 1);
	if (!d->sbuf ||
	    (r = mrc__coll_moe_pack(p, idx, w, tokens, 0, pos, shift + n, d->rowb, d->strideb,
				    d->sbuf, shift)))
		goto out;
	for (uint32_t j = 0; j < n; j++) {
		size_t ps = d->pg->psc[j], sc = p->sc[j];
		struct mrc__pg_hdr h = { .valid = sc < ps ? sc : ps, .extra = d->x[j] };
		memcpy(d->sbuf + d->m[n + j] * d->strideb, &h, sizeof(h));
	}
out:
	free(shift);
	return r;
}

/* The main exchange, its headers read (the actual rows per source into
 * p->rc, p->rd), then the correction exchange when any rank has rows
 * past its prediction for us or we for it. */
static int pgd_exchange(struct mrc_coll *c, struct pgd *d)
{
	struct mrc_coll_moe_plan *p = d->p;
	uint32_t n = c->n;
	size_t stride = d->strideb / d->esz, in = 0, out = 0;
	for (uint32_t s = 0; s < n; s++)
		d->m[2 * n + s] = 1 + d->pg->prc[s];
	mrc__coll_prefix(d->m + 2 * n, d->m + 3 * n, n);
	size_t mrows = d->m[3 * n + n - 1] + d->m[2 * n + n - 1];
	d->rbuf = mrc__coll_scratch(c, MRC__SCR_RECV, mrows * d->strideb + 1);
	if (!d->rbuf)
		return -ENOMEM;
	int r = rows_a2av(c, d->pg, p->cfg.dtype, stride, d->sbuf, d->rbuf, d->m,
			  d->pg->L ? p->st.t_disp : &p->st.t_disp[MRC__MOE_PH_1]);
	if (r)
		return r;
	if ((r = mrc__coll_pregate_hdrs(n, d->rbuf, mrows * d->strideb, d->strideb, d->pg->prc,
					d->m + 3 * n, p->rc, d->x + 2 * n)))
		return r;
	for (uint32_t s = 0; s < n; s++)
		in += d->x[2 * n + s], out += d->x[s];
	mrc__coll_prefix(p->rc, p->rd, n);
	mrc__coll_prefix(d->x + 2 * n, d->x + 3 * n, n);
	p->n_recv = p->rd[n - 1] + p->rc[n - 1];
	if (!in && !out)   /* nothing to correct between us and anyone: no messages */
		return 0;
	d->cbuf = mrc__coll_scratch(c, MRC__SCR_OUT, in * d->strideb + 1);
	if (!d->cbuf)
		return -ENOMEM;
	/* Flat even in 2-D: the few rows past the prediction, straight. */
	return rows_a2av(c, NULL, p->cfg.dtype, stride, d->sbuf, d->cbuf, d->x, &p->st.t_corr);
}

/* Where each received row is, in the order a plain dispatch receives
 * them: per source its real rows of the main exchange, then its
 * correction rows. */
static const uint8_t **pgd_rows(const struct pgd *d, uint32_t n)
{
	const struct mrc_coll_moe_plan *p = d->p;
	const uint8_t **rows = malloc((p->n_recv + 1) * sizeof(*rows));
	if (!rows)
		return NULL;
	size_t j = 0;
	for (uint32_t s = 0; s < n; s++) {
		size_t extra = d->x[2 * n + s], valid = p->rc[s] - extra;
		for (size_t i = 0; i < valid; i++)
			rows[j++] = d->rbuf + (d->m[3 * n + s] + 1 + i) * d->strideb;
		for (size_t i = 0; i < extra; i++)
			rows[j++] = d->cbuf + (d->x[3 * n + s] + i) * d->strideb;
	}
	return rows;
}

struct pgd_args {
	struct mrc_coll_moe_pregate *pg;
	const int32_t *idx;
	const float *w;
	const void *tokens;
	struct mrc_coll_moe_plan **plan;
	void **expert_in;
	size_t *counts;
};

static int pgd_body(struct mrc_coll *c, void *arg)
{
	struct pgd_args *a = arg;
	struct mrc_coll_moe_pregate *pg = a->pg;
	if (pg->err)   /* it failed (the communicator with it), or never ran */
		return pg->err == -EINPROGRESS ? -EINVAL : pg->err;
	uint32_t n = c->n, K = pg->cfg.top_k;
	struct pgd d = { .pg = pg, .esz = mrc_coll_dtype_size(pg->cfg.dtype),
			 .strideb = stride_bytes(&pg->cfg) };
	d.rowb = pg->cfg.hidden * d.esz;
	double t0 = mrc__mono_s();
	d.p = mrc__coll_moe_plan_new(c, &pg->cfg, pg->T, 0, d.rowb, d.strideb - d.rowb);
	d.m = calloc(8 * (size_t)n, sizeof(*d.m));
	int64_t *pos = malloc((pg->T * K + 1) * sizeof(*pos));
	const uint8_t **rows = NULL;
	uint8_t *grouped = NULL;
	int r = -ENOMEM;
	if (!d.p || !d.m || !pos)
		goto fail;
	d.x = d.m + 4 * n;
	if ((r = pgd_pack(c, &d, a->idx, a->w, a->tokens, pos)))
		goto fail;
	mrc__coll_lap(&d.p->st.t_layout, &t0);
	if ((r = pgd_exchange(c, &d)))
		goto fail;
	mrc__coll_lap(NULL, &t0);
	d.p->st.rows_recv = d.p->n_recv;
	r = -ENOMEM;
	rows = pgd_rows(&d, n);
	grouped = mrc__coll_scratch(c, MRC__SCR_EIN, d.p->n_recv * K * d.rowb + 1);
	d.p->rpos = malloc((d.p->n_recv * K + 1) * sizeof(*d.p->rpos));
	d.p->rw = malloc((d.p->n_recv * K + 1) * sizeof(*d.p->rw));
	if (!rows || !grouped || !d.p->rpos || !d.p->rw ||
	    (r = mrc__coll_moe_expand(d.p, NULL, rows, d.strideb, d.rowb, NULL, grouped, a->counts)))
		goto fail;
	mrc__coll_lap(&d.p->st.t_expand, &t0);
	free(pos), free(d.m), free(rows);
	*a->expert_in = grouped;
	*a->plan = d.p;
	return 0;
fail:
	free(pos), free(d.m), free(rows);
	mrc_coll_moe_plan_free(d.p);
	return r;
}

static int pgd_start(struct mrc_coll *c, struct mrc_coll_moe_pregate *pg, const int32_t *idx,
		     const float *w, const void *tokens, struct mrc_coll_moe_plan **plan,
		     void **expert_in, size_t *counts, struct mrc_coll_req **req)
{
	if (!pg || !c || pg->n != c->n)
		return -EINVAL;
	int r = mrc__coll_moe_args(c, &pg->cfg, pg->T, idx, w, tokens, 0, plan, expert_in, counts);
	if (r)
		return r;
	struct pgd_args a = { .pg = pg, .idx = idx, .w = w, .tokens = tokens, .plan = plan,
			      .expert_in = expert_in, .counts = counts };
	return mrc__coll_submit_body(c, pgd_body, &a, sizeof(a), req);
}

int mrc_coll_moe_dispatch_pregated(struct mrc_coll *c, struct mrc_coll_moe_pregate *pg,
				   const int32_t *idx, const float *w, const void *tokens,
				   struct mrc_coll_moe_plan **plan, void **expert_in, size_t *counts)
{
	return pgd_start(c, pg, idx, w, tokens, plan, expert_in, counts, NULL);
}

int mrc_coll_moe_idispatch_pregated(struct mrc_coll *c, struct mrc_coll_moe_pregate *pg,
				    const int32_t *idx, const float *w, const void *tokens,
				    struct mrc_coll_moe_plan **plan, void **expert_in,
				    size_t *counts, struct mrc_coll_req **req)
{
	if (!req)
		return -EINVAL;
	*req = NULL;
	return pgd_start(c, pg, idx, w, tokens, plan, expert_in, counts, req);
}

/* MoE dispatch and combine over the communicator (include/mrc/coll.h;
 * the 2-D all-to-allv they may use: a2a2d.c). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "coll/coll_int.h"
#include "coll/moe_int.h"

/* ---- MoE ----------------------------------------------------------------- */


void mrc_coll_moe_plan_free(struct mrc_coll_moe_plan *p)
{
	if (!p)
		return;
	free(p->sc), free(p->bsc), free(p->fwd), free(p->tok), free(p->rpos), free(p->rw);
	free(p);
}

void mrc__coll_moe_stats(const struct mrc_coll_moe_plan *p, struct mrc__coll_moe_stats *s)
{
	*s = p->st;
}

size_t mrc__coll_moe_rows_across(const struct mrc_coll_moe_plan *p, uint32_t L)
{
	size_t a = 0;
	if (!L)
		return 0;
	for (uint32_t j = 0; j < p->n; j++)
		if (j / L != p->me / L)
			a += p->sc[j] + (p->bsc ? p->bsc[j] : 0);
	return a;
}

int mrc_coll_moe_layout(uint32_t nranks, uint32_t n_experts, uint32_t top_k, size_t n_tokens,
			const int32_t *topk_idx, uint32_t *tokens_per_rank,
			uint32_t *tokens_per_expert, uint8_t *in_rank)
{
	if (!nranks || !n_experts || n_experts % nranks || !top_k || (n_tokens && !topk_idx))
		return -EINVAL;
	uint32_t epr = n_experts / nranks;
	if (tokens_per_rank)
		memset(tokens_per_rank, 0, nranks * sizeof(*tokens_per_rank));
	if (tokens_per_expert)
		memset(tokens_per_expert, 0, n_experts * sizeof(*tokens_per_expert));
	uint8_t seen[nranks];
	for (size_t t = 0; t < n_tokens; t++) {
		memset(seen, 0, nranks);
		for (uint32_t k = 0; k < top_k; k++) {
			int32_t e = topk_idx[t * top_k + k];
			if (e < 0)
				continue;
			if ((uint32_t)e >= n_experts)
				return -EINVAL;
			if (tokens_per_expert)
				tokens_per_expert[e]++;
			seen[e / epr] = 1;
		}
		for (uint32_t r = 0; r < nranks; r++) {
			if (tokens_per_rank)
				tokens_per_rank[r] += seen[r];
			if (in_rank)
				in_rank[t * nranks + r] = seen[r];
		}
	}
	return 0;
}

/* Rows of `stride` elements (counts per rank) through the flat (L2d 0:
 * its time to ph[slot]) or the 2-D all-to-allv (its phases to ph). */
int mrc__coll_moe_a2av(struct mrc_coll *c, uint32_t L2d, int dtype, size_t stride, const void *sb,
		       const size_t *sc, void *rb, const size_t *rc, double *ph, int slot)
{
	uint32_t n = c->n;
	size_t *v = malloc(4 * (size_t)n * sizeof(*v));
	if (!v)
		return -ENOMEM;
	/* Rows to elements. */
	for (uint32_t j = 0; j < n; j++) {
		v[j] = sc[j] * stride;
		v[2 * n + j] = rc[j] * stride;
	}
	mrc__coll_prefix(v, v + n, n);
	mrc__coll_prefix(v + 2 * n, v + 3 * n, n);
	double t0 = mrc__mono_s();
	int r = L2d
		? mrc__coll_a2a2d_run(c, L2d, sb, v, v + n, rb, v + 2 * n, v + 3 * n, dtype, ph)
		: mrc_coll_alltoallv(c, sb, v, v + n, rb, v + 2 * n, v + 3 * n, dtype);
	if (!L2d)
		mrc__coll_lap(ph + slot, &t0);
	free(v);
	return r;
}

/* Capacity (the stated policy): pos[t*K + k] = the pair's slot at its
 * expert, or -1 when dropped or no expert.  Choice k of every token before
 * choice k+1 of any, in token order. */
static int capacity(const struct mrc_coll_moe_cfg *cfg, size_t T, const int32_t *idx, int64_t *pos)
{
	uint32_t E = cfg->n_experts, K = cfg->top_k;
	int64_t *cnt = calloc(E, sizeof(*cnt));
	if (!cnt)
		return -ENOMEM;
	uint64_t cap = cfg->capacity_factor > 0
		? (uint64_t)ceil(cfg->capacity_factor * (double)T * K / E) : UINT64_MAX;
	for (uint32_t k = 0; k < K; k++)
		for (size_t t = 0; t < T; t++) {
			int32_t e = idx[t * K + k];
			pos[t * K + k] = -1;
			if (e >= (int32_t)E) {
				free(cnt);
				return -EINVAL;
			}
			if (e >= 0 && (uint64_t)cnt[e] < cap)
				pos[t * K + k] = cnt[e]++;
		}
	free(cnt);
	return 0;
}

/* The expert a pair's row names at its first destination: the rank's
 * local index; with node dedupe the index among the node's experts. */
static int32_t pair_le(const struct mrc_coll_moe_plan *p, int32_t e)
{
	return (int32_t)((uint32_t)e % (p->L ? p->epr * p->L : p->epr));
}

/* Visits the rows token t sends: for each kept pair k, the row it joins
 * (its rank's, with node dedupe its node's, or its own with per_expert)
 * as fn(arg, t, k, dest, new row?); dest is the expert's rank, with node
 * dedupe that of the token's first kept pair on the node (on the sender's
 * node, the sender when it is one). */
static void token_rows(const struct mrc_coll_moe_plan *p, size_t t, const int32_t *idx,
		       const int64_t *pos, int per_expert,
		       void (*fn)(void *, size_t, uint32_t, uint32_t, int), void *arg)
{
	uint32_t K = p->cfg.top_k;
	for (uint32_t k = 0; k < K; k++) {
		if (pos[t * K + k] < 0)
			continue;
		uint32_t unit = p->L ? p->epr * p->L : p->epr, u = (uint32_t)idx[t * K + k] / unit;
		uint32_t r = (uint32_t)idx[t * K + k] / p->epr;
		int fresh = 1;
		for (uint32_t j = 0; j < k && !per_expert; j++)
			if (pos[t * K + j] >= 0 && (uint32_t)idx[t * K + j] / unit == u) {
				fresh = 0;
				r = (uint32_t)idx[t * K + j] / p->epr;
				break;
			}
		/* On its own node the sender is the proxy when it holds one of
		 * the experts: its copy stays, the others go as flat's would. */
		for (uint32_t j = 0; p->L && u == p->me / p->L && j < K; j++)
			if (pos[t * K + j] >= 0 && (uint32_t)idx[t * K + j] / p->epr == p->me)
				r = p->me;
		fn(arg, t, k, r, fresh);
	}
}

struct pack {
	struct mrc_coll_moe_plan *p;
	const int32_t *idx;
	const float *w;
	const uint8_t *tokens;
	uint8_t *sbuf;
	size_t *cur;               /* [n] next row per rank */
	size_t *at;                /* [n] row token t uses at each rank (valid after its fresh) */
	size_t *nmeta;             /* [n] entries filled in that row */
	const size_t *shift;       /* [n] rows before rank r's in sbuf past p->sd[r]; NULL: 0 */
	size_t rowb, strideb;
};

static void count_row(void *arg, size_t t, uint32_t k, uint32_t r, int fresh)
{
	struct mrc_coll_moe_plan *p = arg;
	(void)t, (void)k;
	p->sc[r] += (size_t)fresh;
}

static void pack_row(void *arg, size_t t, uint32_t k, uint32_t r, int fresh)
{
	struct pack *a = arg;
	struct mrc_coll_moe_plan *p = a->p;
	uint32_t K = p->cfg.top_k;
	if (fresh) {
		size_t i = a->cur[r]++;
		uint8_t *row = a->sbuf + (i + (a->shift ? a->shift[r] : 0)) * a->strideb;
		memcpy(row, a->tokens + t * a->rowb, a->rowb);
		struct moe_meta none = { .le = -1, .w = 0 };
		for (uint32_t j = 0; j < K; j++)
			memcpy(row + a->rowb + j * sizeof(none), &none, sizeof(none));
		if (p->L) {
			struct moe_src src = { .src = p->me, .tok = t };
			memcpy(row + a->rowb + K * sizeof(none), &src, sizeof(src));
		}
		p->tok[i] = (int64_t)t;
		a->at[r] = i, a->nmeta[r] = 0;
	}
	struct moe_meta m = { .le = pair_le(p, a->idx[t * K + k]), .w = a->w[t * K + k] };
	size_t at = a->at[r] + (a->shift ? a->shift[r] : 0);
	memcpy(a->sbuf + at * a->strideb + a->rowb + a->nmeta[r]++ * sizeof(m), &m, sizeof(m));
}

/* The receiver: expert_in grouped by local expert (by source rank, then
 * the source's row order: received rows visited in the order ord, or as
 * received when NULL), and where each received row's copies went.  Row j
 * is rows[j] when rows is given (pre-gated: in two buffers), else at
 * rbuf + j * strideb. */
#define RX_ROW(j) (rows ? rows[j] : rbuf + (j) * strideb)
int mrc__coll_moe_expand(struct mrc_coll_moe_plan *p, const uint8_t *rbuf,
			 const uint8_t *const *rows, size_t strideb, size_t rowb,
			 const size_t *ord, uint8_t *grouped, size_t *counts)
{
	uint32_t K = p->cfg.top_k, epr = p->epr;
	size_t start[epr + 1];
	memset(start, 0, sizeof(start));
	for (size_t j = 0; j < p->n_recv; j++)
		for (uint32_t k = 0; k < K; k++) {
			struct moe_meta m;
			memcpy(&m, RX_ROW(j) + rowb + k * sizeof(m), sizeof(m));
			if (m.le >= (int32_t)epr)
				return -EPROTO;
			if (m.le >= 0)
				start[m.le + 1]++;
		}
	for (uint32_t e = 0; e < epr; e++) {
		counts[e] = start[e + 1];
		start[e + 1] += start[e];
	}
	for (size_t q = 0; q < p->n_recv; q++)
		for (uint32_t k = 0; k < K; k++) {
			size_t j = ord ? ord[q] : q;
			struct moe_meta m;
			memcpy(&m, RX_ROW(j) + rowb + k * sizeof(m), sizeof(m));
			p->rpos[j * K + k] = -1;
			if (m.le < 0)
				continue;
			size_t at = start[m.le]++;
			p->rpos[j * K + k] = (int64_t)at;
			p->rw[j * K + k] = m.w;
			memcpy(grouped + at * rowb, RX_ROW(j), rowb);
		}
	return 0;
}
#undef RX_ROW


/* A dispatch's or a combine's arguments, for its body (req.c). */
struct moe_args {
	struct mrc_coll_moe_cfg cfg;
	size_t T;
	const int32_t *idx;
	const float *w;
	const void *tokens;
	int flags;
	struct mrc_coll_moe_plan **plan, *cplan;
	void **expert_in;
	size_t *counts;
	const void *expert_out;
	void *out;
};

static int dispatch_body(struct mrc_coll *c, void *arg)
{
	struct moe_args *a = arg;
	return mrc__coll_moe_dispatch_run(c, &a->cfg, a->T, a->idx, a->w, a->tokens, a->flags, a->plan,
				      a->expert_in, a->counts);
}

static int dispatch_start(struct mrc_coll *c, const struct mrc_coll_moe_cfg *cfg, size_t T,
			  const int32_t *idx, const float *w, const void *tokens, int flags,
			  struct mrc_coll_moe_plan **plan, void **expert_in, size_t *counts,
			  struct mrc_coll_req **req)
{
	if (!c || !cfg)
		return -EINVAL;
	struct moe_args a = { .cfg = *cfg, .T = T, .idx = idx, .w = w, .tokens = tokens,
			      .flags = flags, .plan = plan, .expert_in = expert_in,
			      .counts = counts };
	return mrc__coll_submit_body(c, dispatch_body, &a, sizeof(a), req);
}

int mrc_coll_moe_dispatch(struct mrc_coll *c, const struct mrc_coll_moe_cfg *cfg, size_t T,
			  const int32_t *idx, const float *w, const void *tokens,
			  struct mrc_coll_moe_plan **plan, void **expert_in, size_t *counts)
{
	return dispatch_start(c, cfg, T, idx, w, tokens, 0, plan, expert_in, counts, NULL);
}

int mrc_coll_moe_dispatch_kept(struct mrc_coll *c, const struct mrc_coll_moe_cfg *cfg, size_t T,
			       const int32_t *idx, const float *w, const void *tokens,
			       struct mrc_coll_moe_plan **plan, void **expert_in, size_t *counts)
{
	return dispatch_start(c, cfg, T, idx, w, tokens, MRC__MOE_KEPT, plan, expert_in, counts,
			      NULL);
}

int mrc_coll_moe_idispatch(struct mrc_coll *c, const struct mrc_coll_moe_cfg *cfg, size_t T,
			   const int32_t *idx, const float *w, const void *tokens,
			   struct mrc_coll_moe_plan **plan, void **expert_in, size_t *counts,
			   struct mrc_coll_req **req)
{
	if (!req)
		return -EINVAL;
	*req = NULL;
	return dispatch_start(c, cfg, T, idx, w, tokens, 0, plan, expert_in, counts, req);
}

int mrc_coll_moe_idispatch_kept(struct mrc_coll *c, const struct mrc_coll_moe_cfg *cfg, size_t T,
				const int32_t *idx, const float *w, const void *tokens,
				struct mrc_coll_moe_plan **plan, void **expert_in, size_t *counts,
				struct mrc_coll_req **req)
{
	if (!req)
		return -EINVAL;
	*req = NULL;
	return dispatch_start(c, cfg, T, idx, w, tokens, MRC__MOE_KEPT, plan, expert_in, counts,
			      req);
}

int mrc__coll_moe_args(const struct mrc_coll *c, const struct mrc_coll_moe_cfg *cfg, size_t T,
			 const int32_t *idx, const float *w, const void *tokens, int per_expert,
			 struct mrc_coll_moe_plan **plan, void **expert_in, size_t *counts)
{
	if (!c || !cfg || !plan || !expert_in || !counts || !cfg->top_k || !cfg->n_experts ||
	    cfg->n_experts % c->n || !cfg->hidden || (T && (!idx || !w || !tokens)) ||
	    (cfg->dtype != MRC_COLL_FLOAT32 && cfg->dtype != MRC_COLL_FLOAT16 &&
	     cfg->dtype != MRC_COLL_BFLOAT16) ||
	    (cfg->local_ranks && c->n % cfg->local_ranks) ||
	    (per_expert & ~(MRC__MOE_PER_EXPERT | MRC__MOE_RANK_2D | MRC__MOE_KEPT)))
		return -EINVAL;
	return c->err;
}

struct mrc_coll_moe_plan *mrc__coll_moe_plan_new(const struct mrc_coll *c,
					  const struct mrc_coll_moe_cfg *cfg, size_t T, int dedupe,
					  size_t rowb, size_t metab)
{
	uint32_t n = c->n, L = cfg->local_ranks;
	struct mrc_coll_moe_plan *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	*p = (struct mrc_coll_moe_plan){ .cfg = *cfg, .n = n, .me = c->me, .epr = cfg->n_experts / n,
					 .L = dedupe ? L : 0, .L2d = dedupe ? 0 : L, .T = T };
	p->st.row_bytes = rowb, p->st.meta_bytes = metab;
	p->sc = calloc(4 * (size_t)n, sizeof(size_t));
	p->bsc = dedupe ? calloc(4 * (size_t)n, sizeof(size_t)) : NULL;
	if (!p->sc || (dedupe && !p->bsc)) {
		mrc_coll_moe_plan_free(p);
		return NULL;
	}
	p->sd = p->sc + n, p->rc = p->sc + 2 * n, p->rd = p->sc + 3 * n;
	if (dedupe)
		p->bsd = p->bsc + n, p->brc = p->bsc + 2 * n, p->brd = p->bsc + 3 * n;
	return p;
}

int mrc__coll_moe_count_rows(struct mrc_coll_moe_plan *p, const int32_t *idx, int per_expert,
			     int64_t *pos)
{
	uint32_t n = p->n, K = p->cfg.top_k;
	size_t T = p->T;
	int r = capacity(&p->cfg, T, idx, pos);
	if (r)
		return r;
	for (size_t t = 0; t < T; t++)
		token_rows(p, t, idx, pos, per_expert, count_row, p);
	mrc__coll_prefix(p->sc, p->sd, n);
	p->n_sent = p->sd[n - 1] + p->sc[n - 1];
	for (size_t i = 0; i < T * K; i++)
		if (pos[i] >= 0) {
			p->st.pairs++;
			p->st.pairs_remote += (uint32_t)idx[i] / p->epr != p->me;
		}
	p->st.rows = p->n_sent, p->st.rows_remote = p->n_sent - p->sc[p->me];
	return 0;
}

int mrc__coll_moe_pack(struct mrc_coll_moe_plan *p, const int32_t *idx, const float *w,
		       const void *tokens, int per_expert, const int64_t *pos, size_t *cur,
		       size_t rowb, size_t strideb, uint8_t *sbuf, const size_t *shift)
{
	uint32_t n = p->n;
	p->tok = malloc((p->n_sent + 1) * sizeof(*p->tok));
	if (!p->tok)
		return -ENOMEM;
	memcpy(cur, p->sd, n * sizeof(*cur));
	struct pack a = { .p = p, .idx = idx, .w = w, .tokens = tokens, .sbuf = sbuf, .cur = cur,
			  .at = cur + n, .nmeta = cur + 2 * n, .shift = shift, .rowb = rowb,
			  .strideb = strideb };
	for (size_t t = 0; t < p->T; t++)
		token_rows(p, t, idx, pos, per_expert, pack_row, &a);
	return 0;
}

/* This rank's rows: each (token, expert) pair's place under the capacity
 * (pos), the rows per rank (p->sc, p->sd, p->n_sent, the pair and row
 * figures) and the send buffer (*sbuf, scratch) packed by rank, each row
 * its payload and routing entries.  cur: 3n scratch. */
static int pack_rows(struct mrc_coll *c, struct mrc_coll_moe_plan *p, const int32_t *idx,
		     const float *w, const void *tokens, int per_expert, int64_t *pos, size_t *cur,
		     size_t rowb, size_t strideb, uint8_t **sbuf)
{
	int r = mrc__coll_moe_count_rows(p, idx, per_expert, pos);
	if (r)
		return r;
	*sbuf = mrc__coll_scratch(c, MRC__SCR_SEND, p->n_sent * strideb + 1);
	if (!*sbuf)
		return -ENOMEM;
	return mrc__coll_moe_pack(p, idx, w, tokens, per_expert, pos, cur, rowb, strideb, *sbuf,
				  NULL);
}

int mrc__coll_moe_counts(struct mrc_coll *c, uint32_t n, const size_t *sc, size_t *rc,
			 size_t *rd, size_t *total, int64_t *cnt)
{
	int64_t *rcnt = cnt + n;
	for (uint32_t j = 0; j < n; j++)
		cnt[j] = (int64_t)sc[j];
	int r = mrc_coll_alltoall(c, cnt, rcnt, 1, MRC_COLL_INT64);
	if (r)
		return r;
	for (uint32_t s = 0; s < n; s++)
		rc[s] = (size_t)rcnt[s];
	mrc__coll_prefix(rc, rd, n);
	*total = rd[n - 1] + rc[n - 1];
	return 0;
}

int mrc__coll_moe_dispatch_run(struct mrc_coll *c, const struct mrc_coll_moe_cfg *cfg, size_t T,
			   const int32_t *idx, const float *w, const void *tokens, int per_expert,
			   struct mrc_coll_moe_plan **plan, void **expert_in, size_t *counts)
{
	int r = mrc__coll_moe_args(c, cfg, T, idx, w, tokens, per_expert, plan, expert_in, counts);
	if (r)
		return r;
	int kept = per_expert & MRC__MOE_KEPT;
	uint32_t n = c->n, K = cfg->top_k;
	size_t esz = mrc_coll_dtype_size(cfg->dtype), rowb = cfg->hidden * esz;
	/* Node dedupe for the per-rank rows with 1 < L < n; else (per
	 * expert, or asked for) the rows through the 2-D all-to-allv. */
	uint32_t L = cfg->local_ranks;
	int dedupe = L > 1 && L < n && !(per_expert & (MRC__MOE_PER_EXPERT | MRC__MOE_RANK_2D));
	size_t metab = K * sizeof(struct moe_meta) + (dedupe ? sizeof(struct moe_src) : 0);
	size_t strideb = rowb + metab;
	double t0 = mrc__mono_s();
	struct mrc_coll_moe_plan *p = mrc__coll_moe_plan_new(c, cfg, T, dedupe, rowb, metab);
	int64_t *pos = malloc((T * K + 1) * sizeof(*pos)), *cnt = malloc(2 * (size_t)n * sizeof(*cnt));
	size_t *cur = calloc(3 * (size_t)n, sizeof(*cur)), *ord = NULL;
	uint8_t *sbuf = NULL, *rbuf = NULL, *grouped = NULL;
	r = -ENOMEM;
	if (!p || !pos || !cur || !cnt)
		goto fail;
	if ((r = pack_rows(c, p, idx, w, tokens, per_expert & MRC__MOE_PER_EXPERT, pos, cur, rowb,
			   strideb, &sbuf)) ||
	    (r = mrc__coll_moe_counts(c, n, p->sc, p->rc, p->rd, &p->n_recv, cnt)))
		goto fail;
	mrc__coll_lap(&p->st.t_layout, &t0);
	r = -ENOMEM;
	rbuf = mrc__coll_scratch(c, MRC__SCR_RECV, p->n_recv * strideb + 1);
	if (!rbuf)
		goto fail;
	/* Data and routing in one exchange: as elements of the type (the
	 * stride is whole elements, since metab is a multiple of 8); with
	 * node dedupe this is the exchange across nodes. */
	if ((r = mrc__coll_moe_a2av(c, p->L2d, cfg->dtype, strideb / esz, sbuf, p->sc, rbuf, p->rc, p->st.t_disp,
		      p->L ? MRC__MOE_PH_2 : MRC__MOE_PH_1)))
		goto fail;
	mrc__coll_lap(NULL, &t0);
	if (p->L) {
		uint8_t *fwd;
		if ((r = mrc__coll_moe_node_forward(c, p, rbuf, strideb, rowb, &fwd, &ord)))
			goto fail;
		rbuf = fwd;
		mrc__coll_lap(NULL, &t0);
	}
	p->st.rows_recv = p->n_recv;
	r = -ENOMEM;
	/* at most top_k copies per row */
	grouped = kept ? mrc__coll_scratch(c, MRC__SCR_EIN, p->n_recv * K * rowb + 1)
		       : malloc(p->n_recv * K * rowb + 1);
	p->rpos = malloc((p->n_recv * K + 1) * sizeof(*p->rpos));
	p->rw = malloc((p->n_recv * K + 1) * sizeof(*p->rw));
	if (!grouped || !p->rpos || !p->rw)
		goto fail;
	if ((r = mrc__coll_moe_expand(p, rbuf, NULL, strideb, rowb, ord, grouped, counts)))
		goto fail;
	mrc__coll_lap(&p->st.t_expand, &t0);
	free(pos), free(cur), free(ord), free(cnt);   /* sbuf, rbuf: scratch */
	*expert_in = grouped;
	*plan = p;
	return 0;
fail:
	free(pos), free(cur), free(ord), free(cnt);
	if (!kept)
		free(grouped);
	mrc_coll_moe_plan_free(p);
	return r;
}


static int combine(struct mrc_coll *c, struct mrc_coll_moe_plan *p, const void *expert_out,
		   void *out);

static int combine_body(struct mrc_coll *c, void *arg)
{
	struct moe_args *a = arg;
	return combine(c, a->cplan, a->expert_out, a->out);
}

int mrc_coll_moe_combine(struct mrc_coll *c, struct mrc_coll_moe_plan *p, const void *expert_out,
			 void *out)
{
	if (!c || !p || !out || (p->n_recv && !expert_out))
		return -EINVAL;
	struct moe_args a = { .cplan = p, .expert_out = expert_out, .out = out };
	return mrc__coll_submit_body(c, combine_body, &a, sizeof(a), NULL);
}

int mrc_coll_moe_icombine(struct mrc_coll *c, struct mrc_coll_moe_plan *p,
			  const void *expert_out, void *out, struct mrc_coll_req **req)
{
	if (!req)
		return -EINVAL;
	*req = NULL;
	if (!c || !p || !out || (p->n_recv && !expert_out))
		return -EINVAL;
	struct moe_args a = { .cplan = p, .expert_out = expert_out, .out = out };
	return mrc__coll_submit_body(c, combine_body, &a, sizeof(a), req);
}

static int combine(struct mrc_coll *c, struct mrc_coll_moe_plan *p, const void *expert_out,
		   void *out)
{
	if (!c || !p || !out || (p->n_recv && !expert_out))
		return -EINVAL;
	int dt = p->cfg.dtype;
	uint32_t K = p->cfg.top_k;
	size_t H = p->cfg.hidden, row = H * mrc_coll_dtype_size(dt);
	double t0 = mrc__mono_s();
	uint8_t *part = mrc__coll_scratch(c, MRC__SCR_PART, p->n_recv * row + 1);
	uint8_t *back = mrc__coll_scratch(c, MRC__SCR_BACK, p->n_sent * row + 1);
	float *acc = mrc__coll_scratch(c, MRC__SCR_ACC, (p->T * H + 1) * sizeof(*acc));
	float *one = malloc((H + 1) * sizeof(*one));
	int r = -ENOMEM;
	if (!part || !back || !acc || !one)
		goto out;
	memset(acc, 0, p->T * H * sizeof(*acc));
	/* Each received token's weighted sum over this rank's experts, rounded
	 * to the type once: one row back per token and rank. */
	for (size_t j = 0; j < p->n_recv; j++) {
		memset(one, 0, H * sizeof(*one));
		for (uint32_t k = 0; k < K; k++)
			if (p->rpos[j * K + k] >= 0)
				mrc__coll_host_ops.axpy(one, (const uint8_t *)expert_out +
							(size_t)p->rpos[j * K + k] * row,
							p->rw[j * K + k], H, dt);
		mrc__coll_host_ops.from_float(part + j * row, one, H, dt);
	}
	mrc__coll_lap(&p->st.t_reduce, &t0);
	/* The way back: what each rank received from us, to us (node dedupe:
	 * through the proxies, which sum each row's parts). */
	if (p->L)
		r = mrc__coll_moe_node_back(c, p, part, back);
	else
		r = mrc__coll_moe_a2av(c, p->L2d, dt, H, part, p->rc, back, p->sc, p->st.t_comb, MRC__MOE_PH_1);
	if (r)
		goto out;
	mrc__coll_lap(NULL, &t0);
	for (size_t i = 0; i < p->n_sent; i++)
		mrc__coll_host_ops.axpy(acc + (size_t)p->tok[i] * H, back + i * row, 1.0f, H, dt);
	mrc__coll_host_ops.from_float(out, acc, p->T * H, dt);
	mrc__coll_lap(&p->st.t_acc, &t0);
	r = 0;
out:
	free(one);   /* part, back, acc: scratch */
	return r;
}

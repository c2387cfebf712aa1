/* MoE dispatch and combine over the communicator, and the 2-D
 * hierarchical all-to-allv they may use (include/mrc/coll.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "coll/coll_int.h"

/* ---- 2-D hierarchical all-to-allv -------------------------------------- */

static void prefix(const size_t *cnt, size_t *disp, uint32_t n)
{
	size_t a = 0;
	for (uint32_t i = 0; i < n; i++) {
		disp[i] = a;
		a += cnt[i];
	}
}

/* Displacements after the counts (sc, then sd; rc, then rd in memory) and
 * the packed send and receive buffers of one phase. */
static int phase_bufs(size_t *sc, size_t *rc, uint32_t n, size_t esz, uint8_t **sb, uint8_t **rb)
{
	prefix(sc, sc + n, n);
	prefix(rc, rc + n, n);
	*sb = malloc((sc[2 * n - 1] + sc[n - 1]) * esz + 1);
	*rb = malloc((rc[2 * n - 1] + rc[n - 1]) * esz + 1);
	return *sb && *rb ? 0 : -ENOMEM;
}

int mrc_coll_alltoallv_2d(struct mrc_coll *c, uint32_t L, const void *sendbuf,
			  const size_t *sendcounts, const size_t *sdispls, void *recvbuf,
			  const size_t *recvcounts, const size_t *rdispls, int dtype)
{
	size_t esz = mrc_coll_dtype_size(dtype);
	if (!c || !esz || L == 0 || c->n % L)
		return -EINVAL;
	if (L == 1 || L == c->n)   /* one level only: nothing to aggregate */
		return mrc_coll_alltoallv(c, sendbuf, sendcounts, sdispls, recvbuf, recvcounts,
					  rdispls, dtype);
	uint32_t n = c->n, G = n / L, g = c->me / L, l = c->me % L;
	int r = -ENOMEM;
	/* Everyone's send counts: the intermediate layouts follow from them. */
	int64_t *M = malloc((size_t)n * n * sizeof(*M)), *mine = malloc(n * sizeof(*mine));
	size_t *v = calloc(8 * (size_t)n, sizeof(*v));
	uint8_t *p1 = NULL, *t1 = NULL, *p2 = NULL, *t2 = NULL;
	if (!M || !mine || !v)
		goto out;
	for (uint32_t j = 0; j < n; j++)
		mine[j] = (int64_t)sendcounts[j];
	if ((r = mrc_coll_allgather(c, mine, M, n, MRC_COLL_INT64)))
		goto out;
#define CNT(s, d) ((size_t)M[(size_t)(s) * n + (d)])
	/* Per phase: send counts, displacements, receive counts, displacements. */
	size_t *sc1 = v, *sd1 = v + n, *rc1 = v + 2 * n, *rd1 = v + 3 * n;
	size_t *sc2 = v + 4 * n, *sd2 = v + 5 * n, *rc2 = v + 6 * n, *rd2 = v + 7 * n;
	/* Phase 1, inside the node: to local rank l2 everything for (g2, l2),
	 * packed by g2. */
	for (uint32_t l2 = 0; l2 < L; l2++)
		for (uint32_t g2 = 0; g2 < G; g2++) {
			sc1[g * L + l2] += sendcounts[g2 * L + l2];
			rc1[g * L + l2] += CNT(g * L + l2, g2 * L + l);
		}
	if ((r = phase_bufs(sc1, rc1, n, esz, &p1, &t1)))
		goto out;
	size_t o = 0;
	for (uint32_t l2 = 0; l2 < L; l2++)
		for (uint32_t g2 = 0; g2 < G; g2++) {
			size_t k = sendcounts[g2 * L + l2];
			memcpy(p1 + o * esz, (const uint8_t *)sendbuf + sdispls[g2 * L + l2] * esz, k * esz);
			o += k;
		}
	if ((r = mrc_coll_alltoallv(c, p1, sc1, sd1, t1, rc1, rd1, dtype)))
		goto out;
	/* t1: by source local rank ls, then g2: block CNT((g,ls), (g2,l)).
	 * Phase 2, across nodes: to (g2, l) the blocks for it from every ls,
	 * packed by g2 then ls. */
	for (uint32_t g2 = 0; g2 < G; g2++)
		for (uint32_t ls = 0; ls < L; ls++) {
			sc2[g2 * L + l] += CNT(g * L + ls, g2 * L + l);
			rc2[g2 * L + l] += CNT(g2 * L + ls, c->me);
		}
	if ((r = phase_bufs(sc2, rc2, n, esz, &p2, &t2)))
		goto out;
	o = 0;
	for (uint32_t g2 = 0; g2 < G; g2++)
		for (uint32_t ls = 0; ls < L; ls++) {
			/* Offset of block (ls, g2) in t1. */
			size_t off = rd1[g * L + ls];
			for (uint32_t gg = 0; gg < g2; gg++)
				off += CNT(g * L + ls, gg * L + l);
			size_t k = CNT(g * L + ls, g2 * L + l);
			memcpy(p2 + o * esz, t1 + off * esz, k * esz);
			o += k;
		}
	if ((r = mrc_coll_alltoallv(c, p2, sc2, sd2, t2, rc2, rd2, dtype)))
		goto out;
	/* t2: from node g2, blocks by source local rank ls: source (g2, ls). */
	o = 0;
	for (uint32_t g2 = 0; g2 < G; g2++)
		for (uint32_t ls = 0; ls < L; ls++) {
			uint32_t s = g2 * L + ls;
			size_t k = CNT(s, c->me);
			if (k != recvcounts[s]) {
				r = -EPROTO;   /* the caller's receive counts disagree */
				goto out;
			}
			memcpy((uint8_t *)recvbuf + rdispls[s] * esz, t2 + o * esz, k * esz);
			o += k;
		}
#undef CNT
	r = 0;
out:
	free(M), free(mine), free(v), free(p1), free(t1), free(p2), free(t2);
	return r;
}

/* ---- MoE ----------------------------------------------------------------- */

struct mrc_coll_moe_plan {
	struct mrc_coll_moe_cfg cfg;
	uint32_t n, epr;
	size_t T;
	int64_t *pair;             /* rows in send order: t * top_k + k */
	size_t n_sent, n_recv;
	size_t *sc, *sd, *rc, *rd; /* rows per rank */
	int64_t *rcnt;             /* [source][local expert] rows received */
};

void mrc_coll_moe_plan_free(struct mrc_coll_moe_plan *p)
{
	if (!p)
		return;
	free(p->pair), free(p->sc), free(p->rcnt);
	free(p);
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

static int a2av(struct mrc_coll *c, const struct mrc_coll_moe_cfg *cfg, const void *sb,
		const size_t *sc, void *rb, const size_t *rc)
{
	uint32_t n = c->n;
	size_t *v = malloc(4 * (size_t)n * sizeof(*v));
	if (!v)
		return -ENOMEM;
	/* Rows to elements. */
	for (uint32_t j = 0; j < n; j++) {
		v[j] = sc[j] * cfg->hidden;
		v[2 * n + j] = rc[j] * cfg->hidden;
	}
	prefix(v, v + n, n);
	prefix(v + 2 * n, v + 3 * n, n);
	int r = cfg->local_ranks
		? mrc_coll_alltoallv_2d(c, cfg->local_ranks, sb, v, v + n, rb, v + 2 * n, v + 3 * n,
					cfg->dtype)
		: mrc_coll_alltoallv(c, sb, v, v + n, rb, v + 2 * n, v + 3 * n, cfg->dtype);
	free(v);
	return r;
}

/* Row offset, in the by-source receive layout, of (source s, local expert
 * el), and in the expert-grouped layout. */
static size_t src_row(const struct mrc_coll_moe_plan *p, uint32_t s, uint32_t el)
{
	size_t o = p->rd[s];
	for (uint32_t e = 0; e < el; e++)
		o += (size_t)p->rcnt[(size_t)s * p->epr + e];
	return o;
}

static size_t grp_row(const struct mrc_coll_moe_plan *p, uint32_t s, uint32_t el)
{
	size_t o = 0;
	for (uint32_t e = 0; e < el; e++)
		for (uint32_t j = 0; j < p->n; j++)
			o += (size_t)p->rcnt[(size_t)j * p->epr + e];
	for (uint32_t j = 0; j < s; j++)
		o += (size_t)p->rcnt[(size_t)j * p->epr + el];
	return o;
}

/* Between the by-source layout (a) and the expert-grouped one (b). */
static void regroup(const struct mrc_coll_moe_plan *p, const uint8_t *from, uint8_t *to,
		    int to_grouped)
{
	size_t row = p->cfg.hidden * mrc_coll_dtype_size(p->cfg.dtype);
	for (uint32_t s = 0; s < p->n; s++)
		for (uint32_t el = 0; el < p->epr; el++) {
			size_t k = (size_t)p->rcnt[(size_t)s * p->epr + el], a = src_row(p, s, el),
			       b = grp_row(p, s, el);
			memcpy(to + (to_grouped ? b : a) * row, from + (to_grouped ? a : b) * row, k * row);
		}
}

int mrc_coll_moe_dispatch(struct mrc_coll *c, const struct mrc_coll_moe_cfg *cfg,
			  size_t T, const int32_t *idx, const void *tokens,
			  struct mrc_coll_moe_plan **plan, void **expert_in, size_t *counts)
{
	if (!c || !cfg || !plan || !expert_in || !counts || !cfg->top_k || !cfg->n_experts ||
	    cfg->n_experts % c->n || !cfg->hidden || (T && (!idx || !tokens)) ||
	    (cfg->dtype != MRC_COLL_FLOAT32 && cfg->dtype != MRC_COLL_FLOAT16 &&
	     cfg->dtype != MRC_COLL_BFLOAT16) ||
	    (cfg->local_ranks && c->n % cfg->local_ranks))
		return -EINVAL;
	if (c->err)
		return c->err;
	uint32_t n = c->n, E = cfg->n_experts, K = cfg->top_k, epr = E / n;
	size_t row = cfg->hidden * mrc_coll_dtype_size(cfg->dtype);
	struct mrc_coll_moe_plan *p = calloc(1, sizeof(*p));
	int64_t *cnt = calloc(E, sizeof(*cnt)), *pos = malloc((T * K + 1) * sizeof(*pos));
	uint8_t *sbuf = NULL, *rbuf = NULL;
	int r = -ENOMEM;
	if (!p || !cnt || !pos)
		goto fail;
	*p = (struct mrc_coll_moe_plan){ .cfg = *cfg, .n = n, .epr = epr, .T = T };
	p->sc = calloc(4 * (size_t)n, sizeof(size_t));
	p->rcnt = calloc((size_t)n * epr, sizeof(*p->rcnt));
	if (!p->sc || !p->rcnt)
		goto fail;
	p->sd = p->sc + n, p->rc = p->sc + 2 * n, p->rd = p->sc + 3 * n;
	/* Capacity: choice k of every token before choice k+1 of any. */
	uint64_t cap = cfg->capacity_factor > 0
		? (uint64_t)ceil(cfg->capacity_factor * (double)T * K / E) : UINT64_MAX;
	for (uint32_t k = 0; k < K; k++)
		for (size_t t = 0; t < T; t++) {
			int32_t e = idx[t * K + k];
			pos[t * K + k] = -1;
			if (e >= (int32_t)E) {
				r = -EINVAL;
				goto fail;
			}
			if (e >= 0 && (uint64_t)cnt[e] < cap)
				pos[t * K + k] = cnt[e]++;
		}
	size_t *start = calloc(E + 1, sizeof(*start));
	if (!start)
		goto fail;
	for (uint32_t e = 0; e < E; e++) {
		start[e + 1] = start[e] + (size_t)cnt[e];
		p->sc[e / epr] += (size_t)cnt[e];
	}
	p->n_sent = start[E];
	p->pair = malloc((p->n_sent + 1) * sizeof(*p->pair));
	sbuf = malloc(p->n_sent * row + 1);
	if (!p->pair || !sbuf) {
		free(start);
		goto fail;
	}
	for (size_t i = 0; i < T * K; i++)
		if (pos[i] >= 0) {
			size_t at = start[idx[i]] + (size_t)pos[i];
			p->pair[at] = (int64_t)i;
			memcpy(sbuf + at * row, (const uint8_t *)tokens + (i / K) * row, row);
		}
	free(start);
	prefix(p->sc, p->sd, n);
	/* How many rows each local expert gets from each rank. */
	if ((r = mrc_coll_alltoall(c, cnt, p->rcnt, epr, MRC_COLL_INT64)))
		goto fail;
	for (uint32_t s = 0; s < n; s++)
		for (uint32_t el = 0; el < epr; el++)
			p->rc[s] += (size_t)p->rcnt[(size_t)s * epr + el];
	prefix(p->rc, p->rd, n);
	p->n_recv = p->rd[n - 1] + p->rc[n - 1];
	rbuf = malloc(p->n_recv * row + 1);
	uint8_t *grouped = malloc(p->n_recv * row + 1);
	if (!rbuf || !grouped) {
		free(grouped);
		r = -ENOMEM;
		goto fail;
	}
	if ((r = a2av(c, cfg, sbuf, p->sc, rbuf, p->rc))) {
		free(grouped);
		goto fail;
	}
	regroup(p, rbuf, grouped, 1);
	for (uint32_t el = 0; el < epr; el++) {
		counts[el] = 0;
		for (uint32_t s = 0; s < n; s++)
			counts[el] += (size_t)p->rcnt[(size_t)s * epr + el];
	}
	free(cnt), free(pos), free(sbuf), free(rbuf);
	*expert_in = grouped;
	*plan = p;
	return 0;
fail:
	free(cnt), free(pos), free(sbuf), free(rbuf);
	mrc_coll_moe_plan_free(p);
	return r;
}

int mrc_coll_moe_combine(struct mrc_coll *c, const struct mrc_coll_moe_plan *p,
			 const void *expert_out, const float *w, void *out)
{
	if (!c || !p || !out || (p->n_recv && !expert_out) || (p->n_sent && !w))
		return -EINVAL;
	int dt = p->cfg.dtype;
	size_t H = p->cfg.hidden, row = H * mrc_coll_dtype_size(dt);
	uint8_t *bysrc = malloc(p->n_recv * row + 1), *back = malloc(p->n_sent * row + 1);
	float *acc = calloc(p->T * H + 1, sizeof(*acc));
	int r = -ENOMEM;
	if (!bysrc || !back || !acc)
		goto out;
	regroup(p, expert_out, bysrc, 0);
	/* The way back: what each rank received from us, to us. */
	if ((r = a2av(c, &p->cfg, bysrc, p->rc, back, p->sc)))
		goto out;
	for (size_t i = 0; i < p->n_sent; i++) {
		size_t t = (size_t)p->pair[i] / p->cfg.top_k;
		mrc__coll_host_ops.axpy(acc + t * H, back + i * row, w[p->pair[i]], H, dt);
	}
	mrc__coll_host_ops.from_float(out, acc, p->T * H, dt);
	r = 0;
out:
	free(bysrc), free(back), free(acc);
	return r;
}

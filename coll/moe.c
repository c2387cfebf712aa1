/* MoE dispatch and combine over the communicator, and the 2-D
 * hierarchical all-to-allv they may use (include/mrc/coll.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "coll/coll_int.h"
#include "coll/moe_int.h"

/* Adds the time since *t0 to *acc (when acc is not NULL) and restarts. */
static void lap(double *acc, double *t0)
{
	double t = mrc__mono_s();
	if (acc)
		*acc += t - *t0;
	*t0 = t;
}

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
	return mrc__coll_alltoallv_2d(c, L, sendbuf, sendcounts, sdispls, recvbuf, recvcounts,
				      rdispls, dtype, NULL);
}

int mrc__coll_alltoallv_2d(struct mrc_coll *c, uint32_t L, const void *sendbuf,
			   const size_t *sendcounts, const size_t *sdispls, void *recvbuf,
			   const size_t *recvcounts, const size_t *rdispls, int dtype, double *ph)
{
	size_t esz = mrc_coll_dtype_size(dtype);
	if (!c || !esz || L == 0 || c->n % L)
		return -EINVAL;
	if (L == 1 || L == c->n)   /* one level only: nothing to aggregate */
		return mrc_coll_alltoallv(c, sendbuf, sendcounts, sdispls, recvbuf, recvcounts,
					  rdispls, dtype);
	uint32_t n = c->n, G = n / L, g = c->me / L, l = c->me % L;
	int r = -ENOMEM;
	double t0 = mrc__mono_s();
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
	lap(ph ? ph + MRC__MOE_PH_COUNTS : NULL, &t0);
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
	lap(ph ? ph + MRC__MOE_PH_1 : NULL, &t0);
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
	lap(ph ? ph + MRC__MOE_PH_2 : NULL, &t0);
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
	lap(ph ? ph + MRC__MOE_PH_UNPACK : NULL, &t0);
	r = 0;
out:
	free(M), free(mine), free(v), free(p1), free(t1), free(p2), free(t2);
	return r;
}

/* ---- MoE ----------------------------------------------------------------- */

/* Dispatch sends a token once per destination rank (as DeepEP), not once
 * per expert: each row carries, after its hidden elements, top_k routing
 * entries (the rank's local expert, -1 for none, and the weight), and the
 * receiver copies it to each of its experts that the token chose.  The
 * combine sends back one row per received token, the weighted sum over
 * that rank's experts, so that the way back is deduplicated too.
 *
 * With local_ranks = L (1 < L < n) the dedupe goes one level up (as
 * DeepEP's internode kernels): a token crosses to a node once, to its
 * first destination rank there (its proxy), its entries naming the node's
 * experts; the proxy keeps its own copy and forwards it inside the node
 * once to each other local rank with an expert of it (so a token for one
 * rank of a node goes straight there, as flat).  The combine retraces
 * this: each rank's row back to the proxy, the proxy's sum of them
 * (rounded to the type) across to the token's rank.  Such rows end with
 * the source rank and token, so that a receiver can restore the source
 * order of rows that reached it through several proxies. */
struct moe_meta {
	int32_t le;                /* expert at the destination (rank's, or node's for a proxy); -1: unused */
	float w;
};
struct moe_src {
	uint32_t src, pad;         /* source rank (filled in by the proxy) */
	uint64_t tok;              /* token index at the source */
};

struct mrc_coll_moe_plan {
	struct mrc_coll_moe_cfg cfg;
	uint32_t n, me, epr;
	uint32_t L;                /* node dedupe: ranks per node; 0: rows go to ranks directly */
	uint32_t L2d;              /* rows per rank through mrc_coll_alltoallv_2d with L2d; 0: flat */
	size_t T;
	size_t n_sent, n_recv;     /* rows sent (to ranks, or proxies), rows the experts got */
	size_t *sc, *sd, *rc, *rd; /* rows per rank (node dedupe: to and from proxies) */
	size_t n_a, n_b;           /* node dedupe: rows received as proxy, rows it forwarded */
	size_t *bsc, *bsd, *brc, *brd;   /* node dedupe: the forwarding exchange's rows per rank */
	int64_t *fwd;              /* [n_b] the proxy's received row each forwarded row copies */
	int64_t *tok;              /* [n_sent] token of each sent row, in send order */
	int64_t *rpos;             /* [n_recv * top_k] expert_in row each received row feeds, -1 */
	float *rw;                 /* [n_recv * top_k] with this weight */
	struct mrc__coll_moe_stats st;
};

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
static int a2av(struct mrc_coll *c, uint32_t L2d, int dtype, size_t stride, const void *sb,
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
	prefix(v, v + n, n);
	prefix(v + 2 * n, v + 3 * n, n);
	double t0 = mrc__mono_s();
	int r = L2d
		? mrc__coll_alltoallv_2d(c, L2d, sb, v, v + n, rb, v + 2 * n, v + 3 * n, dtype, ph)
		: mrc_coll_alltoallv(c, sb, v, v + n, rb, v + 2 * n, v + 3 * n, dtype);
	if (!L2d)
		lap(ph + slot, &t0);
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
		uint8_t *row = a->sbuf + i * a->strideb;
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
	memcpy(a->sbuf + a->at[r] * a->strideb + a->rowb + a->nmeta[r]++ * sizeof(m), &m, sizeof(m));
}

/* The receiver: expert_in grouped by local expert (by source rank, then
 * the source's row order: received rows visited in the order ord, or as
 * received when NULL), and where each received row's copies went. */
static int expand(struct mrc_coll_moe_plan *p, const uint8_t *rbuf, size_t strideb, size_t rowb,
		  const size_t *ord, uint8_t *grouped, size_t *counts)
{
	uint32_t K = p->cfg.top_k, epr = p->epr;
	size_t start[epr + 1];
	memset(start, 0, sizeof(start));
	for (size_t j = 0; j < p->n_recv; j++)
		for (uint32_t k = 0; k < K; k++) {
			struct moe_meta m;
			memcpy(&m, rbuf + j * strideb + rowb + k * sizeof(m), sizeof(m));
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
			memcpy(&m, rbuf + j * strideb + rowb + k * sizeof(m), sizeof(m));
			p->rpos[j * K + k] = -1;
			if (m.le < 0)
				continue;
			size_t at = start[m.le]++;
			p->rpos[j * K + k] = (int64_t)at;
			p->rw[j * K + k] = m.w;
			memcpy(grouped + at * rowb, rbuf + j * strideb, rowb);
		}
	return 0;
}

/* Node dedupe, at the proxy: each of the n_recv rows received across
 * nodes (abuf) goes on to every local rank with one of its experts, once
 * per rank with that rank's entries, packed by destination in the order
 * received, the source rank written into its trailer.  On return *out
 * holds the rows this rank's experts get (p->n_recv of them) and *ordp
 * the order that visits them by source rank, then source token. */
struct ord_key {
	uint64_t src, tok;
	size_t j;
};

static int cmp_key(const void *a, const void *b)
{
	const struct ord_key *x = a, *y = b;
	if (x->src != y->src)
		return x->src < y->src ? -1 : 1;
	return x->tok < y->tok ? -1 : x->tok > y->tok;
}

static int node_forward(struct mrc_coll *c, struct mrc_coll_moe_plan *p, const uint8_t *abuf,
			size_t strideb, size_t rowb, uint8_t **out, size_t **ordp)
{
	uint32_t n = p->n, L = p->L, g = p->me / L, K = p->cfg.top_k, epr = p->epr;
	size_t na = p->n_recv, trail = rowb + K * sizeof(struct moe_meta);
	double t0 = mrc__mono_s();
	int r = -ENOMEM;
	int64_t *cnt = malloc(2 * (size_t)n * sizeof(*cnt)), *rcnt = cnt + n;
	uint32_t *src = malloc((na + 1) * sizeof(*src));
	size_t *cur = malloc((n + 2 * (size_t)L) * sizeof(*cur)), *ord = NULL;
	struct ord_key *key = NULL;
	uint8_t *fb = NULL, *ob = NULL;
	if (!cnt || !src || !cur)
		goto out;
	p->n_a = na;
	for (uint32_t s = 0; s < n; s++)
		for (size_t j = p->rd[s]; j < p->rd[s] + p->rc[s]; j++)
			src[j] = s;
	size_t *at = cur + n, *nm = at + L;   /* per local rank: row in fb for this row, entries */
	/* Two passes over the received rows: count the forwards per local
	 * rank, then (buffers sized) build them. */
	for (int fill = 0; fill < 2; fill++) {
		if (fill) {
			prefix(p->bsc, p->bsd, n);
			p->n_b = p->bsd[n - 1] + p->bsc[n - 1];
			p->fwd = malloc((p->n_b + 1) * sizeof(*p->fwd));
			fb = mrc__coll_scratch(c, MRC__SCR_FWD, p->n_b * strideb + 1);
			if (!p->fwd || !fb)
				goto out;
			memcpy(cur, p->bsd, n * sizeof(*cur));
		}
		for (size_t j = 0; j < na; j++) {
			for (uint32_t ld = 0; ld < L; ld++)
				at[ld] = SIZE_MAX;
			for (uint32_t k = 0; k < K; k++) {
				struct moe_meta m;
				memcpy(&m, abuf + j * strideb + rowb + k * sizeof(m), sizeof(m));
				if (m.le < 0)
					continue;
				if ((uint32_t)m.le >= epr * L) {
					r = -EPROTO;   /* names no expert of this node */
					goto out;
				}
				uint32_t ld = (uint32_t)m.le / epr;
				if (!fill) {
					if (at[ld] == SIZE_MAX)
						at[ld] = 0, p->bsc[g * L + ld]++;
					continue;
				}
				if (at[ld] == SIZE_MAX) {
					size_t i = at[ld] = cur[g * L + ld]++;
					uint8_t *row = fb + i * strideb;
					struct moe_meta none = { .le = -1, .w = 0 };
					struct moe_src sr;
					memcpy(row, abuf + j * strideb, rowb);
					for (uint32_t e = 0; e < K; e++)
						memcpy(row + rowb + e * sizeof(none), &none, sizeof(none));
					memcpy(&sr, abuf + j * strideb + trail, sizeof(sr));
					sr.src = src[j];
					memcpy(row + trail, &sr, sizeof(sr));
					p->fwd[i] = (int64_t)j;
					nm[ld] = 0;
				}
				m.le = (int32_t)((uint32_t)m.le % epr);
				memcpy(fb + at[ld] * strideb + rowb + nm[ld]++ * sizeof(m), &m, sizeof(m));
			}
		}
	}
	lap(p->st.t_disp + MRC__MOE_PH_UNPACK, &t0);
	for (uint32_t j = 0; j < n; j++)
		cnt[j] = (int64_t)p->bsc[j];
	if ((r = mrc_coll_alltoall(c, cnt, rcnt, 1, MRC_COLL_INT64)))
		goto out;
	for (uint32_t s = 0; s < n; s++) {
		if (rcnt[s] < 0 || (rcnt[s] && s / L != g)) {
			r = -EPROTO;   /* forwards come from this node's ranks only */
			goto out;
		}
		p->brc[s] = (size_t)rcnt[s];
	}
	prefix(p->brc, p->brd, n);
	p->n_recv = p->brd[n - 1] + p->brc[n - 1];
	lap(p->st.t_disp + MRC__MOE_PH_COUNTS, &t0);
	r = -ENOMEM;
	ob = mrc__coll_scratch(c, MRC__SCR_OUT, p->n_recv * strideb + 1);
	ord = malloc((p->n_recv + 1) * sizeof(*ord));
	key = malloc((p->n_recv + 1) * sizeof(*key));
	if (!ob || !ord || !key)
		goto out;
	if ((r = a2av(c, 0, p->cfg.dtype, strideb / mrc_coll_dtype_size(p->cfg.dtype), fb, p->bsc,
		      ob, p->brc, p->st.t_disp, MRC__MOE_PH_1)))
		goto out;
	t0 = mrc__mono_s();
	for (size_t j = 0; j < p->n_recv; j++) {
		struct moe_src sr;
		memcpy(&sr, ob + j * strideb + trail, sizeof(sr));
		if (sr.src >= n) {
			r = -EPROTO;
			goto out;
		}
		key[j] = (struct ord_key){ .src = sr.src, .tok = sr.tok, .j = j };
	}
	qsort(key, p->n_recv, sizeof(*key), cmp_key);
	for (size_t j = 0; j < p->n_recv; j++)
		ord[j] = key[j].j;
	for (uint32_t j = 0; j < n; j++)
		p->st.rows_remote += j == p->me ? 0 : p->bsc[j];
	p->st.rows_fwd = p->n_b;
	lap(p->st.t_disp + MRC__MOE_PH_UNPACK, &t0);
	*out = ob, *ordp = ord;
	ob = NULL, ord = NULL;
	r = 0;
out:
	free(cnt), free(src), free(cur), free(ord), free(key);   /* fb, ob: scratch */
	return r;
}

int mrc_coll_moe_dispatch(struct mrc_coll *c, const struct mrc_coll_moe_cfg *cfg, size_t T,
			  const int32_t *idx, const float *w, const void *tokens,
			  struct mrc_coll_moe_plan **plan, void **expert_in, size_t *counts)
{
	return mrc__coll_moe_dispatch(c, cfg, T, idx, w, tokens, 0, plan, expert_in, counts);
}

int mrc_coll_moe_dispatch_kept(struct mrc_coll *c, const struct mrc_coll_moe_cfg *cfg, size_t T,
			       const int32_t *idx, const float *w, const void *tokens,
			       struct mrc_coll_moe_plan **plan, void **expert_in, size_t *counts)
{
	return mrc__coll_moe_dispatch(c, cfg, T, idx, w, tokens, MRC__MOE_KEPT, plan, expert_in,
				      counts);
}

int mrc__coll_moe_dispatch(struct mrc_coll *c, const struct mrc_coll_moe_cfg *cfg, size_t T,
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
	int kept = per_expert & MRC__MOE_KEPT;
	if (c->err)
		return c->err;
	uint32_t n = c->n, K = cfg->top_k;
	size_t esz = mrc_coll_dtype_size(cfg->dtype), rowb = cfg->hidden * esz;
	/* Node dedupe for the per-rank rows with 1 < L < n; else (per
	 * expert, or asked for) the rows through the 2-D all-to-allv. */
	uint32_t L = cfg->local_ranks;
	int dedupe = L > 1 && L < n && !(per_expert & (MRC__MOE_PER_EXPERT | MRC__MOE_RANK_2D));
	size_t metab = K * sizeof(struct moe_meta) + (dedupe ? sizeof(struct moe_src) : 0);
	size_t strideb = rowb + metab;
	double t0 = mrc__mono_s();
	struct mrc_coll_moe_plan *p = calloc(1, sizeof(*p));
	int64_t *pos = malloc((T * K + 1) * sizeof(*pos)), *cnt = NULL, *rcnt = NULL;
	size_t *cur = calloc(3 * (size_t)n, sizeof(*cur)), *ord = NULL;
	uint8_t *sbuf = NULL, *rbuf = NULL, *grouped = NULL;
	int r = -ENOMEM;
	if (!p || !pos || !cur)
		goto fail;
	*p = (struct mrc_coll_moe_plan){ .cfg = *cfg, .n = n, .me = c->me, .epr = cfg->n_experts / n,
					 .L = dedupe ? L : 0, .L2d = dedupe ? 0 : L, .T = T };
	per_expert &= MRC__MOE_PER_EXPERT;
	p->st.row_bytes = rowb, p->st.meta_bytes = metab;
	p->sc = calloc(4 * (size_t)n, sizeof(size_t));
	p->bsc = dedupe ? calloc(4 * (size_t)n, sizeof(size_t)) : NULL;
	cnt = malloc(2 * (size_t)n * sizeof(*cnt));
	if (!p->sc || !cnt || (dedupe && !p->bsc))
		goto fail;
	p->sd = p->sc + n, p->rc = p->sc + 2 * n, p->rd = p->sc + 3 * n;
	if (dedupe)
		p->bsd = p->bsc + n, p->brc = p->bsc + 2 * n, p->brd = p->bsc + 3 * n;
	if ((r = capacity(cfg, T, idx, pos)))
		goto fail;
	for (size_t t = 0; t < T; t++)
		token_rows(p, t, idx, pos, per_expert, count_row, p);
	prefix(p->sc, p->sd, n);
	p->n_sent = p->sd[n - 1] + p->sc[n - 1];
	for (size_t i = 0; i < T * K; i++)
		if (pos[i] >= 0) {
			p->st.pairs++;
			p->st.pairs_remote += (uint32_t)idx[i] / p->epr != c->me;
		}
	p->st.rows = p->n_sent, p->st.rows_remote = p->n_sent - p->sc[c->me];
	r = -ENOMEM;
	p->tok = malloc((p->n_sent + 1) * sizeof(*p->tok));
	sbuf = mrc__coll_scratch(c, MRC__SCR_SEND, p->n_sent * strideb + 1);
	if (!p->tok || !sbuf)
		goto fail;
	memcpy(cur, p->sd, n * sizeof(*cur));
	struct pack a = { .p = p, .idx = idx, .w = w, .tokens = tokens, .sbuf = sbuf, .cur = cur,
			  .at = cur + n, .nmeta = cur + 2 * n, .rowb = rowb,
			  .strideb = strideb };
	for (size_t t = 0; t < T; t++)
		token_rows(p, t, idx, pos, per_expert, pack_row, &a);
	/* Rows each rank gets from us. */
	for (uint32_t j = 0; j < n; j++)
		cnt[j] = (int64_t)p->sc[j];
	rcnt = cnt + n;
	if ((r = mrc_coll_alltoall(c, cnt, rcnt, 1, MRC_COLL_INT64)))
		goto fail;
	for (uint32_t s = 0; s < n; s++)
		p->rc[s] = (size_t)rcnt[s];
	prefix(p->rc, p->rd, n);
	p->n_recv = p->rd[n - 1] + p->rc[n - 1];
	lap(&p->st.t_layout, &t0);
	r = -ENOMEM;
	rbuf = mrc__coll_scratch(c, MRC__SCR_RECV, p->n_recv * strideb + 1);
	if (!rbuf)
		goto fail;
	/* Data and routing in one exchange: as elements of the type (the
	 * stride is whole elements, since metab is a multiple of 8); with
	 * node dedupe this is the exchange across nodes. */
	if ((r = a2av(c, p->L2d, cfg->dtype, strideb / esz, sbuf, p->sc, rbuf, p->rc, p->st.t_disp,
		      p->L ? MRC__MOE_PH_2 : MRC__MOE_PH_1)))
		goto fail;
	lap(NULL, &t0);
	if (p->L) {
		uint8_t *fwd;
		if ((r = node_forward(c, p, rbuf, strideb, rowb, &fwd, &ord)))
			goto fail;
		rbuf = fwd;
		lap(NULL, &t0);
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
	if ((r = expand(p, rbuf, strideb, rowb, ord, grouped, counts)))
		goto fail;
	lap(&p->st.t_expand, &t0);
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

/* Node dedupe's way back: the experts' rows (part, as received) to the
 * proxies; there the rows of each row received across nodes summed in
 * float and rounded to the type; those across to the tokens' ranks
 * (back, as sent). */
static int node_back(struct mrc_coll *c, struct mrc_coll_moe_plan *p, const uint8_t *part,
		     uint8_t *back)
{
	int dt = p->cfg.dtype;
	size_t H = p->cfg.hidden, row = H * mrc_coll_dtype_size(dt), na = p->n_a, nb = p->n_b;
	uint8_t *fb = mrc__coll_scratch(c, MRC__SCR_FB, nb * row + 1);
	uint8_t *ab = mrc__coll_scratch(c, MRC__SCR_AB, na * row + 1);
	size_t *first = calloc(na + 2, sizeof(*first)), *list = malloc((nb + 1) * sizeof(*list));
	float *one = malloc((H + 1) * sizeof(*one));
	int r = -ENOMEM;
	if (!fb || !ab || !first || !list || !one)
		goto out;
	if ((r = a2av(c, 0, dt, H, part, p->brc, fb, p->bsc, p->st.t_comb, MRC__MOE_PH_1)))
		goto out;
	double t0 = mrc__mono_s();
	/* The forwarded rows of each received row, in forwarding order. */
	for (size_t i = 0; i < nb; i++)
		first[p->fwd[i] + 2]++;
	for (size_t j = 0; j < na; j++)
		first[j + 2] += first[j + 1];
	for (size_t i = 0; i < nb; i++)
		list[first[p->fwd[i] + 1]++] = i;
	for (size_t j = 0; j < na; j++) {
		memset(one, 0, H * sizeof(*one));
		for (size_t q = first[j]; q < first[j + 1]; q++)
			mrc__coll_host_ops.axpy(one, fb + list[q] * row, 1.0f, H, dt);
		mrc__coll_host_ops.from_float(ab + j * row, one, H, dt);
	}
	lap(p->st.t_comb + MRC__MOE_PH_UNPACK, &t0);
	r = a2av(c, 0, dt, H, ab, p->rc, back, p->sc, p->st.t_comb, MRC__MOE_PH_2);
out:
	free(first), free(list), free(one);   /* fb, ab: scratch */
	return r;
}

int mrc_coll_moe_combine(struct mrc_coll *c, struct mrc_coll_moe_plan *p, const void *expert_out,
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
	lap(&p->st.t_reduce, &t0);
	/* The way back: what each rank received from us, to us (node dedupe:
	 * through the proxies, which sum each row's parts). */
	if (p->L)
		r = node_back(c, p, part, back);
	else
		r = a2av(c, p->L2d, dt, H, part, p->rc, back, p->sc, p->st.t_comb, MRC__MOE_PH_1);
	if (r)
		goto out;
	lap(NULL, &t0);
	for (size_t i = 0; i < p->n_sent; i++)
		mrc__coll_host_ops.axpy(acc + (size_t)p->tok[i] * H, back + i * row, 1.0f, H, dt);
	mrc__coll_host_ops.from_float(out, acc, p->T * H, dt);
	lap(&p->st.t_acc, &t0);
	r = 0;
out:
	free(one);   /* part, back, acc: scratch */
	return r;
}

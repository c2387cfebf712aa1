/* MoE node dedupe (docs/coll.md): a token crosses to a node once, to one
 * rank there (the proxy) that forwards it to the node's ranks with their
 * experts, and on the way back sums their rows before the crossing. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "coll/coll_int.h"
#include "coll/moe_int.h"

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

/* One forwarding at the proxy: what its steps share. */
struct fwd {
	struct mrc_coll_moe_plan *p;
	const uint8_t *abuf;           /* the rows received across nodes */
	size_t strideb, rowb, trail;   /* row stride; payload bytes; where its moe_src is */
	const uint32_t *src;           /* [received row] its source rank */
	size_t *cur;                   /* [n] next row of fb per destination rank */
	size_t *at, *nm;               /* [L] per local rank: row in fb for this row, entries */
	uint8_t *fb;                   /* the forwards, packed by destination */
};

/* A new forward of received row j to local rank ld: its payload, no
 * entries yet, its source rank written into the trailer. */
static void fwd_start(struct fwd *f, size_t j, uint32_t ld)
{
	struct mrc_coll_moe_plan *p = f->p;
	size_t i = f->at[ld] = f->cur[p->me / p->L * p->L + ld]++;
	uint8_t *row = f->fb + i * f->strideb;
	struct moe_meta none = { .le = -1, .w = 0 };
	struct moe_src sr;
	memcpy(row, f->abuf + j * f->strideb, f->rowb);
	for (uint32_t e = 0; e < p->cfg.top_k; e++)
		memcpy(row + f->rowb + e * sizeof(none), &none, sizeof(none));
	memcpy(&sr, f->abuf + j * f->strideb + f->trail, sizeof(sr));
	sr.src = f->src[j];
	memcpy(row + f->trail, &sr, sizeof(sr));
	p->fwd[i] = (int64_t)j;
	f->nm[ld] = 0;
}

/* Received row j's entries, each to the local rank with its expert: the
 * counting pass (fill 0) counts one forward per rank in p->bsc, the
 * filling pass writes them, the entries renumbered to the rank's experts.
 * -EPROTO for an entry that names no expert of this node. */
static int fwd_row(struct fwd *f, size_t j, int fill)
{
	struct mrc_coll_moe_plan *p = f->p;
	uint32_t L = p->L, g = p->me / L, K = p->cfg.top_k, epr = p->epr;
	for (uint32_t ld = 0; ld < L; ld++)
		f->at[ld] = SIZE_MAX;
	for (uint32_t k = 0; k < K; k++) {
		struct moe_meta m;
		memcpy(&m, f->abuf + j * f->strideb + f->rowb + k * sizeof(m), sizeof(m));
		if (m.le < 0)
			continue;
		if ((uint32_t)m.le >= epr * L)
			return -EPROTO;
		uint32_t ld = (uint32_t)m.le / epr;
		if (!fill) {
			if (f->at[ld] == SIZE_MAX)
				f->at[ld] = 0, p->bsc[g * L + ld]++;
			continue;
		}
		if (f->at[ld] == SIZE_MAX)
			fwd_start(f, j, ld);
		m.le = (int32_t)((uint32_t)m.le % epr);
		memcpy(f->fb + f->at[ld] * f->strideb + f->rowb + f->nm[ld]++ * sizeof(m), &m,
		       sizeof(m));
	}
	return 0;
}

/* Two passes over the received rows: count the forwards per local rank,
 * then (p->fwd and the scratch fb sized) build them. */
static int fwd_rows(struct mrc_coll *c, struct fwd *f)
{
	struct mrc_coll_moe_plan *p = f->p;
	uint32_t n = p->n;
	for (int fill = 0; fill < 2; fill++) {
		if (fill) {
			mrc__coll_prefix(p->bsc, p->bsd, n);
			p->n_b = p->bsd[n - 1] + p->bsc[n - 1];
			p->fwd = malloc((p->n_b + 1) * sizeof(*p->fwd));
			f->fb = mrc__coll_scratch(c, MRC__SCR_FWD, p->n_b * f->strideb + 1);
			if (!p->fwd || !f->fb)
				return -ENOMEM;
			memcpy(f->cur, p->bsd, n * sizeof(*f->cur));
		}
		for (size_t j = 0; j < p->n_a; j++) {
			int r = fwd_row(f, j, fill);
			if (r)
				return r;
		}
	}
	return 0;
}

/* The forwards' counts to the node's ranks (cnt: 2n scratch), and from
 * theirs what this rank receives (p->brc, p->brd, p->n_recv).  -EPROTO
 * for forwards from another node's ranks. */
static int fwd_counts(struct mrc_coll *c, struct mrc_coll_moe_plan *p, int64_t *cnt)
{
	uint32_t n = p->n, L = p->L, g = p->me / L;
	int r = mrc__coll_moe_counts(c, n, p->bsc, p->brc, p->brd, &p->n_recv, cnt);
	if (r)
		return r;
	for (uint32_t s = 0; s < n; s++)   /* what each rank said it sends (cnt + n) */
		if (cnt[n + s] < 0 || (cnt[n + s] && s / L != g))
			return -EPROTO;   /* forwards come from this node's ranks only */
	return 0;
}

/* ord: the order that visits the received forwards (ob) by source rank,
 * then source token (key: room for p->n_recv).  -EPROTO for a trailer
 * naming no rank. */
static int recv_order(const struct mrc_coll_moe_plan *p, const uint8_t *ob, size_t strideb,
		      size_t trail, struct ord_key *key, size_t *ord)
{
	for (size_t j = 0; j < p->n_recv; j++) {
		struct moe_src sr;
		memcpy(&sr, ob + j * strideb + trail, sizeof(sr));
		if (sr.src >= p->n)
			return -EPROTO;
		key[j] = (struct ord_key){ .src = sr.src, .tok = sr.tok, .j = j };
	}
	qsort(key, p->n_recv, sizeof(*key), cmp_key);
	for (size_t j = 0; j < p->n_recv; j++)
		ord[j] = key[j].j;
	return 0;
}

int mrc__coll_moe_node_forward(struct mrc_coll *c, struct mrc_coll_moe_plan *p,
			       const uint8_t *abuf, size_t strideb, size_t rowb, uint8_t **out,
			       size_t **ordp)
{
	uint32_t n = p->n, L = p->L;
	size_t na = p->n_recv;
	double t0 = mrc__mono_s();
	int r = -ENOMEM;
	int64_t *cnt = malloc(2 * (size_t)n * sizeof(*cnt));
	uint32_t *src = malloc((na + 1) * sizeof(*src));
	size_t *cur = malloc((n + 2 * (size_t)L) * sizeof(*cur)), *ord = NULL;
	struct ord_key *key = NULL;
	uint8_t *ob = NULL;
	if (!cnt || !src || !cur)
		goto out;
	p->n_a = na;
	for (uint32_t s = 0; s < n; s++)
		for (size_t j = p->rd[s]; j < p->rd[s] + p->rc[s]; j++)
			src[j] = s;
	struct fwd f = { .p = p, .abuf = abuf, .strideb = strideb, .rowb = rowb,
			 .trail = rowb + p->cfg.top_k * sizeof(struct moe_meta), .src = src,
			 .cur = cur, .at = cur + n, .nm = cur + n + L };
	if ((r = fwd_rows(c, &f)))
		goto out;
	mrc__coll_lap(p->st.t_disp + MRC__MOE_PH_UNPACK, &t0);
	if ((r = fwd_counts(c, p, cnt)))
		goto out;
	mrc__coll_lap(p->st.t_disp + MRC__MOE_PH_COUNTS, &t0);
	r = -ENOMEM;
	ob = mrc__coll_scratch(c, MRC__SCR_OUT, p->n_recv * strideb + 1);
	ord = malloc((p->n_recv + 1) * sizeof(*ord));
	key = malloc((p->n_recv + 1) * sizeof(*key));
	if (!ob || !ord || !key)
		goto out;
	if ((r = mrc__coll_moe_a2av(c, 0, p->cfg.dtype, strideb / mrc_coll_dtype_size(p->cfg.dtype),
				    f.fb, p->bsc, ob, p->brc, p->st.t_disp, MRC__MOE_PH_1)))
		goto out;
	t0 = mrc__mono_s();
	if ((r = recv_order(p, ob, strideb, f.trail, key, ord)))
		goto out;
	for (uint32_t j = 0; j < n; j++)
		p->st.rows_remote += j == p->me ? 0 : p->bsc[j];
	p->st.rows_fwd = p->n_b;
	mrc__coll_lap(p->st.t_disp + MRC__MOE_PH_UNPACK, &t0);
	*out = ob, *ordp = ord;
	ob = NULL, ord = NULL;
out:
	free(cnt), free(src), free(cur), free(ord), free(key);   /* fb, ob: scratch */
	return r;
}

/* Node dedupe's way back: the experts' rows (part, as received) to the
 * proxies; there the rows of each row received across nodes summed in
 * float and rounded to the type; those across to the tokens' ranks
 * (back, as sent). */
int mrc__coll_moe_node_back(struct mrc_coll *c, struct mrc_coll_moe_plan *p, const uint8_t *part,
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
	if ((r = mrc__coll_moe_a2av(c, 0, dt, H, part, p->brc, fb, p->bsc, p->st.t_comb, MRC__MOE_PH_1)))
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
	mrc__coll_lap(p->st.t_comb + MRC__MOE_PH_UNPACK, &t0);
	r = mrc__coll_moe_a2av(c, 0, dt, H, ab, p->rc, back, p->sc, p->st.t_comb, MRC__MOE_PH_2);
out:
	free(first), free(list), free(one);   /* fb, ab: scratch */
	return r;
}

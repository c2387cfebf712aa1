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

int mrc__coll_moe_node_forward(struct mrc_coll *c, struct mrc_coll_moe_plan *p,
			       const uint8_t *abuf, size_t strideb, size_t rowb, uint8_t **out,
			       size_t **ordp)
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
			mrc__coll_prefix(p->bsc, p->bsd, n);
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
	mrc__coll_lap(p->st.t_disp + MRC__MOE_PH_UNPACK, &t0);
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
	mrc__coll_prefix(p->brc, p->brd, n);
	p->n_recv = p->brd[n - 1] + p->brc[n - 1];
	mrc__coll_lap(p->st.t_disp + MRC__MOE_PH_COUNTS, &t0);
	r = -ENOMEM;
	ob = mrc__coll_scratch(c, MRC__SCR_OUT, p->n_recv * strideb + 1);
	ord = malloc((p->n_recv + 1) * sizeof(*ord));
	key = malloc((p->n_recv + 1) * sizeof(*key));
	if (!ob || !ord || !key)
		goto out;
	if ((r = mrc__coll_moe_a2av(c, 0, p->cfg.dtype, strideb / mrc_coll_dtype_size(p->cfg.dtype), fb, p->bsc,
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
	mrc__coll_lap(p->st.t_disp + MRC__MOE_PH_UNPACK, &t0);
	*out = ob, *ordp = ord;
	ob = NULL, ord = NULL;
	r = 0;
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

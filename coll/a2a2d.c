/* The 2-D hierarchical all-to-allv (include/mrc/coll.h): rows to the
 * ranks of a node aggregated at one rank there, which passes them on
 * inside the node; MoE's dispatch and combine use it (moe.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "coll/coll_int.h"
#include "coll/moe_int.h"

/* Displacements after the counts (sc, then sd; rc, then rd in memory) and
 * the packed send and receive buffers of one phase. */
static int phase_bufs(size_t *sc, size_t *rc, uint32_t n, size_t esz, uint8_t **sb, uint8_t **rb)
{
	mrc__coll_prefix(sc, sc + n, n);
	mrc__coll_prefix(rc, rc + n, n);
	*sb = malloc((sc[2 * n - 1] + sc[n - 1]) * esz + 1);
	*rb = malloc((rc[2 * n - 1] + rc[n - 1]) * esz + 1);
	return *sb && *rb ? 0 : -ENOMEM;
}

/* The call's arguments, for its body (req.c). */
struct a2a2d_args {
	uint32_t L;
	const void *sendbuf;
	const size_t *sendcounts, *sdispls, *recvcounts, *rdispls;
	void *recvbuf;
	int dtype;
};

static int a2a2d_body(struct mrc_coll *c, void *arg)
{
	const struct a2a2d_args *a = arg;
	return mrc__coll_a2a2d_run(c, a->L, a->sendbuf, a->sendcounts, a->sdispls, a->recvbuf,
				      a->recvcounts, a->rdispls, a->dtype, NULL);
}

static int a2a2d_start(struct mrc_coll *c, uint32_t L, const void *sendbuf,
		       const size_t *sendcounts, const size_t *sdispls, void *recvbuf,
		       const size_t *recvcounts, const size_t *rdispls, int dtype,
		       struct mrc_coll_req **req)
{
	if (!c || !mrc_coll_dtype_size(dtype) || L == 0 || c->n % L)
		return -EINVAL;
	struct a2a2d_args a = { L, sendbuf, sendcounts, sdispls, recvcounts, rdispls, recvbuf,
				dtype };
	return mrc__coll_submit_body(c, a2a2d_body, &a, sizeof(a), req);
}

int mrc_coll_alltoallv_2d(struct mrc_coll *c, uint32_t L, const void *sendbuf,
			  const size_t *sendcounts, const size_t *sdispls, void *recvbuf,
			  const size_t *recvcounts, const size_t *rdispls, int dtype)
{
	return a2a2d_start(c, L, sendbuf, sendcounts, sdispls, recvbuf, recvcounts, rdispls, dtype,
			   NULL);
}

int mrc_coll_ialltoallv_2d(struct mrc_coll *c, uint32_t L, const void *sendbuf,
			   const size_t *sendcounts, const size_t *sdispls, void *recvbuf,
			   const size_t *recvcounts, const size_t *rdispls, int dtype,
			   struct mrc_coll_req **req)
{
	if (!req)
		return -EINVAL;
	*req = NULL;
	return a2a2d_start(c, L, sendbuf, sendcounts, sdispls, recvbuf, recvcounts, rdispls, dtype,
			   req);
}

/* What every step of one call shares: the shape (n ranks, L per node, G
 * nodes; this rank is local rank l of node g) and everyone's send counts. */
struct a2a2d {
	uint32_t n, L, G, g, l, me;
	size_t esz;
	const int64_t *M;              /* [src * n + dst], in units of `unit` elements */
	size_t unit;
};

static size_t cnt(const struct a2a2d *a, uint32_t s, uint32_t d)
{
	return (size_t)a->M[(size_t)s * a->n + d] * a->unit;
}

/* Phase 1, inside the node: to local rank l2 everything for (g2, l2),
 * packed by g2.  Fills the phase's counts (sc, rc; displacements follow)
 * and buffers (*pb packed, *tb to receive into). */
static int phase1_pack(const struct a2a2d *a, const void *sendbuf, const size_t *sendcounts,
		       const size_t *sdispls, size_t *sc, size_t *rc, uint8_t **pb, uint8_t **tb)
{
	uint32_t L = a->L, G = a->G, g = a->g;
	for (uint32_t l2 = 0; l2 < L; l2++)
		for (uint32_t g2 = 0; g2 < G; g2++) {
			sc[g * L + l2] += sendcounts[g2 * L + l2];
			rc[g * L + l2] += cnt(a, g * L + l2, g2 * L + a->l);
		}
	int r = phase_bufs(sc, rc, a->n, a->esz, pb, tb);
	if (r)
		return r;
	size_t o = 0;
	for (uint32_t l2 = 0; l2 < L; l2++)
		for (uint32_t g2 = 0; g2 < G; g2++) {
			size_t k = sendcounts[g2 * L + l2];
			memcpy(*pb + o * a->esz, (const uint8_t *)sendbuf + sdispls[g2 * L + l2] * a->esz,
			       k * a->esz);
			o += k;
		}
	return 0;
}

/* t1 (phase 1's receive, displacements rd1): by source local rank ls,
 * then g2: block cnt((g,ls), (g2,l)).  Phase 2, across nodes: to (g2, l)
 * the blocks for it from every ls, packed by g2 then ls. */
static int phase2_pack(const struct a2a2d *a, const uint8_t *t1, const size_t *rd1, size_t *sc,
		       size_t *rc, uint8_t **pb, uint8_t **tb)
{
	uint32_t L = a->L, G = a->G, g = a->g, l = a->l;
	for (uint32_t g2 = 0; g2 < G; g2++)
		for (uint32_t ls = 0; ls < L; ls++) {
			sc[g2 * L + l] += cnt(a, g * L + ls, g2 * L + l);
			rc[g2 * L + l] += cnt(a, g2 * L + ls, a->me);
		}
	int r = phase_bufs(sc, rc, a->n, a->esz, pb, tb);
	if (r)
		return r;
	size_t o = 0;
	for (uint32_t g2 = 0; g2 < G; g2++)
		for (uint32_t ls = 0; ls < L; ls++) {
			/* Offset of block (ls, g2) in t1. */
			size_t off = rd1[g * L + ls];
			for (uint32_t gg = 0; gg < g2; gg++)
				off += cnt(a, g * L + ls, gg * L + l);
			size_t k = cnt(a, g * L + ls, g2 * L + l);
			memcpy(*pb + o * a->esz, t1 + off * a->esz, k * a->esz);
			o += k;
		}
	return 0;
}

/* t2 (phase 2's receive): from node g2, blocks by source local rank ls:
 * source (g2, ls), each to its place in the caller's receive buffer.
 * -EPROTO when the caller's receive counts disagree with the senders'. */
static int unpack(const struct a2a2d *a, const uint8_t *t2, void *recvbuf,
		  const size_t *recvcounts, const size_t *rdispls)
{
	size_t o = 0;
	for (uint32_t g2 = 0; g2 < a->G; g2++)
		for (uint32_t ls = 0; ls < a->L; ls++) {
			uint32_t s = g2 * a->L + ls;
			size_t k = cnt(a, s, a->me);
			if (k != recvcounts[s])
				return -EPROTO;
			memcpy((uint8_t *)recvbuf + rdispls[s] * a->esz, t2 + o * a->esz, k * a->esz);
			o += k;
		}
	return 0;
}

/* The two phases and the unpacking, everyone's send counts known (M). */
int mrc__coll_a2a2d_exec(struct mrc_coll *c, uint32_t L, const int64_t *M, size_t unit,
			 const void *sendbuf, const size_t *sendcounts, const size_t *sdispls,
			 void *recvbuf, const size_t *recvcounts, const size_t *rdispls, int dtype,
			 double *ph)
{
	size_t esz = mrc_coll_dtype_size(dtype);
	if (!c || !esz || L < 2 || L >= c->n || c->n % L || !M || !unit)
		return -EINVAL;
	uint32_t n = c->n;
	struct a2a2d a = { .n = n, .L = L, .G = n / L, .g = c->me / L, .l = c->me % L,
			   .me = c->me, .esz = esz, .M = M, .unit = unit };
	double t0 = mrc__mono_s();
	size_t *v = calloc(8 * (size_t)n, sizeof(*v));
	uint8_t *p1 = NULL, *t1 = NULL, *p2 = NULL, *t2 = NULL;
	int r = -ENOMEM;
	if (!v)
		goto out;
	/* Per phase: send counts, displacements, receive counts, displacements. */
	size_t *sc1 = v, *sd1 = v + n, *rc1 = v + 2 * n, *rd1 = v + 3 * n;
	size_t *sc2 = v + 4 * n, *sd2 = v + 5 * n, *rc2 = v + 6 * n, *rd2 = v + 7 * n;
	if ((r = phase1_pack(&a, sendbuf, sendcounts, sdispls, sc1, rc1, &p1, &t1)) ||
	    (r = mrc_coll_alltoallv(c, p1, sc1, sd1, t1, rc1, rd1, dtype)))
		goto out;
	mrc__coll_lap(ph ? ph + MRC__MOE_PH_1 : NULL, &t0);
	if ((r = phase2_pack(&a, t1, rd1, sc2, rc2, &p2, &t2)) ||
	    (r = mrc_coll_alltoallv(c, p2, sc2, sd2, t2, rc2, rd2, dtype)))
		goto out;
	mrc__coll_lap(ph ? ph + MRC__MOE_PH_2 : NULL, &t0);
	if ((r = unpack(&a, t2, recvbuf, recvcounts, rdispls)))
		goto out;
	mrc__coll_lap(ph ? ph + MRC__MOE_PH_UNPACK : NULL, &t0);
out:
	free(v), free(p1), free(t1), free(p2), free(t2);
	return r;
}

int mrc__coll_a2a2d_run(struct mrc_coll *c, uint32_t L, const void *sendbuf,
			   const size_t *sendcounts, const size_t *sdispls, void *recvbuf,
			   const size_t *recvcounts, const size_t *rdispls, int dtype, double *ph)
{
	size_t esz = mrc_coll_dtype_size(dtype);
	if (!c || !esz || L == 0 || c->n % L)
		return -EINVAL;
	if (L == 1 || L == c->n)   /* one level only: nothing to aggregate */
		return mrc_coll_alltoallv(c, sendbuf, sendcounts, sdispls, recvbuf, recvcounts,
					  rdispls, dtype);
	uint32_t n = c->n;
	int r = -ENOMEM;
	double t0 = mrc__mono_s();
	/* Everyone's send counts: the intermediate layouts follow from them. */
	int64_t *M = malloc((size_t)n * n * sizeof(*M)), *mine = malloc(n * sizeof(*mine));
	if (!M || !mine)
		goto out;
	for (uint32_t j = 0; j < n; j++)
		mine[j] = (int64_t)sendcounts[j];
	if ((r = mrc_coll_allgather(c, mine, M, n, MRC_COLL_INT64)))
		goto out;
	mrc__coll_lap(ph ? ph + MRC__MOE_PH_COUNTS : NULL, &t0);
	r = mrc__coll_a2a2d_exec(c, L, M, 1, sendbuf, sendcounts, sdispls, recvbuf, recvcounts,
				 rdispls, dtype, ph);
out:
	free(M), free(mine);
	return r;
}

/* The collectives: argument checks, the schedule for this rank, run. */
#include <errno.h>
#include <stdlib.h>

#include "coll/coll_int.h"

static int check(struct mrc_coll *c, int dtype, int op)
{
	if (!c || mrc_coll_dtype_size(dtype) == 0 || op < 0 || op >= MRC_COLL_NOPS)
		return -EINVAL;
	return c->err;
}

static int run(struct mrc_coll *c, struct mrc__coll_sched *s, int r, const void *in, void *out,
	       int dtype, int op)
{
	if (!r)
		r = mrc__coll_run(c, s, in, out, dtype, op);
	mrc__sched_free(s);
	return r;
}

int mrc_coll_allreduce(struct mrc_coll *c, const void *sendbuf, void *recvbuf, size_t count,
		       int dtype, int op)
{
	int r = check(c, dtype, op);
	if (r)
		return r;
	struct mrc__coll_sched s;
	size_t esz = mrc_coll_dtype_size(dtype);
	r = mrc__coll_allreduce_sched(c, &s, count, esz);
	return run(c, &s, r, sendbuf, recvbuf, dtype, op);
}

int mrc_coll_reduce_scatter(struct mrc_coll *c, const void *sendbuf, void *recvbuf,
			    size_t recvcount, int dtype, int op)
{
	int r = check(c, dtype, op);
	if (r)
		return r;
	struct mrc__coll_sched s;
	r = mrc__sched_reduce_scatter_ring(&s, c->n, c->me, recvcount, mrc_coll_dtype_size(dtype),
					   c->chunk);
	return run(c, &s, r, sendbuf, recvbuf, dtype, op);
}

int mrc_coll_allgather(struct mrc_coll *c, const void *sendbuf, void *recvbuf, size_t sendcount,
		       int dtype)
{
	int r = check(c, dtype, MRC_COLL_SUM);
	if (r)
		return r;
	struct mrc__coll_sched s;
	r = mrc__sched_allgather_ring(&s, c->n, c->me, sendcount, mrc_coll_dtype_size(dtype), c->chunk);
	return run(c, &s, r, sendbuf, recvbuf, dtype, MRC_COLL_SUM);
}

int mrc_coll_broadcast(struct mrc_coll *c, const void *sendbuf, void *recvbuf, size_t count,
		       int dtype, uint32_t root)
{
	int r = check(c, dtype, MRC_COLL_SUM);
	if (r)
		return r;
	if (root >= c->n)
		return -EINVAL;
	struct mrc__coll_sched s;
	r = mrc__sched_broadcast_chain(&s, c->n, c->me, count, mrc_coll_dtype_size(dtype), c->chunk,
				       root);
	return run(c, &s, r, sendbuf, recvbuf, dtype, MRC_COLL_SUM);
}

int mrc_coll_alltoallv(struct mrc_coll *c, const void *sendbuf, const size_t *sendcounts,
		       const size_t *sdispls, void *recvbuf, const size_t *recvcounts,
		       const size_t *rdispls, int dtype)
{
	int r = check(c, dtype, MRC_COLL_SUM);
	if (r)
		return r;
	if (!sendcounts || !sdispls || !recvcounts || !rdispls)
		return -EINVAL;
	struct mrc__coll_sched s;
	/* Spread over the plane-pinned QPs when there are some (a quarter
	 * chunk, so that the split over planes has chunks to adapt with: a
	 * window over all planes is then a quarter of the bytes in flight per
	 * peer, still far above a bandwidth-delay product). */
	r = mrc__sched_alltoallv(&s, c->n, c->me, sendcounts, sdispls, recvcounts, rdispls,
				 mrc_coll_dtype_size(dtype),
				 c->sets > 1 && c->chunk >= 256 ? c->chunk / 4 : c->chunk);
	s.any_plane = 1;
	return run(c, &s, r, sendbuf, recvbuf, dtype, MRC_COLL_SUM);
}

int mrc_coll_alltoall(struct mrc_coll *c, const void *sendbuf, void *recvbuf, size_t count,
		      int dtype)
{
	int r = check(c, dtype, MRC_COLL_SUM);
	if (r)
		return r;
	if (sendbuf == recvbuf && count)
		return -EINVAL;
	size_t *v = malloc(2 * c->n * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (uint32_t j = 0; j < c->n; j++) {
		v[j] = count;
		v[c->n + j] = (size_t)j * count;
	}
	r = mrc_coll_alltoallv(c, sendbuf, v, v + c->n, recvbuf, v, v + c->n, dtype);
	free(v);
	return r;
}

int mrc_coll_barrier(struct mrc_coll *c)
{
	int32_t x = 0;
	return mrc_coll_allreduce(c, &x, &x, 1, MRC_COLL_INT32, MRC_COLL_SUM);
}

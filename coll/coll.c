/* The collectives: argument checks, the schedule for this rank, and its
 * request (req.c): queued and returned (the mrc_coll_i* calls), or
 * waited for (the blocking calls: the same start, then a wait). */
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
	       int dtype, int op, struct mrc_coll_req **req)
{
	if (r) {
		mrc__coll_sched_free(s);
		return r;
	}
	return mrc__coll_submit(c, s, in, out, dtype, op, req);
}

static int allreduce(struct mrc_coll *c, const void *sendbuf, void *recvbuf, size_t count,
		     int dtype, int op, struct mrc_coll_req **req)
{
	int r = check(c, dtype, op);
	if (r)
		return r;
	struct mrc__coll_sched s;
	size_t esz = mrc_coll_dtype_size(dtype);
	r = mrc__coll_allreduce_sched(c, &s, count, esz);
	return run(c, &s, r, sendbuf, recvbuf, dtype, op, req);
}

static int reduce_scatter(struct mrc_coll *c, const void *sendbuf, void *recvbuf,
			  size_t recvcount, int dtype, int op, struct mrc_coll_req **req)
{
	int r = check(c, dtype, op);
	if (r)
		return r;
	struct mrc__coll_sched s;
	r = mrc__coll_sched_reduce_scatter_ring(&s, c->n, c->me, recvcount, mrc_coll_dtype_size(dtype),
					   c->chunk);
	return run(c, &s, r, sendbuf, recvbuf, dtype, op, req);
}

static int allgather(struct mrc_coll *c, const void *sendbuf, void *recvbuf, size_t sendcount,
		     int dtype, struct mrc_coll_req **req)
{
	int r = check(c, dtype, MRC_COLL_SUM);
	if (r)
		return r;
	struct mrc__coll_sched s;
	r = mrc__coll_sched_allgather_ring(&s, c->n, c->me, sendcount, mrc_coll_dtype_size(dtype), c->chunk);
	return run(c, &s, r, sendbuf, recvbuf, dtype, MRC_COLL_SUM, req);
}

static int broadcast(struct mrc_coll *c, const void *sendbuf, void *recvbuf, size_t count,
		     int dtype, uint32_t root, struct mrc_coll_req **req)
{
	int r = check(c, dtype, MRC_COLL_SUM);
	if (r)
		return r;
	if (root >= c->n)
		return -EINVAL;
	struct mrc__coll_sched s;
	r = mrc__coll_sched_broadcast_chain(&s, c->n, c->me, count, mrc_coll_dtype_size(dtype), c->chunk,
				       root);
	return run(c, &s, r, sendbuf, recvbuf, dtype, MRC_COLL_SUM, req);
}

/* The schedule holds the counts as steps: the caller's arrays are read
 * here only. */
static int alltoallv(struct mrc_coll *c, const void *sendbuf, const size_t *sendcounts,
		     const size_t *sdispls, void *recvbuf, const size_t *recvcounts,
		     const size_t *rdispls, int dtype, struct mrc_coll_req **req)
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
	r = mrc__coll_sched_alltoallv(&s, c->n, c->me, sendcounts, sdispls, recvcounts, rdispls,
				 mrc_coll_dtype_size(dtype),
				 c->sets > 1 && c->chunk >= 256 ? c->chunk / 4 : c->chunk);
	s.any_plane = 1;
	return run(c, &s, r, sendbuf, recvbuf, dtype, MRC_COLL_SUM, req);
}

static int alltoall(struct mrc_coll *c, const void *sendbuf, void *recvbuf, size_t count,
		    int dtype, struct mrc_coll_req **req)
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
	r = alltoallv(c, sendbuf, v, v + c->n, recvbuf, v, v + c->n, dtype, req);
	free(v);
	return r;
}

int mrc_coll_allreduce(struct mrc_coll *c, const void *sendbuf, void *recvbuf, size_t count,
		       int dtype, int op)
{
	return allreduce(c, sendbuf, recvbuf, count, dtype, op, NULL);
}

int mrc_coll_reduce_scatter(struct mrc_coll *c, const void *sendbuf, void *recvbuf,
			    size_t recvcount, int dtype, int op)
{
	return reduce_scatter(c, sendbuf, recvbuf, recvcount, dtype, op, NULL);
}

int mrc_coll_allgather(struct mrc_coll *c, const void *sendbuf, void *recvbuf, size_t sendcount,
		       int dtype)
{
	return allgather(c, sendbuf, recvbuf, sendcount, dtype, NULL);
}

int mrc_coll_broadcast(struct mrc_coll *c, const void *sendbuf, void *recvbuf, size_t count,
		       int dtype, uint32_t root)
{
	return broadcast(c, sendbuf, recvbuf, count, dtype, root, NULL);
}

int mrc_coll_alltoallv(struct mrc_coll *c, const void *sendbuf, const size_t *sendcounts,
		       const size_t *sdispls, void *recvbuf, const size_t *recvcounts,
		       const size_t *rdispls, int dtype)
{
	return alltoallv(c, sendbuf, sendcounts, sdispls, recvbuf, recvcounts, rdispls, dtype, NULL);
}

int mrc_coll_alltoall(struct mrc_coll *c, const void *sendbuf, void *recvbuf, size_t count,
		      int dtype)
{
	return alltoall(c, sendbuf, recvbuf, count, dtype, NULL);
}

int mrc_coll_barrier(struct mrc_coll *c)
{
	int32_t x = 0;
	return mrc_coll_allreduce(c, &x, &x, 1, MRC_COLL_INT32, MRC_COLL_SUM);
}

/* ---- non-blocking: the same starts, the request handed back ---------- */

static int need(struct mrc_coll_req **req)
{
	if (!req)
		return -EINVAL;
	*req = NULL;
	return 0;
}

int mrc_coll_iallreduce(struct mrc_coll *c, const void *sendbuf, void *recvbuf, size_t count,
			int dtype, int op, struct mrc_coll_req **req)
{
	return need(req) ?: allreduce(c, sendbuf, recvbuf, count, dtype, op, req);
}

int mrc_coll_ireduce_scatter(struct mrc_coll *c, const void *sendbuf, void *recvbuf,
			     size_t recvcount, int dtype, int op, struct mrc_coll_req **req)
{
	return need(req) ?: reduce_scatter(c, sendbuf, recvbuf, recvcount, dtype, op, req);
}

int mrc_coll_iallgather(struct mrc_coll *c, const void *sendbuf, void *recvbuf, size_t sendcount,
			int dtype, struct mrc_coll_req **req)
{
	return need(req) ?: allgather(c, sendbuf, recvbuf, sendcount, dtype, req);
}

int mrc_coll_ibroadcast(struct mrc_coll *c, const void *sendbuf, void *recvbuf, size_t count,
			int dtype, uint32_t root, struct mrc_coll_req **req)
{
	return need(req) ?: broadcast(c, sendbuf, recvbuf, count, dtype, root, req);
}

int mrc_coll_ialltoallv(struct mrc_coll *c, const void *sendbuf, const size_t *sendcounts,
			const size_t *sdispls, void *recvbuf, const size_t *recvcounts,
			const size_t *rdispls, int dtype, struct mrc_coll_req **req)
{
	return need(req) ?: alltoallv(c, sendbuf, sendcounts, sdispls, recvbuf, recvcounts,
				      rdispls, dtype, req);
}

int mrc_coll_ialltoall(struct mrc_coll *c, const void *sendbuf, void *recvbuf, size_t count,
		       int dtype, struct mrc_coll_req **req)
{
	return need(req) ?: alltoall(c, sendbuf, recvbuf, count, dtype, req);
}

/* The barrier's value lives on its body's stack. */
static int barrier_body(struct mrc_coll *c, void *arg)
{
	(void)arg;
	return mrc_coll_barrier(c);
}

int mrc_coll_ibarrier(struct mrc_coll *c, struct mrc_coll_req **req)
{
	if (!c)
		return -EINVAL;
	return need(req) ?: mrc__coll_submit_body(c, barrier_body, NULL, 0, req);
}

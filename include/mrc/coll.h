/* libmrc-coll: collectives over libmrc (a communicator of N ranks over the
 * local mrcd of each host, all-reduce and friends on host memory).
 *
 *   #include <mrc/coll.h>      -lmrc-coll -lmrc   (pkg-config mrc-coll)
 *
 * Bootstrap needs nothing beyond mrcd: every rank knows the job's size, its
 * own rank, a service id for the job and the fabric host of rank 0 (or
 * MRC_COLL_HOST_ANY: the ranks probe every host for rank 0's listener).
 * mrc_coll_cfg_from_env reads them from the environment as MPI launchers
 * set it (docs/coll.md).  Rank 0 listens on the service id; every rank
 * connects to it, sends the addresses of its QPs, and gets everyone's
 * back; the full mesh is then connected out of band (no connection waits
 * on another).
 *
 * Errors: functions return 0 or a negative errno.  An error on any rank (a
 * failed work request, a peer that makes no progress for timeout_ms, an
 * explicit mrc_coll_abort) aborts the communicator: the rank sends an
 * abort message to every peer, and every rank's pending or next call
 * returns an error (-ECONNABORTED on the ranks that were told, the
 * original error on the rank that saw it).  No call waits longer than
 * timeout_ms without progress, so every rank returns within timeout_ms of
 * the failure plus one message delivery.  After an abort only
 * mrc_coll_destroy is useful.
 *
 * Thread safety: one communicator is used by one thread at a time.
 * Several communicators (e.g. several ranks as threads of one process)
 * are independent.
 *
 * Buffers are host memory (any address).  GPU buffers come later through
 * mrc/gpu.h (docs/coll.md). */
#ifndef MRC_COLL_H
#define MRC_COLL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct mrc_coll;

enum mrc_coll_dtype {
	MRC_COLL_INT32, MRC_COLL_INT64, MRC_COLL_FLOAT32, MRC_COLL_FLOAT64,
	MRC_COLL_FLOAT16,          /* IEEE binary16 */
	MRC_COLL_BFLOAT16,         /* upper half of a binary32 */
	MRC_COLL_NTYPES
};
enum mrc_coll_op { MRC_COLL_SUM, MRC_COLL_PROD, MRC_COLL_MIN, MRC_COLL_MAX, MRC_COLL_NOPS };

/* Bytes per element (0 for an unknown type); names as nccl-tests prints
 * them ("int32", "float", "half", "bfloat16"...; "sum", "prod"...). */
size_t mrc_coll_dtype_size(int dtype);
const char *mrc_coll_dtype_name(int dtype);
const char *mrc_coll_op_name(int op);

#define MRC_COLL_HOST_ANY UINT32_MAX

struct mrc_coll_cfg {
	const char *sock;          /* mrcd socket (NULL: $MRC_SOCKET or default) */
	uint32_t nranks, rank;
	uint32_t root_host;        /* fabric host index of rank 0, or MRC_COLL_HOST_ANY */
	uint32_t sid;              /* the job's service id (rank 0 listens on it) */
	uint32_t chunk_bytes;      /* pipeline chunk (0: 512 KiB; multiple of 64) */
	uint32_t window;           /* chunks in flight per peer (0: 4; at most 64) */
	int timeout_ms;            /* no progress for this long: abort (0: 30000) */
};

/* Fills cfg from the environment: size and rank from MRC_COLL_SIZE /
 * MRC_COLL_RANK, else OMPI_COMM_WORLD_SIZE / _RANK (Open MPI), PMI_SIZE /
 * PMI_RANK (MPICH, Hydra), SLURM_NTASKS / SLURM_PROCID; MRC_COLL_ROOT_HOST
 * (default: any), MRC_COLL_SID (default 7400), MRC_COLL_CHUNK,
 * MRC_COLL_WINDOW, MRC_COLL_TIMEOUT_MS; sock from MRC_SOCKET.  -ENOENT
 * when no size and rank are found, -EINVAL when one is malformed. */
int mrc_coll_cfg_from_env(struct mrc_coll_cfg *cfg);

/* Collective: every rank calls it with the same nranks, sid and
 * root_host.  Returns when the mesh is connected (or -ETIMEDOUT after
 * timeout_ms without it). */
int mrc_coll_init(const struct mrc_coll_cfg *cfg, struct mrc_coll **out);
/* Waits (bounded by timeout_ms) until this rank's messages are placed,
 * then frees everything. */
void mrc_coll_destroy(struct mrc_coll *c);
uint32_t mrc_coll_rank(const struct mrc_coll *c);
uint32_t mrc_coll_size(const struct mrc_coll *c);
/* Aborts the communicator on every rank (err < 0 is what this rank's
 * calls return from now on).  Returns err. */
int mrc_coll_abort(struct mrc_coll *c, int err);
/* 0, or the error that aborted the communicator (polls the peers once). */
int mrc_coll_error(struct mrc_coll *c);

/* Collectives.  Counts are elements.  In place: sendbuf == recvbuf
 * (all-reduce, broadcast), sendbuf == recvbuf + rank * count elements
 * (all-gather), recvbuf == sendbuf + rank * recvcount elements
 * (reduce-scatter), as NCCL.  All-to-all(v) must be out of place. */
int mrc_coll_allreduce(struct mrc_coll *c, const void *sendbuf, void *recvbuf, size_t count,
		       int dtype, int op);
/* sendbuf holds nranks * recvcount elements; rank r gets the reduction of
 * block r. */
int mrc_coll_reduce_scatter(struct mrc_coll *c, const void *sendbuf, void *recvbuf,
			    size_t recvcount, int dtype, int op);
/* recvbuf gets nranks * sendcount elements, block r from rank r. */
int mrc_coll_allgather(struct mrc_coll *c, const void *sendbuf, void *recvbuf, size_t sendcount,
		       int dtype);
/* recvbuf of every rank gets root's sendbuf (sendbuf is read on root only). */
int mrc_coll_broadcast(struct mrc_coll *c, const void *sendbuf, void *recvbuf, size_t count,
		       int dtype, uint32_t root);
/* Block j of sendbuf (count elements) goes to rank j, into block r of its
 * recvbuf. */
int mrc_coll_alltoall(struct mrc_coll *c, const void *sendbuf, void *recvbuf, size_t count,
		      int dtype);
/* Rank r sends sendcounts[j] elements at sdispls[j] to rank j, which
 * receives them at its rdispls[r] (recvcounts[r] must match). */
int mrc_coll_alltoallv(struct mrc_coll *c, const void *sendbuf, const size_t *sendcounts,
		       const size_t *sdispls, void *recvbuf, const size_t *recvcounts,
		       const size_t *rdispls, int dtype);
int mrc_coll_barrier(struct mrc_coll *c);

#ifdef __cplusplus
}
#endif
#endif

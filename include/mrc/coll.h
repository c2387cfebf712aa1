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
 * Non-blocking forms of every call (start, then test or wait): below,
 * "Non-blocking calls".
 *
 * Thread safety: one communicator is used by one thread at a time.
 * Several communicators (e.g. several ranks as threads of one process)
 * are independent.
 *
 * Buffers are host memory (any address), or device (GPU) memory once
 * mrc_coll_set_memory allows it (below; docs/coll.md "GPU buffers"). */
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
	int algo;                  /* all-reduce: MRC_COLL_ALGO_* */
	/* The fabric, for the plane-aware multi-tree (FOREST) all-reduce:
	 * planes (0: 1; at most 16) and hosts per leaf switch (0: 1; rank r's
	 * leaf is its host / hosts_per_leaf).  With planes > 1 every peer
	 * gets one more QP per plane, pinned to it (mrc_qp_cfg.plane_mask),
	 * and the receive and staging regions grow by the same factor
	 * (1 + planes); the all-to-alls spread their chunks over those QPs
	 * by which has room. */
	uint32_t planes, hosts_per_leaf;
};
/* AUTO picks by size (docs/coll.md "Choosing by size"): the double
 * binary tree up to 64 KiB (latency: 2 log2 N steps), the ring above
 * (2(N-1)/N of the data per rank, one message per step).  FOREST, the
 * plane-aware multi-tree, only when asked: it has not measured faster. */
enum { MRC_COLL_ALGO_AUTO, MRC_COLL_ALGO_RING, MRC_COLL_ALGO_TREE, MRC_COLL_ALGO_FOREST };

/* Fills cfg from the environment: size and rank from MRC_COLL_SIZE /
 * MRC_COLL_RANK, else OMPI_COMM_WORLD_SIZE / _RANK (Open MPI), PMI_SIZE /
 * PMI_RANK (MPICH, Hydra), SLURM_NTASKS / SLURM_PROCID; MRC_COLL_ROOT_HOST
 * (default: any), MRC_COLL_SID (default 7400), MRC_COLL_CHUNK,
 * MRC_COLL_WINDOW, MRC_COLL_TIMEOUT_MS, MRC_COLL_ALGO (auto, ring, tree
 * or forest), MRC_COLL_PLANES, MRC_COLL_HOSTS_PER_LEAF; sock from
 * MRC_SOCKET.  -ENOENT
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

/* Where the collectives' buffers may live.  HOST (the default): host
 * memory, no CUDA call is made.  AUTO: each call asks CUDA where sendbuf
 * and recvbuf are (cudaPointerGetAttributes) and uses device copies and
 * reduction kernels when they are device memory (both must be on the same
 * side, else -EINVAL).  DEVICE: every buffer is device memory, without
 * asking.  Device data is staged through the communicator's host regions
 * (cudaMemcpyAsync on a stream of its own, synchronous per chunk), and
 * reductions run as kernels on the current device.  -ENOSYS: libmrc-coll
 * was built without CUDA; -ENODEV: no GPU.  MoE dispatch/combine and
 * mrc_coll_alltoallv_2d take host memory only. */
enum { MRC_COLL_MEM_HOST, MRC_COLL_MEM_AUTO, MRC_COLL_MEM_DEVICE };
int mrc_coll_set_memory(struct mrc_coll *c, int mem);

/* 2-D hierarchical all-to-allv (Tutel): with local_ranks ranks per node
 * (consecutive ranks; nranks a multiple of it), first an exchange inside
 * each node that gathers, at local rank l, everything its node sends to
 * local rank l of any node, then one exchange across nodes between equal
 * local ranks: each pair of nodes exchanges one aggregated message per
 * local rank instead of local_ranks^2 small ones.  Same arguments and
 * result as mrc_coll_alltoallv (counts are all exchanged first). */
int mrc_coll_alltoallv_2d(struct mrc_coll *c, uint32_t local_ranks, const void *sendbuf,
			  const size_t *sendcounts, const size_t *sdispls, void *recvbuf,
			  const size_t *recvcounts, const size_t *rdispls, int dtype);

/* ---- MoE dispatch and combine -------------------------------------------
 * Experts 0..n_experts-1 are placed in blocks: rank r holds experts
 * r*E/N .. (r+1)*E/N - 1 (n_experts a multiple of nranks).  Each token
 * goes to top_k experts (topk_idx[t*top_k + k]; -1: no expert) with
 * weights topk_weights[t*top_k + k].
 *
 * Capacity and drop policy: each rank may send each expert at most
 * cap = ceil(capacity_factor * n_tokens * top_k / n_experts) tokens
 * (capacity_factor <= 0: no limit).  Slots go first to every token's
 * first choice, then to second choices, and so on, each round in token
 * order (so a token's first choice is dropped only when the expert is
 * full of other first choices).  A dropped (token, expert) pair is not
 * sent; in the combine it contributes nothing and the token's other
 * weights are not renormalised (as GShard and Tutel).
 *
 * A token crosses to a rank once, however many of that rank's experts it
 * kept (as DeepEP): with its kept pairs' local experts and weights as
 * metadata; a token none of whose pairs for a rank was kept does not go
 * there.  The capacity counts pairs, not these rows.
 *
 * 2-D (local_ranks = L, 1 < L < nranks; nodes of L consecutive ranks): a
 * token crosses to a node once, however many of that node's ranks hold
 * its experts, to the rank there whose local rank is the sender's; that
 * rank forwards it inside the node, once to each rank with one of its
 * experts.  The combine retraces this, the forwarding rank summing the
 * node's rows for the token (in float, rounded to the type) before they
 * cross back.  L = nranks (one node) is the flat exchange. */
struct mrc_coll_moe_cfg {
	uint32_t n_experts, top_k;
	size_t hidden;             /* elements per token */
	int dtype;                 /* MRC_COLL_FLOAT32, _FLOAT16 or _BFLOAT16 */
	double capacity_factor;
	uint32_t local_ranks;      /* 0: flat all-to-all; else 2-D with this many ranks per
				    * node (see below) */
};
struct mrc_coll_moe_plan;

/* The layout step (DeepEP's get_dispatch_layout), local, before capacity:
 * tokens per rank (a token counted once per rank it goes to: the rows the
 * dispatch sends when nothing is dropped), tokens per expert, and
 * in_rank[t * nranks + r] = 1 when token t goes to rank r.  Any output
 * may be NULL. */
int mrc_coll_moe_layout(uint32_t nranks, uint32_t n_experts, uint32_t top_k, size_t n_tokens,
			const int32_t *topk_idx, uint32_t *tokens_per_rank,
			uint32_t *tokens_per_expert, uint8_t *in_rank);
/* Sends every token to each rank holding an expert of a kept pair, once
 * per rank.  On return *expert_in (malloc'd; free() it) holds this rank's
 * experts' input tokens grouped by local expert (all of expert 0's, then
 * expert 1's...; within an expert by source rank, then in the source's
 * token order), a token chosen for two local experts appearing in both,
 * and counts[e] (an array of E/N) how many each local expert got.  *plan
 * remembers the routing and weights for the combine. */
int mrc_coll_moe_dispatch(struct mrc_coll *c, const struct mrc_coll_moe_cfg *cfg,
			  size_t n_tokens, const int32_t *topk_idx, const float *topk_weights,
			  const void *tokens, struct mrc_coll_moe_plan **plan, void **expert_in,
			  size_t *counts);
/* mrc_coll_moe_dispatch, except that *expert_in is the communicator's:
 * memory it keeps and reuses from call to call, so that a layer run every
 * step neither allocates its experts' input nor takes a page fault per
 * page of it each time.  It stays valid until the next dispatch on c or
 * mrc_coll_destroy(c); do not free it.  The experts may write their output
 * over it (expert_out == *expert_in in the combine). */
int mrc_coll_moe_dispatch_kept(struct mrc_coll *c, const struct mrc_coll_moe_cfg *cfg,
			       size_t n_tokens, const int32_t *topk_idx,
			       const float *topk_weights, const void *tokens,
			       struct mrc_coll_moe_plan **plan, void **expert_in, size_t *counts);
/* Returns the experts' outputs (expert_out: the layout of expert_in) to
 * the tokens' ranks and combines: out[t] = sum over kept k of
 * topk_weights[t*top_k + k] * output of (t, k).  Each expert rank sends
 * back one row per token, the weighted sum over its experts computed in
 * float and rounded to the type (2-D: the node's such rows added in float
 * and rounded again); the token's rank adds these rows in float and rounds
 * once more.  The plan records the combine's statistics. */
int mrc_coll_moe_combine(struct mrc_coll *c, struct mrc_coll_moe_plan *plan,
			 const void *expert_out, void *out);
void mrc_coll_moe_plan_free(struct mrc_coll_moe_plan *plan);

/* ---- Non-blocking calls ---------------------------------------------------
 * Every call above has a non-blocking form, mrc_coll_i<name> (MoE:
 * mrc_coll_moe_i<name>), taking the same arguments and a request: it
 * starts the call and returns; mrc_coll_test and mrc_coll_wait complete
 * it (as MPI_I<name>, MPI_Test, MPI_Wait).  The blocking calls are the
 * same start followed by mrc_coll_wait.
 *
 * Order: the calls of one communicator, blocking or not, run in the
 * order they were started, one after the other (as NCCL's on one stream
 * and MPI's collectives), and complete in that order; every rank must
 * start the same calls in the same order.  Testing or waiting on any
 * request moves the communicator's calls on, earlier ones first.  Several
 * may be in flight: at most max_inflight (default
 * MRC_COLL_INFLIGHT_DEFAULT) started and not complete; one more is
 * refused with -EAGAIN (nothing started: test or wait, then start it
 * again).  A blocking call waits for room instead.
 *
 * Overlap: while the caller computes, the chunks in flight move (mrcd
 * places them); the next ones are posted when the caller tests (or
 * waits).  A compute loop that tests every few hundred microseconds keeps
 * the pipeline full (docs/coll.md "Non-blocking calls").
 *
 * Buffers (and for the 2-D all-to-allv and MoE, the count, routing and
 * plan arrays and cfg's pointers) belong to the call until it completes:
 * do not touch them before.  The all-to-allv's count arrays are read at
 * the start only.  mrc_coll_moe_idispatch_kept's *expert_in is the
 * communicator's memory from when that dispatch runs until the next
 * dispatch_kept on c runs: do not start another before you are done
 * with it.  *plan, *expert_in and counts are set when the dispatch
 * completes.
 *
 * Errors: a start refuses bad arguments at once (-EINVAL; nothing
 * queued).  Once started, a call's error (its own, or the communicator's
 * abort: a failed work request, timeout_ms without progress, a peer's
 * abort) completes it and every later call of the communicator with that
 * error: test and wait return it, never hang (the bound of the blocking
 * calls, above).  mrc_coll_destroy completes the calls still in flight
 * with -ECANCELED (aborting the communicator: the peers cannot complete
 * them either); their requests stay valid for test or wait.
 *
 * GPU buffers (mrc_coll_set_memory) go through the same path: each call's
 * buffers are checked at its start and its copies and reductions picked
 * when it runs. */
struct mrc_coll_req;
#define MRC_COLL_INFLIGHT_DEFAULT 32
#define MRC_COLL_MAX_INFLIGHT 4096

int mrc_coll_iallreduce(struct mrc_coll *c, const void *sendbuf, void *recvbuf, size_t count,
			int dtype, int op, struct mrc_coll_req **req);
int mrc_coll_ireduce_scatter(struct mrc_coll *c, const void *sendbuf, void *recvbuf,
			     size_t recvcount, int dtype, int op, struct mrc_coll_req **req);
int mrc_coll_iallgather(struct mrc_coll *c, const void *sendbuf, void *recvbuf, size_t sendcount,
			int dtype, struct mrc_coll_req **req);
int mrc_coll_ibroadcast(struct mrc_coll *c, const void *sendbuf, void *recvbuf, size_t count,
			int dtype, uint32_t root, struct mrc_coll_req **req);
int mrc_coll_ialltoall(struct mrc_coll *c, const void *sendbuf, void *recvbuf, size_t count,
		       int dtype, struct mrc_coll_req **req);
int mrc_coll_ialltoallv(struct mrc_coll *c, const void *sendbuf, const size_t *sendcounts,
			const size_t *sdispls, void *recvbuf, const size_t *recvcounts,
			const size_t *rdispls, int dtype, struct mrc_coll_req **req);
int mrc_coll_ialltoallv_2d(struct mrc_coll *c, uint32_t local_ranks, const void *sendbuf,
			   const size_t *sendcounts, const size_t *sdispls, void *recvbuf,
			   const size_t *recvcounts, const size_t *rdispls, int dtype,
			   struct mrc_coll_req **req);
int mrc_coll_ibarrier(struct mrc_coll *c, struct mrc_coll_req **req);
int mrc_coll_moe_idispatch(struct mrc_coll *c, const struct mrc_coll_moe_cfg *cfg,
			   size_t n_tokens, const int32_t *topk_idx, const float *topk_weights,
			   const void *tokens, struct mrc_coll_moe_plan **plan, void **expert_in,
			   size_t *counts, struct mrc_coll_req **req);
int mrc_coll_moe_idispatch_kept(struct mrc_coll *c, const struct mrc_coll_moe_cfg *cfg,
				size_t n_tokens, const int32_t *topk_idx,
				const float *topk_weights, const void *tokens,
				struct mrc_coll_moe_plan **plan, void **expert_in, size_t *counts,
				struct mrc_coll_req **req);
int mrc_coll_moe_icombine(struct mrc_coll *c, struct mrc_coll_moe_plan *plan,
			  const void *expert_out, void *out, struct mrc_coll_req **req);

/* ---- Pre-gated MoE dispatch and expert fetch (docs/coll.md "Pre-gated
 * dispatch") ----------------------------------------------------------------
 * mrc_coll_moe_ipregate takes the next layer's routing as a pre-gate
 * predicts it (topk_idx as the dispatch's, n_tokens tokens) and does,
 * while the caller computes, what a dispatch does before it moves tokens:
 * the capacity and rows per rank, the exchange of those counts, the send
 * and receive buffers sized (the QPs are connected since
 * mrc_coll_init).  *pg is allocated at the start, so that the dispatch
 * can be started at once; it is filled when the call runs.
 *
 * mrc_coll_moe_dispatch_pregated then takes the actual routing, weights
 * and tokens (n_tokens and cfg those of the pre-gate) and only moves
 * data: each rank sends every other as many rows as predicted (padded
 * when it has fewer) with one header row saying how many are real and
 * how many follow; rows past the prediction (mispredicted experts) go in
 * a second, correction exchange that carries those rows only.  The
 * result (*plan, *expert_in, counts, and the combine after it) is that of
 * mrc_coll_moe_dispatch with the actual routing, element by element;
 * *expert_in is the communicator's, as with mrc_coll_moe_dispatch_kept.
 * MRC_COLL_PREGATE_SLACK (percent, read at the pre-gate's start) adds
 * room for mispredicted rows to each predicted count.  A pre-gate may
 * serve several dispatches (each against the same prediction); free it
 * after its last one completes.  With cfg->local_ranks = L (1 < L <
 * nranks) the layout is 2-D (Tutel's: rows per rank through
 * mrc_coll_alltoallv_2d, inside the node then across): the pre-gate
 * gathers every rank's predicted counts (the 2-D exchange's count step),
 * the dispatch's main exchange is 2-D, its correction flat; the experts'
 * input and counts are those of mrc_coll_moe_dispatch (node dedupe's
 * equal them), and the combine goes back through the 2-D all-to-allv
 * (one rounding per rank, as flat: no node sum). */
struct mrc_coll_moe_pregate;
int mrc_coll_moe_pregate(struct mrc_coll *c, const struct mrc_coll_moe_cfg *cfg,
			 size_t n_tokens, const int32_t *topk_idx,
			 struct mrc_coll_moe_pregate **pg);
int mrc_coll_moe_ipregate(struct mrc_coll *c, const struct mrc_coll_moe_cfg *cfg,
			  size_t n_tokens, const int32_t *topk_idx,
			  struct mrc_coll_moe_pregate **pg, struct mrc_coll_req **req);
int mrc_coll_moe_dispatch_pregated(struct mrc_coll *c, struct mrc_coll_moe_pregate *pg,
				   const int32_t *topk_idx, const float *topk_weights,
				   const void *tokens, struct mrc_coll_moe_plan **plan,
				   void **expert_in, size_t *counts);
int mrc_coll_moe_idispatch_pregated(struct mrc_coll *c, struct mrc_coll_moe_pregate *pg,
				    const int32_t *topk_idx, const float *topk_weights,
				    const void *tokens, struct mrc_coll_moe_plan **plan,
				    void **expert_in, size_t *counts, struct mrc_coll_req **req);
/* Rows this pre-gate predicted this rank sends to each rank (nranks
 * entries, valid once it completed): 0, or -EINVAL. */
int mrc_coll_moe_pregate_rows(const struct mrc_coll_moe_pregate *pg, size_t *rows_to);
void mrc_coll_moe_pregate_free(struct mrc_coll_moe_pregate *pg);

/* Expert offloading: fetches into this rank's memory the weights of the
 * experts it will need, from their owners (expert e is owned by rank
 * e / (n_experts / nranks), as the dispatch places them).  owned: this
 * rank's n_experts / nranks blobs of blob_bytes (a multiple of 4), in
 * expert order; need[e] != 0 for each expert wanted (n_experts entries);
 * fetched: the wanted blobs in expert order, one after another (a wanted
 * expert of this rank's own is copied).  A needs exchange (one integer per
 * expert) then the blobs, as one all-to-allv: started ahead of the layer
 * with the non-blocking form, it overlaps compute. */
int mrc_coll_moe_fetch_experts(struct mrc_coll *c, uint32_t n_experts, size_t blob_bytes,
			       const void *owned, const uint8_t *need, void *fetched);
int mrc_coll_moe_ifetch_experts(struct mrc_coll *c, uint32_t n_experts, size_t blob_bytes,
				const void *owned, const uint8_t *need, void *fetched,
				struct mrc_coll_req **req);

/* -EINPROGRESS: not complete yet (the communicator's calls were moved on
 * once, without waiting).  Otherwise the call is complete, the request
 * freed, and this is its result: 0 or -errno. */
int mrc_coll_test(struct mrc_coll_req *req);
/* Waits (bounded as the blocking calls) until the call is complete, frees
 * the request and returns its result. */
int mrc_coll_wait(struct mrc_coll_req *req);
/* mrc_coll_wait on each non-NULL reqs[i] in turn (set to NULL): 0, or the
 * first error. */
int mrc_coll_waitall(struct mrc_coll_req **reqs, size_t n);
/* Moves the communicator's calls on once, without waiting: 0, or the
 * error that aborted it. */
int mrc_coll_progress(struct mrc_coll *c);
/* At most n (1 .. MRC_COLL_MAX_INFLIGHT) calls in flight on c: 0 or
 * -EINVAL.  Fewer than are in flight now only refuses new starts. */
int mrc_coll_set_max_inflight(struct mrc_coll *c, uint32_t n);
/* Calls started and not yet complete. */
uint32_t mrc_coll_inflight(const struct mrc_coll *c);

/* ---- stragglers (docs/coll.md "Stragglers", mrc_coll_straggler(3)) ----
 * Every rank stamps each collective it runs (its start, its length, and
 * how long each chunk it sent took to be delivered); nothing extra goes on
 * the wire until the application asks.  mrc_coll_straggler is itself a
 * collective (every rank calls it, in the same order as the others): one
 * all-gather of each rank's stamps of its last MRC_COLL_STRAG_CALLS calls
 * since the previous mrc_coll_straggler and of its QPs' retransmissions
 * since then (from mrcd); every rank then names the same straggler of
 * those calls (a step's worth), in *rec: the end of most lossy QPs,
 * else the latest starter, else (no counters) the slowest paths.
 * 0, -ENODATA when no call ran since the last one, -EBUSY while
 * non-blocking calls are in flight (wait for them first), or the
 * all-gather's error. */
#define MRC_COLL_STRAG_CALLS 8
enum mrc_coll_strag_cause {
	MRC_COLL_STRAG_NONE,       /* nobody held the call back measurably */
	MRC_COLL_STRAG_COMPUTE,    /* rank started the call late */
	MRC_COLL_STRAG_NETWORK,    /* rank's path to peer_rank lost packets (or was slow) */
};
struct mrc_coll_straggler {
	uint64_t call;             /* which call: counted from 0 at init, the same on every rank */
	int cause;                 /* MRC_COLL_STRAG_* */
	uint32_t rank, host;       /* the rank that held the call back, its fabric host */
	/* NETWORK: rank is at one end of most of the lossy QPs (a host
	 * whose link loses packets is at one end of every one), or without
	 * counters of most slow paths; peer_rank is the other end of its
	 * lossiest (slowest) QP, which rank sent on when
	 * rank_sends (else peer_rank did); qpn is the sender's QP (the
	 * sender's host's `mrcctl qps QPN` lists its packets and losses per
	 * path) and plane the plane that QP is pinned to (-1: it sprays over
	 * every plane). */
	uint32_t peer_rank, peer_host, qpn;
	int32_t plane;
	uint32_t rank_sends;
	uint64_t call_us;          /* the call's median length over the ranks */
	uint64_t late_us;          /* COMPUTE: how late it started (vs the median rank);
	                              NETWORK: the slow path's mean chunk delivery */
	uint64_t typical_us;       /* NETWORK: the median rank's median QP's mean delivery */
	/* NETWORK named by losses: the path's retransmissions and packets
	 * sent since the previous mrc_coll_straggler (mrcd's counters of
	 * the QP; late_us 0 unless it was also the sender's slowest); 0 when
	 * named by delivery times alone. */
	uint64_t retx, pkts;
};
int mrc_coll_straggler(struct mrc_coll *c, struct mrc_coll_straggler *rec);
/* "none", "compute", "network" ("?" otherwise). */
const char *mrc_coll_straggler_cause_name(int cause);

#ifdef __cplusplus
}
#endif
#endif

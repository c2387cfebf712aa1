/* libmrc-coll internals: the memory operations table, schedules, and the
 * executor that runs a schedule over the communicator's QPs. */
#ifndef MRC_COLL_INT_H
#define MRC_COLL_INT_H

#include <stddef.h>
#include <stdint.h>

#include "mrc/coll.h"

/* ---- memory operations ------------------------------------------------
 * Every byte the collectives move or combine locally goes through this
 * table, so GPU buffers plug in device copies and reduction kernels
 * without touching the schedules or the executor: mrc__coll_host_ops, and
 * the device table of coll/memops_dev.c (coll/devmem.h). */
struct mrc__coll_memops {
	void (*copy)(void *dst, const void *src, size_t bytes);
	/* dst[i] = a[i] op b[i] for i < count; dst may equal a or b. */
	void (*reduce)(void *dst, const void *a, const void *b, size_t count, int dtype, int op);
	/* MoE combine: acc[i] += w * x[i] (x float32, float16 or bfloat16,
	 * widened to float), and dst[i] = acc[i] rounded to the type. */
	void (*axpy)(float *acc, const void *x, float w, size_t count, int dtype);
	void (*from_float)(void *dst, const float *acc, size_t count, int dtype);
};
extern const struct mrc__coll_memops mrc__coll_host_ops;
void mrc__coll_reduce(void *dst, const void *a, const void *b, size_t count, int dtype, int op);
void mrc__coll_axpy(float *acc, const void *x, float w, size_t count, int dtype);
void mrc__coll_from_float(void *dst, const float *acc, size_t count, int dtype);
/* Conversions the tests and the perf tool share (round to nearest even). */
float mrc__coll_h2f(uint16_t h);
uint16_t mrc__coll_f2h(float f);
float mrc__coll_bf2f(uint16_t h);
uint16_t mrc__coll_f2bf(float f);

/* ---- schedules --------------------------------------------------------
 * A schedule is one rank's part of a collective as a list of steps over
 * three buffers (the caller's send and receive buffers and a temporary).
 * SEND steps go to one peer in order; the k-th SEND from rank a to rank b
 * is matched with the k-th RECV of b from a, and both sides agree on its
 * length.  A step waits for the step `dep` (for a SEND: the RECV that
 * produced its data; for a RECV: one whose result it combines with);
 * RECV steps combine the arriving chunk into dst: copy, or
 * dst = src op chunk.  Steps are at most one chunk long. */
enum { SB_IN, SB_OUT, SB_TMP, SB_NONE };
enum { SK_SEND, SK_RECV, SK_COPY };
struct mrc__coll_step {
	uint8_t kind;              /* SK_* */
	uint8_t src, dst;          /* SB_*: SEND reads src; RECV writes dst
	                              (reading src when reducing); COPY src->dst */
	uint8_t reduce;            /* RECV: dst = src op chunk */
	uint32_t peer;
	uint64_t src_off, dst_off, len;   /* bytes */
	int64_t dep;               /* index of the step this one waits for, or -1 */
};
struct mrc__coll_sched {
	struct mrc__coll_step *s;
	size_t n, cap;
	uint64_t tmp_bytes;        /* size of SB_TMP */
	int err;                   /* -ENOMEM while building */
	/* The executor may spread each peer's chunks over that peer's
	 * plane-pinned QPs, by which has room (steps without dependencies,
	 * RECVs copies; the all-to-alls). */
	uint8_t any_plane;
};
void mrc__coll_sched_free(struct mrc__coll_sched *s);
/* Builders: elements counts, esz bytes per element, chunk bytes (a
 * multiple of esz).  Each returns 0 or -ENOMEM. */
int mrc__coll_sched_allreduce_ring(struct mrc__coll_sched *s, uint32_t n, uint32_t me, size_t count,
			      size_t esz, size_t chunk);
int mrc__coll_sched_allreduce_tree(struct mrc__coll_sched *s, uint32_t n, uint32_t me, size_t count,
			      size_t esz, size_t chunk);
/* Tree all-reduces (the double binary tree, the forest) as units: one
 * chunk [off, off+len) of one tree at this rank.  Its up half (reduce the
 * children's partial sums into ours, send to parent; UINT32_MAX: we are
 * the root) is emitted when the unit is added, its down half (take the
 * parent's final value, send it to the children) `ahead` units later.
 * Why: a rank's steps to one peer run in schedule order, and a pair of
 * ranks is often child and parent at once (in two trees); with each
 * unit's down right after its up, the next chunk's up to that peer
 * waited behind this chunk's down, which waits for the whole reduction:
 * one pipeline the trees' depth long.  Every rank adds the same unit
 * sequence, so the sends of a pair still match their receives. */
#define MRC__TREE_AHEAD 4          /* chunks of every tree */
struct mrc__tree_unit {
	uint64_t off, len;
	uint32_t parent, nchild, child[4];
	int64_t up;                /* the step holding our up value */
};
struct mrc__tree_q {
	struct mrc__coll_sched *s;
	struct mrc__tree_unit *u;  /* ring of the units whose down is pending */
	size_t ahead, head, n;
};
int mrc__coll_tree_q_init(struct mrc__tree_q *q, struct mrc__coll_sched *s, size_t ahead);
void mrc__coll_sched_tree_chunk(struct mrc__tree_q *q, uint64_t off, uint64_t len, uint32_t parent,
			   const uint32_t *child, uint32_t nchild);
/* The pending down halves, in order; frees the ring.  s->err. */
int mrc__coll_tree_q_flush(struct mrc__tree_q *q);
/* The plane-aware multi-tree all-reduce (coll/forest.c): n ranks, leaf[r]
 * the leaf switch of rank r's host (NULL: one leaf); planes trees sets,
 * with pinned steps go to peer rank + (1 + plane) * n (the QPs pinned to
 * that plane), else to rank. */
struct mrc__forest_shape {
	uint32_t n, planes;
	int pinned;
	const uint32_t *leaf;
};
int mrc__coll_sched_allreduce_forest(struct mrc__coll_sched *s, const struct mrc__forest_shape *f,
				uint32_t me, size_t count, size_t esz, size_t chunk);
int mrc__coll_sched_reduce_scatter_ring(struct mrc__coll_sched *s, uint32_t n, uint32_t me,
				   size_t recvcount, size_t esz, size_t chunk);
int mrc__coll_sched_allgather_ring(struct mrc__coll_sched *s, uint32_t n, uint32_t me, size_t count,
			      size_t esz, size_t chunk);
int mrc__coll_sched_broadcast_chain(struct mrc__coll_sched *s, uint32_t n, uint32_t me, size_t count,
			       size_t esz, size_t chunk, uint32_t root);
int mrc__coll_sched_alltoallv(struct mrc__coll_sched *s, uint32_t n, uint32_t me,
			 const size_t *sendcounts, const size_t *sdispls, const size_t *recvcounts,
			 const size_t *rdispls, size_t esz, size_t chunk);
/* Segment r of count elements split over n (the first count % n get one
 * more): first element and length. */
void mrc__coll_seg(size_t count, uint32_t n, uint32_t r, size_t *first, size_t *len);

#endif

/* ---- the communicator -------------------------------------------------- */
#include "mrc/mrc.h"
#include "coll/shm.h"

struct mrc__coll_devops;

#define MRC__COLL_MAXWIN 64

struct mrc__coll_peer {
	struct mrc_qp *qp;
	uint32_t rkey;             /* the peer's receive region */
	/* Sending to the peer: message m uses slot m % window of our staging
	 * and of our window in the peer's receive region. */
	uint64_t sent;             /* data messages posted */
	uint64_t credits;          /* slots the peer has freed (cumulative) */
	uint64_t data_done;        /* data messages completed (staging free) */
	uint64_t wr_posted, wr_done;
	/* Receiving from the peer. */
	uint64_t arrived, consumed;
	uint32_t owed;             /* credits not yet returned */
	uint32_t alen[MRC__COLL_MAXWIN];   /* bytes of each arrived slot */
	uint32_t aord[MRC__COLL_MAXWIN];   /* its ordinal (IMM_DATA_ANY) */
	/* Chunks spread over the rank's plane-pinned QPs, sent to it and
	 * taken from it, over every collective (kept on its set-0 entry). */
	uint64_t any_tx, any_rx;
	uint8_t gone;              /* a credit or abort to it failed */
	/* A rank of our host, both with MRC_COLL_SHM on (set-0 entry only):
	 * its chunks go through shared memory, not its QP (coll/shm.h). */
	uint8_t shm;
	struct mrc__coll_ring_ring stx, srx;   /* to it, from it */
	/* Stragglers (coll/strag.c): when each slot's chunk was posted (ns),
	 * and this call's deliveries (post to completion): their sum, count. */
	int64_t tpost[MRC__COLL_MAXWIN];
	int64_t lat_sum, lat_n;
	/* Its QP's mrcd counters at the last mrc_coll_straggler. */
	uint64_t retx_base, pkts_base;
};

/* ---- stragglers (coll/strag.c) ------------------------------------------
 * One rank's stamps of one call, as the exchange carries them (int64s
 * only: one MRC_COLL_INT64 all-gather).  seq < 0: no call. */
struct mrc__coll_strag_call {
	int64_t seq;               /* the call's number on this communicator */
	int64_t start_rt, dur;     /* CLOCK_REALTIME ns at its start; its length (ns) */
	int64_t host;
	int64_t worst_rank, worst_plane;   /* our slowest QP (mean delivery): to whom, plane or -1 */
	int64_t worst_lat, med_lat;        /* its mean delivery; our QPs' median (ns) */
	int64_t worst_qpn;
};
/* One rank's retransmissions since the last exchange (mrcd's counters of
 * its QPs; coll/strag_name.c's loss evidence).  valid 0: mrcd did not
 * answer for every QP (an older mrcd): no evidence. */
struct mrc__coll_strag_loss {
	int64_t valid;
	int64_t self_retx;                 /* over its QPs of its lossiest plane */
	int64_t worst_rank, worst_plane;   /* its QP with most: to whom, plane or -1 */
	int64_t worst_retx, worst_pkts, worst_qpn;
	int64_t second_retx;               /* its next lossiest QP's */
};
/* Adds one QP's counts (to peer, of QP set: 0 sprays, 1 + p pinned to
 * plane p) to l, started as { .valid = 1, .worst_rank = -1,
 * .worst_plane = -1 } with per_set[] zero; self_retx follows. */
void mrc__coll_strag_loss_qp(struct mrc__coll_strag_loss *l, int64_t *per_set, uint32_t peer, uint32_t set,
			     int64_t retx, int64_t pkts, uint32_t qpn);
/* What each rank contributes to the exchange (int64s only). */
struct mrc__coll_strag_xch {
	struct mrc__coll_strag_call call[MRC_COLL_STRAG_CALLS];
	struct mrc__coll_strag_loss loss;
};
#define MRC__COLL_STRAG_WORDS (sizeof(struct mrc__coll_strag_xch) / sizeof(int64_t))
struct mrc__coll_strag {
	struct mrc__coll_strag_call call[MRC_COLL_STRAG_CALLS];   /* slot seq % CALLS */
	uint64_t seq, since;       /* calls stamped; seq at the last exchange */
	int64_t t0, t0_rt;         /* this call's start: monotonic, realtime ns */
	int off;                   /* 1 while exchanging (not stamped) */
};
int64_t mrc__coll_strag_now_ns(void);
/* run.c's hooks: a schedule starts, ends (done). */
void mrc__coll_strag_begin(struct mrc_coll *c);
void mrc__coll_strag_end(struct mrc_coll *c);
/* run.c: p's oldest data message in flight completed (before data_done++). */
void mrc__coll_strag_delivered(struct mrc_coll *c, struct mrc__coll_peer *p);
/* The verdict from every rank's stamps (all: n x MRC_COLL_STRAG_CALLS,
 * rank-major; loss: n records, or NULL), the same on every rank
 * (coll/strag_name.c): 0 or -ENODATA. */
int mrc__coll_strag_name(uint32_t n, const struct mrc__coll_strag_call *all,
			 const struct mrc__coll_strag_loss *loss, struct mrc_coll_straggler *rec);
/* The median of v[0..n) (sorts v); 0 for none.  Of an even count, the
 * upper one (hi) or the lower. */
int64_t mrc__coll_strag_median(int64_t *v, size_t n, int hi);

/* One run of a schedule (run.c): its buffers, what is done, and where
 * each peer's next send and receive step is. */
struct mrc__coll_exec {
	const struct mrc__coll_sched *s;
	const void *in;
	void *out;
	const struct mrc__coll_memops *ops;   /* host or device, picked at its start */
	uint8_t *tmp, *done;
	size_t esz, left;
	int dtype, op, prog, shm, spread;
	size_t *sc, *rc;           /* [np] next SEND, RECV step per peer */
	size_t *rstep, *rfirst;    /* spread: RECV steps by source rank */
};
/* The no-progress clock of the waits (run.c idle_step). */
struct mrc__coll_idle { int64_t last; int spins, shm; };
struct mrc_coll_req;

struct mrc_coll {
	struct mrc_ctx *ctx;
	uint32_t n, me, host;
	uint32_t chunk, window;
	int timeout_ms;
	struct mrc_mr *rx, *tx;    /* n * window * chunk bytes each */
	uint8_t *rxb, *txb;
	struct mrc__coll_peer *p;
	int epfd;
	int err;                   /* sticky: the communicator is aborted */
	const struct mrc__coll_memops *ops;
	/* device buffers (coll/devmem.h): backend, its instance, MRC_COLL_MEM_* */
	const struct mrc__coll_devops *dev;
	void *dev_be;
	int mem, dev_pinned;
	int algo;                  /* all-reduce: MRC_COLL_ALGO_* (AUTO: by size) */
	/* The forest (coll/forest.c).  Peers are n x sets QPs: set 0 sprays
	 * over every plane, set 1 + p is pinned to plane p; peer index j is
	 * rank j % n over set j / n. */
	uint32_t planes, hosts_per_leaf, sets, np;
	uint32_t *leaf;            /* each rank's leaf switch */
	uint32_t boot_gone;        /* rank 0: ranks whose QP was gone at "go" */
	/* Shared memory with the ranks of our host (MRC_COLL_SHM, default on):
	 * ours offered in the hello; nonce: ours, then rank 0's (the
	 * communicator's, in the rings' names); nshm: peers over it. */
	uint8_t shm_on;
	uint32_t sid, nshm;
	uint64_t nonce;
	/* The MoE's large temporaries, kept between calls (freed by destroy):
	 * fresh ones of tens of MB each cost a page fault per page on every
	 * call (perf on the fabric bench: most of a rank's CPU). */
	void *scr[10];
	size_t scr_cap[10];
	/* Requests (req.c): started and not yet complete, in the order they
	 * were started; only the head runs (the order every rank sees), at
	 * most max_inflight of them. */
	struct mrc_coll_req *head, *tail;
	uint32_t inflight, max_inflight;
	struct mrc_coll_req *co_cur;   /* the request whose body is running */
	void *co_stack;                /* a spare coroutine stack */
	struct mrc__coll_idle idle;
	uint64_t req_started, req_done;   /* counters (tests, mrc-coll-perf) */
	struct mrc__coll_strag strag;   /* coll/strag.c */
};
/* EIN: the experts' input that mrc_coll_moe_dispatch_kept hands out. */
enum { MRC__SCR_SEND, MRC__SCR_RECV, MRC__SCR_FWD, MRC__SCR_OUT, MRC__SCR_PART, MRC__SCR_BACK,
       MRC__SCR_FB, MRC__SCR_AB, MRC__SCR_ACC, MRC__SCR_EIN };
/* Scratch buffer `slot` of at least bytes (contents undefined), or NULL. */
void *mrc__coll_scratch(struct mrc_coll *c, int slot, size_t bytes);
/* Shared memory (coll/shm.c): after the bootstrap's table, creates our
 * rings to the peers of our host (hosts[r], shm[r]: each rank's host and
 * offer); after "go", maps theirs to us. */
int mrc__coll_shm_create(struct mrc_coll *c, const uint32_t *hosts, const uint8_t *shm);
int mrc__coll_shm_open(struct mrc_coll *c);
/* Tests (coll/boot.c): the rank that leaves the bootstrap before "go". */
extern uint32_t mrc__coll_test_leave_before_go;
/* Monotonic milliseconds. */
int64_t mrc__coll_now_ms(void);
/* The bootstrap (coll/boot.c): connects the mesh of c's QPs (created)
 * through rank 0's listener on cfg->sid, by end (ms); n_hosts: the
 * fabric's, for probing rank 0's host. */
int mrc__coll_boot(struct mrc_coll *c, const struct mrc_coll_cfg *cfg, uint32_t n_hosts,
		   int64_t end);
/* Fills the algorithm choice and the QP sets from cfg (before the QPs). */
void mrc__coll_algo_init(struct mrc_coll *c, const struct mrc_coll_cfg *cfg);
/* The all-reduce algorithm for bytes (MRC_COLL_ALGO_TREE, RING or
 * FOREST): cfg.algo, or AUTO's choice by size and fabric. */
int mrc__coll_allreduce_algo(const struct mrc_coll *c, uint64_t bytes);
/* The all-reduce schedule for count elements of esz bytes, by size. */
int mrc__coll_allreduce_sched(const struct mrc_coll *c, struct mrc__coll_sched *s, size_t count,
			      size_t esz);

/* Runs one rank's schedule; in/out/dtype/op as the collective's (req.c):
 * takes s (freed here, whatever the outcome).  reqp NULL: returns when it
 * is done (inside a request's body: as that request's next stage); else
 * queues it as a request (*reqp) and returns at once, -EAGAIN when
 * max_inflight are already in flight. */
int mrc__coll_submit(struct mrc_coll *c, struct mrc__coll_sched *s, const void *in, void *out,
		     int dtype, int op, struct mrc_coll_req **reqp);
/* A call in several stages with host work between them (the 2-D
 * all-to-allv, MoE dispatch and combine): body(c, arg) runs on a stack
 * of its own (a coroutine) when the request reaches the head, its
 * collectives run as the request's stages, in order with the others.
 * arg (argb bytes) is copied into the request.  reqp NULL: waits for it
 * (inside a body: runs body directly). */
int mrc__coll_submit_body(struct mrc_coll *c, int (*body)(struct mrc_coll *, void *),
			  const void *arg, size_t argb, struct mrc_coll_req **reqp);
/* Fails and frees every request still queued (mrc_coll_destroy). */
void mrc__coll_req_drop(struct mrc_coll *c);
/* The spare coroutine stack (mrc_coll_destroy). */
void mrc__coll_stack_free(struct mrc_coll *c);
/* The executor (run.c): start (0 or -errno; nothing to end on error),
 * one pass (1: done, 0: not yet, or -errno), end (frees). */
int mrc__coll_exec_start(struct mrc_coll *c, struct mrc__coll_exec *x,
			 const struct mrc__coll_sched *s, const void *in, void *out, int dtype,
			 int op);
int mrc__coll_exec_step(struct mrc_coll *c, struct mrc__coll_exec *x);
void mrc__coll_exec_end(struct mrc_coll *c, struct mrc__coll_exec *x);
/* The waits' idle step (yield, then sleep on the doorbells; -ETIMEDOUT
 * after timeout_ms without progress), and its clock's reset. */
int mrc__coll_idle(struct mrc_coll *c, int progressed, int shm);
void mrc__coll_idle_reset(struct mrc_coll *c);
/* Makes ops c's table for this thread's copies and reductions
 * (memops_dev.c). */
void mrc__coll_use(struct mrc_coll *c, const struct mrc__coll_memops *ops);
int mrc__coll_fail(struct mrc_coll *c, int err);
/* run.c: every completion waiting (how many, or the error); a wait of at
 * most ms for more */
int mrc__coll_poll_peers(struct mrc_coll *c);
int mrc__coll_wait_peers(struct mrc_coll *c, int ms);

/* ---- checking (tests and mrc-coll-perf) ---------------------------------
 * Inputs whose every reduction is exact in every type (small integers,
 * products of 1, -1 and 2), so a result is right or wrong element by
 * element, with no tolerance. */
enum { MRC__C_ALLREDUCE, MRC__C_REDUCE_SCATTER, MRC__C_ALLGATHER, MRC__C_BROADCAST,
       MRC__C_ALLTOALL, MRC__C_N };
extern const char *const mrc__coll_name[MRC__C_N];
/* Elements of the send and receive buffers for the call's count. */
size_t mrc__coll_in_count(int kind, uint32_t n, size_t count);
size_t mrc__coll_out_count(int kind, uint32_t n, size_t count);
void mrc__coll_fill(int kind, void *in, uint32_t n, uint32_t me, size_t count, int dtype, int op,
		    uint32_t root);
/* Where a call's buffers go (NCCL's in-place convention): out of place,
 * src = in and dst = out; in place, all-gather reads rank me's block of
 * out, reduce-scatter writes rank me's block of in, the others read and
 * write out.  Reads in and out before writing *src and *dst. */
void mrc__coll_place(int kind, int inplace, uint32_t me, size_t count, size_t esz, uint8_t *in,
		     uint8_t *out, uint8_t **src, uint8_t **dst);
/* Elements of out that differ from the expected result. */
size_t mrc__coll_wrong(int kind, const void *out, uint32_t n, uint32_t me, size_t count, int dtype,
		       int op, uint32_t root);
/* Element i of a typed buffer as a double, and back (rounded to the type). */
double mrc__coll_get(const void *buf, int dtype, size_t i);
void mrc__coll_put(void *buf, int dtype, size_t i, double v);
int mrc__coll_call(struct mrc_coll *c, int kind, const void *in, void *out, size_t count,
		   int dtype, int op, uint32_t root);
/* The nccl-tests table, shared by mrc-coll-perf and bench/mpi_coll (the
 * Open MPI baseline), so that their rows compare column for column: the
 * size sweep (-b -e -f) and run counts (-c -n -w), and the rows. */
struct mrc__coll_sweep {
	size_t minb, maxb;
	double factor;
	int check, iters, warm;
};
/* Takes option o (b e f c n w) into s; -1 when o is none of them, -2 (said
 * on stderr) when its value is not a whole number in range. */
int mrc__coll_sweep_opt(struct mrc__coll_sweep *s, int o, const char *arg);
/* The size after size (x factor, at least one more byte). */
size_t mrc__coll_sweep_next(const struct mrc__coll_sweep *s, size_t size);
void mrc__coll_perf_header(void);
void mrc__coll_perf_row(size_t bytes, size_t count, const char *type, const char *op, int root,
			double us, double busf, long long wrong);

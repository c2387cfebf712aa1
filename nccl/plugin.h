/* libnccl-net-mrc.so internals (docs/nccl.md): the comms and the plugin
 * state shared by its two halves, connection setup with the helper threads
 * (nccl/conn.c) and the data path (nccl/data.c, send.c, recv.c), plus the
 * CUDA staging of device buffers (nccl/stage.c).
 *
 * One device: the local mrcd.  Each send/recv comm pair is one libmrc QP
 * pair, connected by mrcd's connection manager.  NCCL's host buffers are
 * cudaHostAlloc memory, which mrcd cannot map (it maps memfds only), so
 * every comm owns a registered bounce region: the sender copies into its
 * region and WRITE_IMMs into the receiver's, which copies out.  A send
 * comm's host buffer that mrcd can map (a memfd mapping) is registered in
 * place by regMr (mrc_reg_mem) and sent from without the copy.  CUDA
 * buffers take the same path with device<->bounce copies on the comm's
 * own stream instead of memcpy. */
#ifndef MRC_NCCL_PLUGIN_H
#define MRC_NCCL_PLUGIN_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <mrc/mrc.h>

#include "nccl/arena.h"
#include "nccl/net_abi.h"
#include "nccl/proto.h"

/* ---- logging (NCCL's logger once init gave one) ------------------------ */
__attribute__((format(printf, 3, 4)))
void mrcn_log(ncclDebugLogLevel lvl, int line, const char *fmt, ...);
void mrcn_log_set(ncclDebugLogger_t fn);   /* NCCL's logger, from init */
#define WARN(...) mrcn_log(NCCL_LOG_WARN, __LINE__, __VA_ARGS__)
#define INFO(...) mrcn_log(NCCL_LOG_INFO, __LINE__, __VA_ARGS__)

/* ---- comms ------------------------------------------------------------- */
enum { K_SEND = 1, K_RECV = 2, K_LISTEN = 3 };

struct req {
	struct comm *c;
	int used, n, ndone;
	int err;
	int cuda_fail;                  /* err is a failed device copy */
	struct {
		void *data;
		uint64_t size;          /* recv: capacity; send: length */
		uint32_t got;
		int id;                 /* recv: CTS id */
		int alloc;              /* arena allocation, -1 none */
		int cuda;               /* data is device memory (staged copies) */
		int32_t tag;            /* recv */
		int pending;            /* recv: awaiting its data */
		int deferred;           /* recv: pending, no CTS sent (eager-sized) */
		uint32_t tseq;          /* recv: its number among its tag's receives */
	} sub[MRCN_MAX_RECVS];
	uint64_t seq;                   /* recv: posting order, for eager matching */
};

struct mrc__gpu_copy_ops;

struct comm {
	int kind;
	int tr_waiting;                 /* traced an isend without CTS (trace.h) */
	struct comm *next;              /* helper-thread queues */
	struct mrc_qp *qp;
	struct mrc_ctx *ctx;            /* the helper thread's, which owns qp */
	struct mrc_mr *mr;
	uint8_t *base;
	uint32_t lkey, rkey;            /* rkey: the peer's bounce region */
	_Atomic int ready;              /* 1 connected, -errno failed */
	uint32_t listen_id;             /* send: the listen comm it asked for */
	uint32_t qp_flags;              /* send: MRC_QP_* class of its QP (init's trafficClass) */
	uint32_t host;
	int err;                        /* first error completion */
	uint64_t zc_sends;              /* isends from the buffer itself (mhandle.mr) */
	int data_inflight;              /* send: data WRITE_IMMs not yet completed */
	struct mrcn_arena arena;
	struct req reqs[MRCN_MAX_REQS];
	/* send side: CTS received, oldest first */
	struct mrcn_cts cts[MRCN_NCTS];
	int ncts;
	/* recv side: CTS id -> (request, sub) */
	struct { struct req *r; int sub; } ids[MRCN_NCTS];
	int free_ids[MRCN_NCTS], nfree_ids;
	/* recv side: the CTS SEND of this id not completed yet (its buffer is
	 * not reused before: a resend would read it) */
	uint8_t cts_busy[MRCN_NCTS];
	/* Eager messages (docs/nccl.md "Eager messages").  eg_slots/stride/off:
	 * the receiver's ring (recv: our own; send: as the peer advertised it,
	 * eg_slots 0 until then). */
	uint32_t eg_slots;
	uint64_t eg_stride, eg_off;
	/* send side: eager messages sent, credits (slots the receiver freed) */
	uint32_t eg_sent, eg_credit;
	/* recv side: eager messages received, freed in ring order, credits
	 * last told; per slot: 0 free, 1 waiting for its irecv, 2 consumed */
	uint32_t eg_rcvd, eg_freed, eg_told;
	struct { int32_t tag; uint32_t size, tseq; uint8_t state; } eg[MRCN_EG_MAX_SLOTS];
	int ndeferred;                  /* recv: receives pending without a CTS */
	/* Per-tag message counts (send: isends, recv: receives posted), an
	 * open-addressed table; a tag is entered by our own NCCL's calls
	 * only, never by what the peer sends. */
	struct mrcn_tagent { int32_t tag; uint32_t n; uint8_t used; } *tags;
	uint32_t tags_cap, tags_used;
	int egr_busy;                   /* the advertisement/credit SEND in flight */
	/* Compact eager messages (proto.h): send: the receiver takes them;
	 * both: the comm's tag, that of its first eager message, once set. */
	uint8_t eg_compact, eg_ctag_set;
	uint8_t eg_pieces;              /* send: the receiver takes pieces (proto.h) */
	int32_t eg_ctag;
	uint64_t rseq;
	struct mrcn_stats st;
	/* CUDA staging (nccl/stage.c), set up at the comm's first CUDA
	 * buffer: the copy engine and whether the arena is pinned by it. */
	const struct mrc__gpu_copy_ops *cops;
	void *cbe;
	int pinned;
};

struct listen_comm {
	int kind;
	uint32_t id;
	struct listen_comm *next;
	struct comm *ready_head;        /* accepted, not yet handed to NCCL */
};

/* What regMr returns.  mr: the buffer itself registered with mrc_reg_mem
 * (a send comm's host buffer that mrcd can map: memfd-backed), whose
 * isends WRITE from it without the bounce copy; NULL: the bounce path. */
struct mhandle {
	void *data;
	size_t size;
	int type;
	struct comm *c;
	struct mrc_mr *mr;
};

/* Bounce bytes per comm (MRC_NCCL_BOUNCE_MB, at most MRCN_ARENA) and the
 * largest message, chosen so that a full grouped receive always fits. */
extern uint64_t mrcn_arena_bytes, mrcn_max_msg;
/* 1 when init found a CUDA device and the plugin was built with CUDA
 * staging: getProperties then says NCCL_PTR_CUDA too. */
extern int mrcn_cuda_ok;

/* Eager payload limit (MRC_NCCL_EAGER_BYTES, 0: off), and the receive
 * ring it gives: slots and stride. */
extern uint64_t mrcn_eg_bytes;
extern uint32_t mrcn_eg_slots;

/* A comm's region: the arena, then MRCN_NCTS CTS buffers (recv: outgoing,
 * by id; send: the posted RECVs), one more for the eager advertisement
 * (recv: outgoing; send: a 65th RECV), then (recv) the eager ring. */
#define CTS_IN(c, i) ((struct mrcn_cts *)((c)->base + mrcn_arena_bytes) + (i))
#define MRCN_EGR_OFF (mrcn_arena_bytes + MRCN_NCTS * sizeof(struct mrcn_cts))
#define MRCN_RING_OFF (MRCN_EGR_OFF + 64)
#define MRCN_NRECV (MRCN_NCTS + 1)      /* RECVs a send comm keeps posted */
/* recv: advertises the eager ring (and the credits) to the sender. */
int mrcn_post_egr(struct comm *c);
int mrcn_post_cts_recv(struct comm *c, int slot);
/* A send comm's data still in flight (sends report done at the post):
 * completions polled until none is left or ms pass; 0, or -ETIMEDOUT. */
int mrcn_send_drain(struct comm *c, int ms);

/* ---- connection setup, init, properties (nccl/conn.c) ------------------ */
ncclResult_t mrcn_init(void **ctx, uint64_t commId, ncclNetCommConfig_t *config,
		       ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction);
ncclResult_t mrcn_finalize(void *ctx);
/* What one init (one NCCL communicator) asked for, its ctx: the QP
 * flags of its trafficClass, for the send comms its connects make.  The
 * v9/v8 tables pass no ctx: the default class (nccl/tclass.c). */
struct mrcn_ictx {
	uint32_t qp_flags;
};
/* The libmrc QP class (MRC_QP_URGENT, MRC_QP_BULK, 0: default) of NCCL's
 * trafficClass (the TOS byte; -1: undefined): DSCP 46 and 10. */
uint32_t mrcn_tclass_flags(int tc);
/* v10's connect carries the config itself: a ctx made of it. */
ncclResult_t mrcn_connect_cfg(ncclNetCommConfig_t *cfg, int dev, void *handle, void **sendComm,
			      ncclNetDeviceHandle_t **sendDevComm);
ncclResult_t mrcn_devices(int *ndev);
ncclResult_t mrcn_props(int dev, ncclNetProperties_v11_t *p);
ncclResult_t mrcn_listen(void *ctx, int dev, void *handle, void **listenComm);
ncclResult_t mrcn_connect(void *ctx, int dev, void *handle, void **sendComm,
			  ncclNetDeviceHandle_t **sendDevComm);
ncclResult_t mrcn_accept(void *listenComm, void **recvComm, ncclNetDeviceHandle_t **recvDevComm);
ncclResult_t mrcn_close_listen(void *listenComm);
ncclResult_t mrcn_close_send(void *sendComm);
ncclResult_t mrcn_close_recv(void *recvComm);
ncclResult_t mrcn_make_vdevice(int *d, ncclNetVDeviceProps_t *props);
ncclResult_t mrcn_set_attr(void *ctx, ncclNetAttr_v11_t *attr);
/* The comm, as the trace's QP field (common/trace.h). */
#define TRC(c) ((uint32_t)(uintptr_t)(c))

/* data.c, for eager.c: an id back to the comm; a malformed message from
 * the peer fails the comm (why, the offending value) */
void mrcn_id_release(struct comm *c, int id);
void mrcn_refuse(struct comm *c, const char *why, uint64_t v);
/* data.c, for send.c and recv.c: a free request (zeroed, NULL when all
 * MRCN_MAX_REQS are out); the comm's completions handled, then the
 * eager ring's credits (0, or the comm's error); the comm's failure
 * logged (what: the call), as NCCL's ncclRemoteError */
struct req *mrcn_req_get(struct comm *c);
int mrcn_progress(struct comm *c);
ncclResult_t mrcn_comm_failed(struct comm *c, const char *what);
/* eager.c */
void mrcn_eg_reclaim(struct comm *c);
void mrcn_eg_deliver(struct comm *c, uint32_t k, struct req *r, int s);
void mrcn_eg_arrived(struct comm *c, const struct mrc_completion *e);
/* The tag's count (send: messages sent, recv: receives posted): add 1
 * enters the tag if new (the table may grow: earlier pointers are then
 * stale), NULL when it cannot (MRCN_MAX_TAGS, or no memory); add 0 only
 * looks (NULL: never seen, i.e. 0). */
uint32_t *mrcn_tag_count(struct comm *c, int32_t tag, int add);
/* recv: credits or, with the ring full, CTSs for deferred receives */
int mrcn_eg_check(struct comm *c);
/* recv: the CTS of receive (r, i) (eager.c) */
int mrcn_post_cts(struct comm *c, struct req *r, int i);
/* reg.c */
ncclResult_t mrcn_regmr(void *comm, void *data, size_t size, int type, void **mhandle);
ncclResult_t mrcn_regmr_dmabuf(void *comm, void *data, size_t size, int type, uint64_t offset,
			       int fd, void **mhandle);
ncclResult_t mrcn_deregmr(void *comm, void *mhandle);
/* send.c, recv.c, data.c */
ncclResult_t mrcn_isend(void *sendComm, void *data, size_t size, int tag, void *mhandle,
			void *phandle, void **request);
ncclResult_t mrcn_irecv(void *recvComm, int n, void **data, size_t *sizes, int *tags,
			void **mhandles, void **phandles, void **request);
ncclResult_t mrcn_iflush(void *recvComm, int n, void **data, int *sizes, void **mhandles,
			 void **request);
ncclResult_t mrcn_test(void *request, int *done, int *sizes);

/* ---- CUDA staging (nccl/stage.c) ---------------------------------------
 * probe: 0 when a CUDA device is usable (the copy engine of libmrc-gpu's
 * staging, gpu/stage.h, can be made), else a negative errno and why.
 * attach: the comm's copy engine and its pinned arena, once.
 * copy: one synchronous copy between device memory and the arena at off
 * (to_dev 1: arena -> dev), on the comm's stream; 0 or a negative errno.
 * detach: releases what attach made (the comm's owning thread). */
int mrcn_cuda_probe(char *why, size_t whylen);
int mrcn_cuda_attach(struct comm *c);
int mrcn_cuda_copy(struct comm *c, int to_dev, void *dev, uint64_t off, uint64_t n);
void mrcn_cuda_detach(struct comm *c);

#endif

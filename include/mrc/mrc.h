/* libmrc: the client library of mrc (multipath reliable connections).
 *
 * An application opens a context (a connection to the local mrcd over its
 * Unix socket), registers memory, creates queue pairs, connects them to
 * QPs on other hosts (out of band, or by host and service id), posts
 * one-sided WRITEs, WRITE_WITH_IMMs, SENDs, RECVs and remote atomic adds,
 * and reads completions.  Work goes through shared-memory rings
 * (mrc/ring.h), never through the socket: posting is a few stores, and a
 * system call only when the daemon is idle.
 *
 * Errors: every function returns 0 (or a count) or a negative errno;
 * mrc_strerror (mrc/error.h) describes it.  Refusals by the daemon also
 * leave a reason in mrc_last_error(ctx).
 *
 * Thread safety:
 *  - Control calls on one context (reg/dereg, create/destroy/connect QPs,
 *    listen/accept/connect) are serialized by the context's lock and may be
 *    called from any thread.  mrc_accept and mrc_connect hold the control
 *    channel until the connection is made: use a second context to do
 *    other control work meanwhile.
 *  - Posting to a QP is serialized by the QP's send lock; polling and
 *    waiting on its completions by the QP's completion lock.  One thread
 *    posting and another polling the same QP run without contention.
 *  - Different QPs are independent.  Destroying a QP or closing the
 *    context while another thread uses it is undefined.
 *  - libmrc creates no threads and installs no signal handlers; it uses
 *    MSG_NOSIGNAL, so a dead daemon gives -EPIPE/-ECONNRESET, not SIGPIPE.
 */
#ifndef MRC_MRC_H
#define MRC_MRC_H

#include <stddef.h>
#include <stdint.h>

#include "mrc/error.h"
#include "mrc/ring.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MRC_API_VERSION 1
#define MRC_SOCK_ENV "MRC_SOCKET"            /* overrides the default path */

struct mrc_ctx;
struct mrc_mr;
struct mrc_qp;

/* ---- context ---------------------------------------------------------- */
/* Connects to mrcd at path (NULL: $MRC_SOCKET, else /run/mrcd/mrcd.sock)
 * and says hello.  -ENOENT/-ECONNREFUSED: no daemon; -EACCES: not allowed
 * (uid 0 or the daemon's group); -EPROTONOSUPPORT: version mismatch. */
int mrc_open(const char *path, struct mrc_ctx **out);
/* Destroys every QP and region of the context and disconnects (the daemon
 * also frees them if the process dies). */
void mrc_close(struct mrc_ctx *ctx);
/* The power-floor hint (docs/power.md "Power floor", man
 * mrc_power_floor(3)): 1 while mrcd sees sends of this context's QPs in
 * flight (a communication phase; lowered power_floor_hold_us after the
 * last completes), else 0; always 0 when the daemon's config
 * power_floor is off.  raises (may be NULL): how many times it has been
 * raised, so a slow poller sees a phase it missed.  -EINVAL: no ctx.
 * mrc_power_floor_word: the word itself (in the notify page, read-only
 * to the caller), for a GPU producer to poll through a mapping of its
 * own; NULL without ctx. */
int mrc_power_floor(const struct mrc_ctx *ctx, uint32_t *raises);
const volatile uint32_t *mrc_power_floor_word(const struct mrc_ctx *ctx);

struct mrc_ctx_info {
	uint32_t host;             /* this node's host index in the fabric */
	uint32_t n_hosts;
	uint32_t client_id;
	uint32_t max_qps, max_mrs, max_ring_entries;
	uint64_t max_mem;          /* bytes of registered memory allowed */
};
int mrc_ctx_info(const struct mrc_ctx *ctx, struct mrc_ctx_info *info);
/* The daemon's reason text of the last refused control call ("" if none). */
const char *mrc_last_error(const struct mrc_ctx *ctx);

/* ---- memory ----------------------------------------------------------- */
/* Access rights (same bit values as the engine's). */
#define MRC_MR_LOCAL_READ    0x1u  /* source of WRITE / SEND */
#define MRC_MR_REMOTE_WRITE  0x2u  /* target of remote WRITEs */
#define MRC_MR_REMOTE_ATOMIC 0x4u  /* target of remote atomic adds */
#define MRC_MR_LOCAL_WRITE   0x8u  /* RECV buffers */
#define MRC_MR_ALL           0xfu

/* Allocates len bytes of shared memory (a sealed memfd, zero-filled,
 * mapped here and in the daemon) and registers it. */
int mrc_alloc_mr(struct mrc_ctx *ctx, uint64_t len, uint32_t access, struct mrc_mr **out);
/* Registers [off, off+len) of memfd fd (the caller keeps fd; it must carry
 * F_SEAL_SHRINK so that the daemon can never fault on it).  The library
 * maps it too: mrc_mr_addr gives the address. */
int mrc_reg_mr(struct mrc_ctx *ctx, int fd, uint64_t off, uint64_t len, uint32_t access,
	       struct mrc_mr **out);
/* Registers the application's own memory [addr, addr+len), wherever it
 * came from, without a copy per transfer (docs/client.md "Application
 * memory"); mrc_mr_addr is addr and post offsets count from it.
 *  - A MAP_SHARED mapping of a memfd (hugetlbfs ones too) whose descriptor
 *    the process still holds: mrcd maps the same pages.  libmrc adds
 *    F_SEAL_SHRINK to the file when it has no such seal.
 *  - Anonymous private memory (malloc, mmap) with MRC_REG_MOVE, in whole
 *    pages (addr and len page-aligned: posix_memalign, mmap): its pages are
 *    moved, in place and with their contents, into a memfd that mrcd maps
 *    too.  They stay shared-memory backed afterwards (a fork shares them
 *    rather than copying).  No other thread may write them during the
 *    call, and memory another driver has pinned (cudaHostRegister,
 *    ibv_reg_mr) must not be moved: its registration would keep the old
 *    pages.  Pages an earlier MRC_REG_MOVE moved may be part of the range
 *    (a larger range over the same buffer): all move again into one new
 *    memfd, unless a live registration still holds those moved before
 *    (-EBUSY: it would go on using the old file).
 * Refusals (the reason in mrc_last_error): -EFAULT part of the range is
 * not mapped; -EACCES not readable, or not writable while the access asks
 * for writes; -EOPNOTSUPP memory that cannot be shared (another kind of
 * file, a file without a held descriptor, anonymous memory without
 * MRC_REG_MOVE, the stack); -EINVAL MRC_REG_MOVE on partial pages, and the
 * daemon's own refusals (limits: -EDQUOT).  Freeing or unmapping the
 * memory while registered is harmless to mrcd (it keeps its own mapping
 * until mrc_dereg_mr) but transfers then miss the application. */
#define MRC_REG_MOVE  0x1u
#define MRC_REG_FLAGS 0x1u
int mrc_reg_mem(struct mrc_ctx *ctx, void *addr, uint64_t len, uint32_t access, uint32_t flags,
		struct mrc_mr **out);
/* -EBUSY while posted work still references it. */
int mrc_dereg_mr(struct mrc_mr *mr);
void *mrc_mr_addr(const struct mrc_mr *mr);
uint64_t mrc_mr_len(const struct mrc_mr *mr);
/* The region's key: lkey in local posts, rkey for remote peers. */
uint32_t mrc_mr_key(const struct mrc_mr *mr);

/* ---- queue pairs ------------------------------------------------------ */
struct mrc_qp_cfg {
	uint32_t sq_entries;       /* power of two (default 256) */
	uint32_t cq_entries;       /* power of two (default 2 * sq_entries) */
	uint32_t flags;            /* MRC_QP_* */
	uint32_t pin_ev;           /* MRC_QP_PIN: the one path to use */
	uint32_t plane_mask;       /* bit p: plane p may carry this QP's data
	                              (0: every plane, as before).  While none
	                              of them has a usable path the QP sprays
	                              over every plane; ACKs use any plane;
	                              ignored with MRC_QP_PIN.  Planes 0..15
	                              (MRC_QP_MAX_PLANES): -EINVAL above */
	uint64_t index_base;       /* first ring index (0; other values test
	                              index wraparound, mrc/ring.h) */
};
#define MRC_QP_MAX_PLANES 16u
#define MRC_QP_PIN    0x1u   /* single-path (ECMP-like) mode, for comparisons */
#define MRC_QP_POLLED 0x2u   /* no SQ doorbell: the daemon polls the SQ
                                (adaptively) and is woken through the
                                notify page (GPU producers, mrc/gpu.h) */
/* Traffic class (at most one; neither: the default class, as before).
 * The daemon sends an URGENT QP's data before every other QP's, leaving
 * the others at least mrcd.conf's bulk_min_pct of the packets while both
 * have data, and marks each class's packets with its DSCP (mrcd.conf
 * dscp_urgent, dscp_bulk, dscp_default) so switches can queue them
 * apart.  BULK shares the lower band with the default class.  A daemon
 * older than classes refuses either flag (-EINVAL). */
#define MRC_QP_URGENT 0x4u   /* what a step waits on: dispatch, small reductions */
#define MRC_QP_BULK   0x8u   /* background: prefetch, checkpoints */

/* cfg NULL: defaults. */
int mrc_create_qp(struct mrc_ctx *ctx, const struct mrc_qp_cfg *cfg, struct mrc_qp **out);
int mrc_destroy_qp(struct mrc_qp *qp);

/* What a peer needs to connect to a QP: exchange it out of band (MPI, a
 * file, a socket) as 16 plain bytes.  priv is the application's own word
 * (e.g. the rkey of the region the peer may write); mrc_qp_info_get leaves
 * it 0 and the connection manager carries it both ways. */
struct mrc_qp_addr {
	uint32_t host, qpn, psn, priv;
};
int mrc_qp_info_get(struct mrc_qp *qp, struct mrc_qp_addr *local);
uint32_t mrc_qp_num(const struct mrc_qp *qp);
int mrc_connect_oob(struct mrc_qp *qp, const struct mrc_qp_addr *remote);

/* Connection manager: a listener on service id sid (per daemon) queues up
 * to backlog incoming requests; mrc_accept connects qp to the next one
 * (timeout_ms 0: no limit; -ETIMEDOUT) and returns the remote's address.
 * mrc_connect asks host:sid to accept, and connects qp to it (-ECONNREFUSED
 * when nobody listens or the backlog is full, -ETIMEDOUT when the host does
 * not answer).  priv travels to the other side (remote->priv there). */
int mrc_listen(struct mrc_ctx *ctx, uint32_t sid, uint32_t backlog);
int mrc_unlisten(struct mrc_ctx *ctx, uint32_t sid);
int mrc_accept(struct mrc_qp *qp, uint32_t sid, uint32_t priv, int timeout_ms,
	       struct mrc_qp_addr *remote);
int mrc_connect(struct mrc_qp *qp, uint32_t host, uint32_t sid, uint32_t priv,
		struct mrc_qp_addr *remote);

/* Files a straggler record with mrcd, which keeps it with this process's
 * uid and pid for `mrcctl stragglers` (libmrc-coll's mrc_coll_straggler
 * calls it; docs/coll.md "Stragglers", mrc_straggler_file(3)).  The
 * record is part of the ABI (MRC_1): fields are only ever added at its
 * end, with size telling libmrc how many the caller knows.  mrcd checks
 * it field by field.  0, or -EINVAL (size too small), -EBADMSG (a field
 * out of range), -EAGAIN past mrcd's rate bound, -EOPNOTSUPP from an
 * older mrcd, -errno. */
#define MRC_STRAG_COMPUTE 1u       /* rank started the call late */
#define MRC_STRAG_NETWORK 2u       /* rank's path to peer_rank was slow */
struct mrc_straggler_rec {
	uint32_t size;             /* sizeof(struct mrc_straggler_rec) */
	uint32_t cause;            /* MRC_STRAG_* */
	uint64_t comm;             /* the communicator's id */
	uint64_t call;             /* the call named, counted from 0 */
	uint32_t rank, host;       /* the straggler: rank, fabric host (< 2^24) */
	/* NETWORK only, else 0 (plane -1): the path's other end, the
	 * sender's QP, its plane (-1: every plane), 1 when rank sent. */
	uint32_t peer_rank, peer_host, qpn;
	int32_t plane;
	uint32_t rank_sends;
	uint32_t rsvd;             /* 0 */
	uint64_t call_us, late_us, typical_us;   /* each <= one day */
};
int mrc_straggler_file(struct mrc_ctx *ctx, const struct mrc_straggler_rec *rec);
/* A QP's packet counters since its creation, from mrcd (one round trip):
 * what a lossy path costs it.  0, -EOPNOTSUPP from an older mrcd,
 * -errno. */
struct mrc_qp_stats {
	uint64_t tx_pkts;          /* data packets sent, retransmissions included */
	uint64_t retx;             /* of them, retransmissions */
	uint64_t rto_fires;        /* retransmission timeouts */
	uint64_t nacks_rx;         /* NACKs received */
};
int mrc_qp_stats(struct mrc_qp *qp, struct mrc_qp_stats *out);
/* The same for n QPs of one context in ceil(n / 12) round trips (12 a
 * message; mrc_coll_straggler asks for all its QPs so): out[i] and st[i]
 * for qps[i], st[i] 0 or -errno for that QP alone (then out[i] is zero).
 * 0, -EINVAL (a NULL, n 0, QPs of two contexts), -EOPNOTSUPP from an mrcd
 * older than it (ask each with mrc_qp_stats), -errno. */
int mrc_qp_stats_n(struct mrc_qp *const *qps, size_t n, struct mrc_qp_stats *out, int *st);

/* ---- work ------------------------------------------------------------- */
/* Post calls return 0 or -ENOSPC when the submission ring is full (poll
 * completions and retry), -EPIPE when the daemon is gone.  Bad keys,
 * ranges and rights are reported by an error completion, in order. */
int mrc_post_write(struct mrc_qp *qp, uint64_t wr_id, uint32_t lkey, uint64_t loff,
		   uint64_t len, uint32_t rkey, uint64_t roff);
int mrc_post_write_imm(struct mrc_qp *qp, uint64_t wr_id, uint32_t lkey, uint64_t loff,
		       uint64_t len, uint32_t rkey, uint64_t roff, uint32_t imm);
int mrc_post_send(struct mrc_qp *qp, uint64_t wr_id, uint32_t lkey, uint64_t loff,
		  uint64_t len);
int mrc_post_send_imm(struct mrc_qp *qp, uint64_t wr_id, uint32_t lkey, uint64_t loff,
		      uint64_t len, uint32_t imm);
int mrc_post_recv(struct mrc_qp *qp, uint64_t wr_id, uint32_t lkey, uint64_t loff,
		  uint64_t len);
/* Remote u64 at (rkey, roff) += add (roff 8-byte aligned). */
int mrc_post_atomic_add(struct mrc_qp *qp, uint64_t wr_id, uint32_t rkey, uint64_t roff,
			uint64_t add);
/* Raw descriptor (seq is filled in); for callers building their own, and
 * for flags: sqe.flags = MRC_SQE_F_FENCE holds the request until every
 * earlier one of the QP has completed (docs/client.md, "Ordering"). */
int mrc_post_sqe(struct mrc_qp *qp, const struct mrc_sqe *sqe);

struct mrc_completion {
	uint64_t wr_id;            /* RECV_WRITE_IMM: 0 */
	int32_t status;            /* 0 or negative errno */
	uint32_t byte_len;
	uint32_t imm;              /* valid when flags & MRC_CQE_F_IMM */
	uint32_t qpn;
	uint8_t op;                /* enum mrc_cqe_op (mrc/ring.h) */
	uint8_t flags;
};
/* Up to max completions, without blocking.  Returns how many, or -EPIPE
 * once the daemon is gone and nothing is left, -EOVERFLOW if completions
 * were lost because the ring was not drained. */
int mrc_poll_cq(struct mrc_qp *qp, struct mrc_completion *c, int max);
/* Blocks until a completion is ready (0), timeout_ms passes (-ETIMEDOUT;
 * < 0: no limit), or the daemon dies (-ECONNRESET).  Any number of
 * threads may wait on different QPs of one context. */
int mrc_wait(struct mrc_qp *qp, int timeout_ms);
/* For the caller's own poll/epoll loop: mrc_qp_fd is the completion
 * doorbell (an eventfd), ONE PER CONTEXT: every QP of a context returns
 * the same fd.  The daemon rings it when a completion lands in an armed
 * CQ.  mrc_arm_cq arms a QP's CQ; it returns 1 when completions are
 * already waiting (poll them instead of sleeping), 0 when armed.
 * mrc_ctx_drain empties the fd.  The loop: drain, arm every QP you
 * sleep on (poll those that return 1), sleep until the fd is readable,
 * then mrc_poll_cq them all.  Use either this or mrc_wait on a context,
 * not both (both read the fd). */
int mrc_qp_fd(const struct mrc_qp *qp);
int mrc_arm_cq(struct mrc_qp *qp);
int mrc_ctx_drain(struct mrc_ctx *ctx);

const char *mrc_cqe_op_name(uint8_t op);

/* ---- rings for producers outside libmrc (mrc/gpu.h) -------------------
 * The QP's rings as mapped in this process, for a producer that posts
 * and polls by the ring ABI itself (a GPU kernel through mrc/gpu.h).
 * While it does, the QP's mrc_post_* and mrc_poll_cq must not be used:
 * each ring has one producer and one consumer.  notify is NULL unless the
 * QP was created with MRC_QP_POLLED.  map/map_len: the mapping holding
 * both rings (to register with cudaHostRegister). */
struct mrc_qp_rings {
	struct mrc_ring_hdr *sq, *cq;
	struct mrc_notify *notify;
	void *map;
	uint64_t map_len;
	uint64_t notify_len;
};
int mrc_qp_rings(struct mrc_qp *qp, struct mrc_qp_rings *out);
/* The control socket: poll it for POLLRDHUP/POLLHUP to learn that the
 * daemon died (never read or write it).  mrc/gpu.h's watchdog does. */
int mrc_ctx_fd(const struct mrc_ctx *ctx);

#ifdef __cplusplus
}
#endif
#endif

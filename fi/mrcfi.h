/* libmrc-fi.so, the libfabric provider "mrc" (docs/libfabric.md): its
 * objects and the functions the files share.  One lock per domain
 * (d->lock) guards everything of the domain (AV, CQs, counters,
 * endpoints, peers, requests); the domain's progress thread takes it to
 * drain completions, its accept thread only to attach a new peer. */
#ifndef MRC_FI_MRCFI_H
#define MRC_FI_MRCFI_H

#include <pthread.h>
#include <stdint.h>
#include <sys/uio.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/providers/fi_prov.h>
#include <rdma/providers/fi_log.h>

#include <mrc/mrc.h>

#include "fi/proto.h"

#define MRCFI_PROV_NAME    "mrc"
#define MRCFI_PROV_VERSION FI_VERSION(1, 0)
#define MRCFI_FI_VERSION   FI_VERSION(1, 17)
#define MRCFI_DOMAIN_NAME  "mrc0"

#define MRCFI_CAPS (FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_SEND | FI_RECV | FI_WRITE | \
		    FI_REMOTE_WRITE | FI_DIRECTED_RECV | FI_SOURCE | FI_MULTI_RECV | \
		    FI_LOCAL_COMM | FI_REMOTE_COMM)
#define MRCFI_KEY_CAPS (FI_RMA | FI_ATOMIC | FI_WRITE | FI_REMOTE_WRITE)
#define MRCFI_MR_MODE  (FI_MR_PROV_KEY | FI_MR_ALLOCATED)
#define MRCFI_RX_POSTED 8u           /* receive slots posted per QP (default) */
#define MRCFI_RX_POSTED_MAX 64u      /* ... and once grown, at most */
#define MRCFI_IDLE_AFTER 16           /* empty reads before FI_MRC_IDLE_US sleeps */
#define MRCFI_IDLE_US   50            /* FI_MRC_IDLE_US's default */
#define MRCFI_IDLE_SPIN_US 200        /* FI_MRC_IDLE_SPIN_US's default */
#define MRCFI_PIPE      4            /* chunks in flight per rendezvous message */
#define MRCFI_SID_BASE  0x46490000u  /* service ids of endpoints: + [0, 2^16) */

extern struct fi_provider mrcfi_prov;
#define MRCFI_WARN(sub, ...) FI_WARN(&mrcfi_prov, sub, __VA_ARGS__)

struct mrcfi_name { uint32_t host, sid; };
/* fi_getinfo's src_addr with no node: this host, whatever its index */
#define MRCFI_HOST_ANY  UINT32_MAX

/* A fixed pool of equal pieces of a side's bounce region. */
struct mrcfi_pool {
	uint64_t off;                /* of piece 0 in the region */
	uint32_t size, n, nfree;
	uint32_t *free;              /* stack of free indexes */
	void **owner;                /* per piece: the request it serves */
};

/* One mrcd client of the domain.  Two, because mrc_accept and
 * mrc_connect each hold their client's control channel until the peer
 * answers: side 0 accepts (its QPs are the ones peers connected to),
 * side 1 connects.  Regions belong to one client, so each side has its
 * own bounce region and every remotely writable MR is registered in
 * both (its key carries both rkeys). */
struct mrcfi_side {
	struct mrc_ctx *ctx;
	struct mrc_mr *bounce;
	char *base;
	uint32_t key;
	int fd;                      /* the client's completion doorbell */
	struct mrcfi_pool rx, tx, txc, rxc;  /* receive slots, send slots, chunks */
};

struct mrcfi_fabric {
	struct fid_fabric f;
};

struct mrcfi_eq;
struct mrcfi_ep;
struct mrcfi_av;

struct mrcfi_acc {
	struct mrcfi_acc *next;
	struct mrc_qp *qp;
	struct mrc_qp_addr remote;
	uint32_t sid;
};

struct mrcfi_domain {
	struct fid_domain d;
	struct mrcfi_fabric *fab;
	pthread_mutex_t lock;
	struct mrcfi_side side[2];
	uint32_t host, n_hosts;
	uint32_t eager_max, rx_per_qp;
	uint64_t mr_access_bits;
	struct mrcfi_eq *eq;         /* fi_domain_bind FI_REG_MR */
	struct mrcfi_ep *eps;
	int dead;                    /* mrcd hung up: everything fails */
	int stop, wake;              /* wake: eventfd ending the threads' sleeps */
	pthread_t prog, acc;
	int threads;
	unsigned acc_rr;
	/* The endpoints' service ids for the accept thread, under their own
	 * lock: d->lock may be held across an mrc_connect to one of them. */
	pthread_mutex_t sidlock;
	uint32_t sids[64];
	unsigned nsids;
	/* Connections the accept thread took, for whoever holds d->lock
	 * next to attach (it never waits for d->lock itself: an
	 * mrc_connect under it may be waiting for this very accept). */
	struct mrcfi_acc *accq;
	int dead_pending;            /* the accept thread saw mrcd hang up */
	struct mrc_qp *spare;        /* the accept thread's next QP (side 0) */
	uint64_t local_key;
	uint32_t mr_move;            /* FI_MRC_MR_MOVE */
	int progress_spin_us;
	uint64_t mr_move_max;        /* FI_MRC_MR_MOVE_MAX: whole mappings moved up to */
	uint32_t linger_ms;
	uint32_t unexp_max;          /* FI_MRC_UNEXP_MAX: entries per endpoint */
	uint32_t rx_posted;          /* FI_MRC_RX_POSTED: receive slots per QP */
	uint32_t rx_max;             /* FI_MRC_RX_POSTED_MAX: a QP grows up to it */
	uint32_t compact;            /* FI_MRC_COMPACT: send and offer compact EAGERs */
	uint64_t unexp_bytes_max;    /* FI_MRC_UNEXP_BYTES: bytes copied per endpoint */
	/* While the application polls its CQs (fi_cq_read within the last
	 * poll_grace_ns, FI_MRC_POLL_GRACE_US) it is the progress engine:
	 * the progress thread leaves the QPs' CQs unarmed (mrcd rings no
	 * doorbell, the thread is not woken per message and does not fight
	 * the application for d->lock and the CPU) and only looks again
	 * when the grace is over. */
	uint64_t poll_grace_ns;
	uint64_t app_poll_ns;        /* when fi_cq_read last ran (atomic) */
	unsigned yield_empty;        /* FI_MRC_YIELD: sched_yield after that many empty reads */
	unsigned empty_reads;
	/* FI_MRC_IDLE_US: an fi_cq_read finding nothing, after MRCFI_IDLE_AFTER
	 * empty reads in a row that began FI_MRC_IDLE_SPIN_US ago or more,
	 * sleeps this long, giving the CPU to mrcd; a short wait (a
	 * ping-pong's) only spins */
	uint64_t idle_ns, idle_spin_ns;
	uint64_t idle_since;         /* when the run of empty reads began */
	unsigned idle_run;
	/* FI_MRC_STATS=1: counters printed at fi_close(domain) */
	int stats;
	uint64_t st_wakeups, st_armed_sleeps, st_grace_sleeps, st_reads, st_empty_reads;
	uint64_t st_idle_sleeps;     /* MRCFI_OPT_IDLE_SLEEPS */
	struct mrcfi_tent *trace;    /* FI_MRC_TRACE (fi/trace.h) */
	uint32_t ntrace;
	const char *trace_dir;
};
/* fi/wait.c: CLOCK_MONOTONIC in ns and ms; the queues' eventfds (a
 * wait of timeout_ms < 0 is forever); FI_GETWAIT of one; a prov_errno's
 * string; the fid ops nothing implements. */
uint64_t mrcfi_now_ns(void);
int64_t mrcfi_now_ms(void);
void mrcfi_efd_ring(int fd);
void mrcfi_efd_drain(int fd);
int mrcfi_efd_wait(int fd, int timeout_ms);
int mrcfi_efd_sleep(int efd, int64_t end, int timeout);
int mrcfi_getwait(int efd, int command, void *arg);
const char *mrcfi_strerror(int prov_errno, char *buf, size_t len);
int mrcfi_no_tostr(const struct fid *fid, char *buf, size_t len);
int mrcfi_no_ops_set(struct fid *fid, const char *name, uint64_t flags, void *ops, void *ctx);
/* The application is about to block (fi_cq_sread, fi_cntr_wait): its
 * grace ends now and the progress thread arms the CQs at once. */
void mrcfi_app_sleeps(struct mrcfi_domain *d);

struct mrcfi_mr {
	struct fid_mr mr;
	struct mrcfi_domain *d;
	struct mrc_mr *m[2];
	const void *buf;
	size_t len;
	uint64_t access;
};

/* ---- address vector -------------------------------------------------- */
struct mrcfi_av {
	struct fid_av av;
	struct mrcfi_domain *d;
	enum fi_av_type type;
	struct mrcfi_eq *eq;
	struct mrcfi_name *names;    /* FI_AV_TABLE: by index */
	uint8_t *used;
	size_t n, cap;
	int refs;
};
/* fi_addr -> name (0) or -FI_EINVAL; name -> fi_addr or FI_ADDR_NOTAVAIL. */
int mrcfi_av_get(struct mrcfi_av *av, fi_addr_t a, struct mrcfi_name *out);
fi_addr_t mrcfi_av_rev(struct mrcfi_av *av, const struct mrcfi_name *n);

/* ---- completion queue ------------------------------------------------ */
struct mrcfi_cqe {
	struct fi_cq_tagged_entry e;
	fi_addr_t src;
	int err, prov_errno;
	size_t olen;
};
struct mrcfi_cq {
	struct fid_cq cq;
	struct mrcfi_domain *d;
	enum fi_cq_format fmt;
	size_t esize;
	enum fi_wait_obj wait;
	int efd;                     /* eventfd: an entry was added (or signal) */
	struct mrcfi_cqe *q;
	size_t head, cnt, cap;
	int signaled, refs;
	struct mrcfi_cqe lasterr;
};
/* Under d->lock.  err: positive FI_E* or 0. */
void mrcfi_cq_add(struct mrcfi_cq *cq, const struct mrcfi_cqe *c);

struct mrcfi_cntr {
	struct fid_cntr c;
	struct mrcfi_domain *d;
	uint64_t val, err;
	pthread_cond_t cond;
	int refs;
};
void mrcfi_cntr_inc(struct mrcfi_cntr *c, int err);

struct mrcfi_eq_ev {
	uint32_t event;
	int err;
	size_t len;
	union {
		struct fi_eq_entry e;
		struct fi_eq_err_entry ee;
		uint8_t raw[sizeof(struct fi_eq_err_entry) + 64];
	} u;
};
struct mrcfi_eq {
	struct fid_eq eq;
	pthread_mutex_t lock;
	int efd;
	enum fi_wait_obj wait;
	struct mrcfi_eq_ev *q;
	size_t head, cnt, cap;
};
int mrcfi_eq_post(struct mrcfi_eq *eq, uint32_t event, const void *buf, size_t len, int err);

/* ---- endpoint -------------------------------------------------------- */
struct mrcfi_peer {
	struct mrcfi_peer *next;
	struct mrcfi_name name;
	struct mrc_qp *qp[2];        /* by the side of our end */
	uint32_t *slots[2];          /* receive slots posted on qp[s] */
	uint32_t nslots[2];          /* how many: rx_posted, more once grown */
	int tx;                      /* the side we send on (-1: not yet) */
	int broken[2];               /* qp[s] failed: reset after its drain */
	int bad;                     /* it broke the protocol: ignored */
	/* compact EAGERs (fi/proto.h): whether p takes them (its last
	 * EAGER or RTS said so), and per QP side the high tag bits of the
	 * last full tagged header sent and received (ok: there was one) */
	int compact_ok;
	int tx_base_ok[2], rx_base_ok[2];
	uint64_t tx_base[2], rx_base[2];
};

enum mrcfi_kind { K_SEND = 1, K_RZ, K_WRITE, K_ATOMIC, K_RECV };
struct mrcfi_req {
	struct mrcfi_req *next;      /* on a list of the endpoint */
	enum mrcfi_kind kind;
	uint32_t id;                 /* index in ep->reqs | generation << 16 */
	struct mrcfi_ep *ep;
	struct mrcfi_peer *peer;
	void *context;
	uint64_t flags;              /* CQ entry flags */
	int completion;              /* make a CQ entry on success */
	int early;                   /* reported done at the post (eager) */
	uint64_t tag, ignore, data;
	int has_data;
	/* user buffer (send: copied from; recv: copied to) */
	struct iovec iov[4];
	size_t niov, len;
	/* send/write side */
	size_t sent;                 /* bytes handed to WRITEs so far */
	int pending;                 /* mrc work requests outstanding */
	int ended, err;
	/* CTSs granted to us and not written yet, in order */
	struct { uint64_t off, roff; uint32_t len, rkey, rreq; } cts[MRCFI_PIPE];
	int ncts;
	uint64_t ctsnext;            /* the offset the next CTS must grant */
	uint64_t raddr;
	uint32_t rkey;
	/* recv side */
	fi_addr_t src;               /* FI_ADDR_UNSPEC: any */
	struct mrcfi_name srcname;
	int side;                    /* rendezvous: our side of the sender's QP */
	uint32_t sreq;
	uint64_t total, want, got, gnext;   /* gnext: next offset to grant */
	/* chunks granted and not yet filled, in granting order */
	struct { int idx; uint64_t off; uint32_t len; } ch[MRCFI_PIPE];
	int nch;
	/* FI_MULTI_RECV: a buffer's next free byte; on a receive carved from
	 * it, that its completion releases the buffer */
	uint64_t moff;
	int multi_last;
};

/* An arrived message no receive matched yet. */
struct mrcfi_unexp {
	struct mrcfi_unexp *next;
	struct mrcfi_peer *peer;
	int side;
	uint8_t op, flags;
	uint64_t tag, data, total;
	uint32_t sreq;
	void *claim;                 /* FI_PEEK|FI_CLAIM: the claiming context */
	void *payload;               /* EAGER: a copy, or in the held slot */
	int held;                    /* over the bound: payload is rx slot hslot */
	uint32_t hslot;
};

/* A control message waiting for a send slot. */
struct mrcfi_ctlq {
	struct mrcfi_ctlq *next;
	struct mrcfi_peer *peer;
	struct mrcfi_hdr h;
};

#define MRCFI_MAX_REQS 4096u
struct mrcfi_ep {
	struct fid_ep ep;
	struct mrcfi_ep *next;
	struct mrcfi_domain *d;
	struct fi_info *info;
	struct mrcfi_name name;
	uint64_t caps;
	struct mrcfi_av *av;
	struct mrcfi_cq *txcq, *rxcq;
	uint64_t txflags, rxflags;   /* FI_SELECTIVE_COMPLETION per CQ */
	uint64_t op_flags_tx, op_flags_rx;
	struct mrcfi_cntr *c_send, *c_recv, *c_write, *c_read;
	struct mrcfi_eq *eq;
	int enabled;
	struct mrcfi_peer *peers;
	struct mrcfi_req *posted[2], *posted_tail[2];    /* [0] msg, [1] tagged */
	struct mrcfi_unexp *unexp[2], *unexp_tail[2];
	struct mrcfi_req *wait_chunk;  /* receives waiting for an rx chunk */
	struct mrcfi_req *wait_tx;     /* sends/writes waiting for a tx chunk or slot */
	struct mrcfi_ctlq *ctlq, *ctlq_tail;
	struct mrcfi_req *reqs[MRCFI_MAX_REQS];
	uint16_t gen[MRCFI_MAX_REQS];
	uint32_t req_next;
	uint32_t unexp_n;            /* entries queued, and bytes copied: bounded */
	uint64_t unexp_bytes;
	uint32_t rx_slot;            /* the slot on_recv reads; set if it holds it */
	int rx_held;
	uint64_t unexp_held;         /* MRCFI_OPT_UNEXP_HELD */
	uint64_t rx_grown;           /* MRCFI_OPT_RX_GROWN */
	uint64_t compact_sent;       /* MRCFI_OPT_COMPACT_SENT */
	uint32_t rx_reposted;        /* receive slots reposted in this drain */
	uint64_t proto_errors;       /* messages refused (docs/libfabric.md) */
	uint64_t late_errors;        /* eager sends that failed after done */
	size_t min_multi_recv;       /* FI_OPT_MIN_MULTI_RECV */
};

int mrcfi_ep_open(struct fid_domain *dom, struct fi_info *info, struct fid_ep **ep, void *ctx);
extern struct fi_ops_rma mrcfi_rma_ops;        /* fi/epops_rma.c */
extern struct fi_ops_atomic mrcfi_atomic_ops;
/* Progress: drain every QP of the domain (under d->lock); arm: and arm
 * their CQs, for the progress thread about to sleep on the doorbell. */
void mrcfi_progress(struct mrcfi_domain *d, int arm);
/* A new QP of side 0 accepted from remote (under d->lock). */
void mrcfi_ep_accepted(struct mrcfi_domain *d, struct mrcfi_ep *ep, struct mrc_qp *qp,
		       const struct mrc_qp_addr *remote);
void mrcfi_fail_all(struct mrcfi_domain *d, int err);
/* The data path behind the ops tables (fi/epops.c), each taking d->lock:
 * flags are the CQ-visible FI_* flags of the operation. */
ssize_t mrcfi_do_send(struct mrcfi_ep *ep, const struct iovec *iov, size_t niov, fi_addr_t dest,
		      uint64_t tag, uint64_t data, uint64_t flags, void *context);
ssize_t mrcfi_do_recv(struct mrcfi_ep *ep, const struct iovec *iov, size_t niov, fi_addr_t src,
		      uint64_t tag, uint64_t ignore, uint64_t flags, void *context);
ssize_t mrcfi_do_write(struct mrcfi_ep *ep, const struct iovec *iov, size_t niov, fi_addr_t dest,
		       uint64_t addr, uint64_t key, uint64_t data, uint64_t flags, void *context);
ssize_t mrcfi_do_atomic(struct mrcfi_ep *ep, const void *buf, size_t count, fi_addr_t dest,
			uint64_t addr, uint64_t key, enum fi_datatype dt, enum fi_op op,
			uint64_t flags, void *context);
/* Under d->lock: a posted receive of that context cancelled (0), or
 * -FI_ENOENT; everything of a closing endpoint given back. */
int mrcfi_cancel(struct mrcfi_ep *ep, void *context);
void mrcfi_ep_teardown(struct mrcfi_ep *ep);
/* Transmits of ep not yet over in mrc, and queued control messages. */
unsigned mrcfi_ep_tx_pending(struct mrcfi_ep *ep);
/* Attaches what the accept thread queued (under d->lock). */
void mrcfi_accept_drain(struct mrcfi_domain *d);

/* ---- domain ---------------------------------------------------------- */
int mrcfi_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
		  const struct fi_info *hints, struct fi_info **info);
int mrcfi_domain_open(struct fid_fabric *fab, struct fi_info *info, struct fid_domain **dom,
		      void *context);
int mrcfi_av_open(struct fid_domain *dom, struct fi_av_attr *attr, struct fid_av **av, void *ctx);
int mrcfi_cq_open(struct fid_domain *dom, struct fi_cq_attr *attr, struct fid_cq **cq, void *ctx);
int mrcfi_cntr_open(struct fid_domain *dom, struct fi_cntr_attr *attr, struct fid_cntr **c,
		    void *ctx);
int mrcfi_eq_open(struct fid_fabric *fab, struct fi_eq_attr *attr, struct fid_eq **eq, void *ctx);
int mrcfi_mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access, uint64_t offset,
		 uint64_t requested_key, uint64_t flags, struct fid_mr **mr, void *context);
int mrcfi_mr_regv(struct fid *fid, const struct iovec *iov, size_t count, uint64_t access,
		  uint64_t offset, uint64_t requested_key, uint64_t flags, struct fid_mr **mr,
		  void *context);
int mrcfi_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr, uint64_t flags,
		     struct fid_mr **mr);
int mrcfi_atomic_ok(enum fi_datatype dt, enum fi_op op);

/* Pools. */
int mrcfi_pool_get(struct mrcfi_pool *p, void *owner);
void mrcfi_pool_put(struct mrcfi_pool *p, uint32_t i);

/* errno (positive) from a libmrc status. */
static inline int mrcfi_err(int status)
{
	return status < 0 ? -status : status;
}

/* Stubs for ops tables. */
int mrcfi_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags);
int mrcfi_no_control(struct fid *fid, int command, void *arg);
int mrcfi_no_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops, void *ctx);

#endif

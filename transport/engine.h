/* The MRC protocol engine: sans-IO.
 *
 * The caller feeds it packets (mrce_rx), time (every call takes `now`
 * in nanoseconds from any monotonic origin) and posted work (mrc_qp_post_*);
 * it returns packets to send, each with the EV (path) to send it on
 * (mrce_tx), completions (mrce_wc_drain), events
 * (mrce_event_pop) and its next timer deadline
 * (mrce_next_deadline; call mrce_tick then).  It performs no
 * syscalls but its allocations', reads no clock and allocates nothing
 * outside mrce_create, mrce_peer_add (one anonymous mapping per peer)
 * and mrce_qp_open, so the daemon, the simulator and the tests run it
 * unchanged.  It is not thread-safe: one thread drives one engine.
 *
 * Peers are other engines (hosts).  Each peer has an EV table: EV e names
 * one path to that peer (the caller maps it to a route, e.g. an SRv6 uSID
 * address) and belongs to one plane.  Path health (EV state, RTT) lives in
 * the peer, so every QP to that peer shares it: what one QP learns protects
 * the others at once.  The reverse path of EV e must be EV e of the peer's
 * table for us (ACKs and probe replies are echoed on the EV they answer).
 */
#ifndef MRC_TRANSPORT_ENGINE_H
#define MRC_TRANSPORT_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "mrc/ring.h"
#include "transport/wire.h"

struct mrce;

#define MRCE_MAX_PLANES 16
#define MRCE_MAX_EVS    4096
/* The in-flight window of a QP is bounded by the SACK bitmap, so every
 * packet in flight is always covered by the ACK's selective bitmap. */
#define MRCE_MAX_WINDOW MRC_SACK_BITS
#define MRCE_MAX_MSG    (1ull << 30)   /* 1 GiB */
#define MRCE_MAX_MRS   (1u << 20)     /* regions one engine may hold */

/* Remote/local access rights of a memory region. */
#define MRCE_ACCESS_LOCAL_READ   0x1u
#define MRCE_ACCESS_REMOTE_WRITE 0x2u
#define MRCE_ACCESS_REMOTE_ATOMIC 0x4u
#define MRCE_ACCESS_LOCAL_WRITE  0x8u   /* RECV buffers */

/* Congestion control, per QP, sender side. */
enum mrce_cc_algo {
	MRCE_CC_NSCC = 0,           /* delay- and ECN-driven window in the spirit
	                              of UET NSCC (the default) */
	MRCE_CC_FIXED = 1,          /* none: the window alone bounds the QP */
};

struct mrce_cfg {
	uint32_t mtu;              /* payload bytes per packet (default 4096) */
	uint32_t max_qps;          /* default 1024 */
	uint32_t max_peers;        /* default 256 */
	uint32_t max_mrs;          /* default 4096, at most MRCE_MAX_MRS */
	uint32_t window;           /* packets in flight per QP, power of 2,
	                              <= MRCE_MAX_WINDOW (default 256) */
	uint32_t sq_depth;         /* work requests per QP, power of 2 (256) */
	uint32_t rq_depth;         /* posted receives per QP, power of 2 (256) */
	uint32_t ctrl_queue;       /* queued ACK/probe packets (4096) */
	uint32_t event_queue;      /* queued events (1024) */
	uint32_t ev_floor;         /* fewest GOOD EVs per peer: a loss does not
	                              retire a path below it (1) */
	uint32_t max_retries;      /* losses per packet before the QP fails
	                              with -ETIMEDOUT (24); trims and RNR
	                              NACKs do not count */
	uint64_t rto_min_ns;       /* default 1 ms */
	uint64_t rto_max_ns;       /* default 200 ms */
	uint64_t rto_init_ns;      /* before any RTT sample (default 10 ms) */
	uint64_t tlp_min_ns;       /* tail-loss probe: the last packet in flight
	                              is resent on another plane after no ACK
	                              progress for max(2 x srtt, this); 0:
	                              off (default 50 us; loss.c) */
	uint32_t tlp_lone;         /* 1: a packet alone in flight is probed
	                              too, the peer unheard since it left
	                              (loss.c lone_tail; its wait includes
	                              ack_delay_ns, which must be the peer's
	                              real hold: a timer to the microsecond).
	                              Default 1 */
	uint64_t reorder_slack_ns; /* extra wait before a late packet is lost
	                              (default 10 us; also >= minRTT/4; grows
	                              per QP when losses prove spurious) */
	uint64_t probe_interval_ns;/* ASSUMED_BAD EVs are probed this often
	                              (default 2 ms) */
	uint64_t probe_max_interval_ns; /* each probe lost doubles a path's
	                              interval up to this (default 64 ms, >=
	                              probe_interval_ns): a dead spine costs a
	                              host little, and a repaired path is
	                              back within one of these */
	uint32_t probe_ok_needed;  /* probe replies in a row to return GOOD (2) */
	uint32_t noqp_per_s;       /* NOQP NACKs sent at most this many per
	                              second (token bucket, all peers), beyond
	                              a burst of noqp_burst; the rest are
	                              counted (noqp_limited) and not sent: a
	                              spoofed source cannot make us a
	                              reflector (1000, 0: none sent) */
	uint32_t noqp_burst;       /* (64; 0 counts as 1) */
	uint64_t rnr_delay_ns;     /* retry delay after an RNR NACK (100 us) */
	uint32_t rnr_retry;        /* RNR NACKs a packet may get before its QP
	                              fails with -ENOBUFS, apart from
	                              max_retries; 0..7, 7 = forever (as IBV's
	                              rnr_retry); per QP: mrce_qp_attr (7) */
	uint64_t no_path_timeout_ns;/* a QP with work and every path to its
	                              peer DENIED fails with -ENETUNREACH after
	                              this long; a path back before then
	                              resumes it (1 s) */
	uint32_t ack_every;        /* one ACK per this many data packets at most;
	                              pending ACKs also leave at the next
	                              mrce_tx (4) */
	uint64_t ack_delay_ns;     /* a QP that sent data lately holds its ACK
	                              up to this long for data of its own to
	                              ride on (piggybacked ACK, docs/wire.md);
	                              0: never held.  At most 1 ms and
	                              rto_min_ns / 4 (default 32 us) */
	enum mrce_cc_algo cc;       /* congestion control (MRCE_CC_NSCC) */
	uint32_t bulk_min_pct;     /* traffic classes (mrce_qp_attr.tclass):
	                              URGENT QPs send first; while both
	                              bands have data, the others still get
	                              this share of the data packets, so
	                              bulk is never starved.  0..50; 0:
	                              strict priority (default 10) */
	uint8_t xack;              /* 1: a held ACK may ride on data of another
	                              QP to the same peer (cross-QP ACK, a 24-
	                              byte header extension; docs/wire.md),
	                              and is held while any QP to that peer
	                              sent data lately.  Every engine of a
	                              cluster must agree; not with the AEAD
	                              mode.  Default 0 (mrcd: its key xack) */
	uint8_t require_tokens;    /* mrce_qp_connect refuses a QP, or a peer,
	                              whose tokens are still 0 (default 0; the
	                              daemon sets it, the simulator does not) */
	uint32_t qp_ev_stats;      /* EVs 0..N-1 of a QP's peer counted per QP
	                              (mrce_qp_ev_stats), 16 bytes each per QP;
	                              the EVs above share one bucket; 0: off
	                              (64, at most MRCE_MAX_EVS) */
	uint8_t skip_payload_crc;  /* 1: data payloads get a zero trailer and
	                              arriving ones are not checked (headers
	                              still are).  Only for the simulator, whose
	                              fabric cannot corrupt a payload and where
	                              the two CRCs were 4% of the run; every
	                              engine of a fabric must agree.  Default 0:
	                              the daemon always verifies. */
	uint32_t spray_slot;       /* 1 + this host's index among the hosts that
	                              share its uplinks up to the top tier (its
	                              leaf in a 2-tier Clos, its pod in a fat
	                              tree); every peer's spray then starts that
	                              many EVs into each plane's order, so hosts
	                              sending at once take distinct uplinks in
	                              every packet slot.  0 (default): a hash of
	                              the QP (qp.c spray_phase) */
	uint32_t window_pool;      /* QPs that may hold window state at once,
	                              each half apart (transport/wpool.c): a
	                              QP's sender slots are taken from a pool
	                              when work is posted and given back once
	                              all of it is acked, its receive records
	                              when a data packet arrives and given
	                              back once nothing is out of order and
	                              its completions are polled.  With the
	                              pool empty a post waits (wpool_waits;
	                              the QP sends once a block is back) and
	                              a data packet is refused with an RNR
	                              NACK (wpool_rnr; the sender retries as
	                              after any RNR).  1..max_qps; 0
	                              (default): max_qps, never empty */
};

/* Fills every field with its default. */
void mrce_cfg_default(struct mrce_cfg *cfg);

/* Validates cfg (precise -EINVAL reasons in *why when non-NULL) and
 * allocates everything up front. */
int mrce_create(const struct mrce_cfg *cfg, struct mrce **out,
		      const char **why);
void mrce_destroy(struct mrce *e);

/* ---- memory registration ------------------------------------------- */
/* pd is a protection domain (a client): a remote peer may touch only the
 * regions of the pd that owns the target QP.  key is engine-chosen: all 32
 * bits are a generation (a bijection of the registration count), never a
 * slot number, so a key does not come back for 2^32 registrations and a
 * stale key never names a region registered since; never 0.  -ENOSPC when
 * max_mrs regions are registered. */
int mrce_mr_add(struct mrce *e, uint32_t pd, void *base, uint64_t len,
	       uint32_t access, uint32_t *key);
/* -EBUSY while work requests still reference the region. */
int mrce_mr_remove(struct mrce *e, uint32_t key);

/* ---- peers and paths ------------------------------------------------ */
enum mrce_ev_state { MRCE_EV_GOOD = 0, MRCE_EV_ASSUMED_BAD = 1, MRCE_EV_DENIED = 2 };

/* Adds a peer with nev paths; plane_of[e] is EV e's plane (< 16). */
int mrce_peer_add(struct mrce *e, uint32_t nev, const uint8_t *plane_of,
		 uint32_t *peer);
int mrce_peer_remove(struct mrce *e, uint32_t peer);
/* Admin / link state: a DENIED EV is never used or probed.  Allowing it
 * makes it ASSUMED_BAD: it returns to GOOD after successful probes. */
int mrce_ev_set_denied(struct mrce *e, uint64_t now, uint32_t peer,
		      uint32_t ev, int deny);
int mrce_plane_set_denied(struct mrce *e, uint64_t now, uint32_t peer,
			 uint32_t plane, int deny);
/* Takes a GOOD EV out of use as ASSUMED_BAD (reason DENY): unlike a
 * DENIED one it is probed, returns to GOOD when its probes answer, and
 * answers the peer's probes (mrcd's fabric health: a path denied on
 * shared evidence must not stop its peer from seeing it heal).  Other
 * states are left as they are. */
int mrce_ev_set_bad(struct mrce *e, uint64_t now, uint32_t peer, uint32_t ev);
/* A detour EV carries data only while its plane has no other GOOD EV to
 * the peer: the path through a spine between two hosts of one leaf uses
 * the same host links as the one-hop path plus two leaf uplinks, so
 * spraying over it adds load on the uplinks and never capacity.  It is
 * probed and retired like any EV (default: not a detour). */
int mrce_ev_set_detour(struct mrce *e, uint32_t peer, uint32_t ev, int detour);
/* Tokens of PROBE / PROBE_REPLY packets with this peer: tx goes in the
 * ones we send, rx is required in the ones we receive (others are dropped
 * and counted, rx_bad_token[MRCE_TOK_PROBE]).  Opaque to the engine; the
 * daemon derives them per host pair (auth/auth.h).  Both 0 until set. */
int mrce_peer_set_probe_tokens(struct mrce *e, uint32_t peer, uint64_t tx,
			      uint64_t rx);
/* A peer that is this very host, whose datagrams the caller hands over
 * inside its process and never puts on a wire (mrcd's local.c): its data
 * packets leave with a zero payload CRC, and datagrams from it that the
 * caller flags MRCE_RX_LOCAL are taken without checking one (nothing
 * could have corrupted them).  Unflagged datagrams are checked as any
 * peer's.  Default 0. */
int mrce_peer_set_local(struct mrce *e, uint32_t peer, int local);
/* Sends one probe on EV ev now; the result arrives as an event. */
int mrce_ev_probe(struct mrce *e, uint64_t now, uint32_t peer, uint32_t ev);

struct mrce_ev_info {
	uint8_t state;             /* enum mrce_ev_state */
	uint8_t plane;
	uint8_t last_reason;       /* enum mrce_ev_reason of the last change */
	uint8_t detour;            /* marked by mrce_ev_set_detour */
	uint64_t srtt_ns, rttvar_ns;   /* kept in 32 bits: saturate at
	                              2^32 - 1 ns (4.29 s) */
	uint64_t last_change_ns;
	uint64_t tx_pkts, lost, trims, ecn;
	uint64_t probes_sent, probes_ok;   /* modulo 2^32 */
	uint64_t last_ack_ns;      /* when a packet sent on it was last
	                              acknowledged (0: never): proof the path
	                              delivered, which tx_pkts is not */
};
int mrce_ev_info(const struct mrce *e, uint32_t peer, uint32_t ev,
		struct mrce_ev_info *info);

/* ---- queue pairs ---------------------------------------------------- */
enum mrce_qp_state { MRCE_QPS_RESET = 0, MRCE_QPS_RTS = 1, MRCE_QPS_ERROR = 2 };
#define MRCE_QP_PIN_EV 0x1u         /* single-path (ECMP-like) mode */
#define MRCE_QP_RNR_RETRY 0x2u      /* rnr_retry below overrides the cfg's */
#define MRCE_RNR_RETRY_FOREVER 7u

/* Traffic classes of a QP.  mrce_tx serves URGENT QPs' data first and the
 * rest (DEFAULT and BULK, round robin together) with what is left, never
 * less than cfg.bulk_min_pct of the data packets while both have work.
 * Every packet a QP sends (data, ACK, NACK) carries its class out of
 * mrce_tx (mrce_tx_pkt.tclass) for the caller to mark, e.g. as the IPv6
 * DSCP; nothing of it is on the MRC wire.  Probes and NOQP NACKs are
 * DEFAULT. */
enum mrce_tclass {
	MRCE_TC_DEFAULT = 0,        /* as before classes existed */
	MRCE_TC_URGENT = 1,         /* what a step waits on: latency first */
	MRCE_TC_BULK = 2,           /* background: prefetch, checkpoint */
	MRCE_TC__COUNT
};
const char *mrce_tclass_name(unsigned tc);

struct mrce_qp_attr {
	uint32_t pd;
	uint32_t flags;            /* MRCE_QP_PIN_EV, MRCE_QP_RNR_RETRY */
	uint32_t pin_ev;           /* preferred EV in single-path mode */
	uint32_t rnr_retry;        /* 0..7 (7 = forever), with MRCE_QP_RNR_RETRY */
	uint32_t plane_mask;       /* bit p: plane p may carry this QP's data
	                              packets; 0 = every plane.  While no
	                              masked plane has a usable path the QP
	                              sprays over all planes (a dead plane
	                              never hangs it); ACKs and control use
	                              any plane; MRCE_QP_PIN_EV overrides it.
	                              Bits >= MRCE_MAX_PLANES: -EINVAL. */
	uint32_t tclass;           /* enum mrce_tclass (MRCE_TC_DEFAULT);
	                              others: -EINVAL */
};
int mrce_qp_open(struct mrce *e, const struct mrce_qp_attr *attr, uint32_t *qpn);
/* Frees the QP; outstanding work is dropped without completions. */
int mrce_qp_close(struct mrce *e, uint32_t qpn);
/* Connects to remote QP rqpn on peer.  sq_psn: first PSN we send;
 * rq_psn: first PSN we expect (the peer's sq_psn). */
int mrce_qp_connect(struct mrce *e, uint32_t qpn, uint32_t peer, uint32_t rqpn,
		   uint32_t sq_psn, uint32_t rq_psn);
/* The connection's tokens, set before mrce_qp_connect (-EISCONN after):
 * tx goes in every data packet and ACK/NACK the QP sends, rx is required in
 * every one it receives (others are dropped before any effect and counted
 * in rx_bad_token).  A NOQP NACK echoes the token of the data packet it
 * answers, so it must carry our tx.  Opaque here; derived per connection
 * from the cluster key and both sides' nonces (auth/auth.h).  Both 0 until
 * set, which matches a peer that does not set them either. */
int mrce_qp_set_tokens(struct mrce *e, uint32_t qpn, uint64_t tx, uint64_t rx);
/* What the QP sends at most: window packets in flight (a power of two,
 * 4..cfg.window) and mtu payload bytes per packet (64..cfg.mtu); the
 * daemon sets the smaller of both sides' values, negotiated at connection
 * setup, so a peer with a smaller window is never overrun.  Before
 * mrce_qp_connect (-EISCONN after); the cfg's values until set. */
int mrce_qp_set_limits(struct mrce *e, uint32_t qpn, uint32_t window, uint32_t mtu);

/* A work request is the ring ABI's submission descriptor (mrc/ring.h),
 * the form it has from the client's ring to here: the daemon validates a
 * private copy (codec/ringcheck.h) and posts that copy unchanged; the
 * simulator, tools and tests fill one the same way.  op is one of
 * MRC_SQE_WRITE, _WRITE_IMM, _SEND, _SEND_IMM, _ATOMIC_ADD (RECV buffers
 * go through mrce_qp_post_recv); seq and the reserved fields are not read.
 * The engine's fields: wr_id; flags (MRC_SQE_F_FENCE, below);
 * lkey, loff (local source, not for ATOMIC_ADD); len (<= MRCE_MAX_MSG);
 * rkey, roff (WRITE*, ATOMIC_ADD); imm (*_IMM); add (ATOMIC_ADD: remote
 * u64 += add).
 * Fence (MRC_SQE_F_FENCE, as IBV_SEND_FENCE): the work request is not
 * started until every earlier one of the QP has completed, i.e. was
 * acknowledged, so its data lands after every earlier WRITE and atomic took
 * effect at the target.  Costs a round trip; docs/client.md ("Ordering")
 * says which orders hold without it.
 * -ENOSPC when the send queue is full, -EINVAL/-EACCES for a bad local
 * key or range (checked at post time) or unknown flags, -ENOTCONN before
 * connect.  Work that cannot finish completes with: -ETIMEDOUT (a packet
 * lost max_retries times), -ENOBUFS (RNR NACKed past rnr_retry),
 * -ENETUNREACH (every path DENIED for no_path_timeout_ns), -EACCES,
 * -EMSGSIZE, -ECONNRESET (the remote QP is gone); the rest of the QP's
 * work is flushed with -ECANCELED. */
int mrce_qp_post(struct mrce *e, uint64_t now, uint32_t qpn, const struct mrc_sqe *wr);
int mrce_qp_post_recv(struct mrce *e, uint32_t qpn, uint64_t wr_id,
		     uint32_t lkey, uint64_t off, uint64_t len);

/* Completion opcodes: the ring ABI's (mrc/ring.h), so a completion keeps
 * its op from here to the client's ring.  A sender's completion carries
 * its work request's op. */
enum mrce_wc_op {
	MRCE_WC_WRITE = MRC_CQE_WRITE,
	MRCE_WC_WRITE_IMM = MRC_CQE_WRITE_IMM,
	MRCE_WC_SEND = MRC_CQE_SEND,
	MRCE_WC_SEND_IMM = MRC_CQE_SEND_IMM,
	MRCE_WC_ATOMIC_ADD = MRC_CQE_ATOMIC_ADD,
	MRCE_WC_RECV = MRC_CQE_RECV,                     /* a SEND / SEND_IMM landed in a RECV */
	MRCE_WC_RECV_WRITE_IMM = MRC_CQE_RECV_WRITE_IMM, /* a WRITE_IMM was placed (no RECV used) */
};
struct mrce_wc {
	uint64_t wr_id;            /* RECV_WRITE_IMM: 0 */
	uint32_t qpn;
	uint8_t op;                /* enum mrce_wc_op */
	uint8_t has_imm;
	int32_t status;            /* 0 or negative errno, see mrc_strerror */
	uint64_t byte_len;
	uint32_t imm;
};
/* Completions of each QP come in posting order (for receive completions:
 * in the order the remote posted them).  Returns how many were written. */
int mrce_wc_drain(struct mrce *e, struct mrce_wc *wc, int max);

/* Moves the QP to ERROR now: every work request not yet complete completes
 * with err (e.g. -ESHUTDOWN), posted RECVs with -ECANCELED. */
int mrce_qp_abort(struct mrce *e, uint64_t now, uint32_t qpn, int err);
/* How many QPs still have work requests that have not completed (a
 * draining shutdown waits for 0). */
uint32_t mrce_busy_qps(const struct mrce *e);
/* mrce_qp_abort on every QP that still has work; returns how many. */
uint32_t mrce_abort_all(struct mrce *e, uint64_t now, int err);

struct mrce_qp_info {
	uint8_t state;
	int32_t error;             /* why it entered ERROR (negative errno) */
	uint32_t peer, rqpn;
	uint32_t inflight, cwnd_bytes;
	uint64_t srtt_ns, rto_ns;
	uint64_t tx_pkts, retx, rto_fires, trims_rx, nacks_rx, bytes_acked;
	uint64_t rnr_rx;           /* RNR NACKs received (retried apart) */
	uint64_t spurious;         /* losses declared that were reordering */
	uint64_t rto_spurious;     /* RTOs whose packet arrived anyway */
	uint32_t plane_mask;       /* as created (mrce_qp_attr) */
	uint32_t tclass;           /* as created (mrce_qp_attr) */
	uint64_t plane_tx[MRCE_MAX_PLANES]; /* data packets sent per plane: how
	                              the QP's traffic spreads over the fabric */
	uint64_t reorder_extra_ns; /* reorder tolerance learned from them (per
	                              peer: shared by its QPs) */
	uint64_t rx_pkts, rx_dups, bytes_placed;
	uint64_t ev_other_tx, ev_other_lost; /* on EVs >= cfg.qp_ev_stats */
};
int mrce_qp_info(const struct mrce *e, uint32_t qpn, struct mrce_qp_info *info);
/* Just mrce_qp_info's bytes_placed, for a caller that samples it around
 * every arriving packet (the simulator's goodput).  0 or -ENOENT. */
int mrce_qp_bytes_placed(const struct mrce *e, uint32_t qpn, uint64_t *bytes);
/* One QP's use of one EV: data packets it sent there (retransmissions
 * included) and how many of them were declared lost (by any signal: a
 * timeout, a NACK, a trim, reordering beyond the window). */
struct mrce_qp_ev_stat {
	uint64_t tx_pkts, lost_pkts;
};
/* Fills st[0..n) for EVs 0..n-1 of the QP's peer, n = the smallest of
 * max, cfg.qp_ev_stats and the peer's EV count; returns n (0 before the
 * QP is connected) or -ENOENT for an unknown QP.  The rest is in
 * mrce_qp_info's ev_other_tx/ev_other_lost. */
int mrce_qp_ev_stats(const struct mrce *e, uint32_t qpn, struct mrce_qp_ev_stat *st,
		     uint32_t max);

/* ---- packets in and out -------------------------------------------- */
/* A packet to send: hdr[0..hdr_len), then payload[0..plen) (straight from
 * registered memory: scatter-gather it, do not copy it), then, when plen > 0,
 * trailer[0..4).  The payload pointer is valid until the next engine call. */
/* Header bytes of a packet from mrce_tx: MRC_HDR_MAX, or a data header
 * with its XACK extension (only with cfg.xack). */
#define MRCE_TX_HDR_MAX MRC_DATA_XHDR_LEN
struct mrce_tx_pkt {
	uint32_t peer;
	uint16_t ev;
	uint16_t hdr_len;
	uint32_t plen;
	const uint8_t *payload;
	uint8_t trailer[MRC_TRAILER_LEN];
	uint8_t tclass;             /* enum mrce_tclass of the QP it is for */
	uint8_t hdr[MRCE_TX_HDR_MAX];
};
/* Fills up to max packets: control packets first, then retransmissions and
 * new data of every QP, round robin within a traffic class, URGENT QPs
 * before the others (enum mrce_tclass), as window and congestion allow. */
int mrce_tx(struct mrce *e, uint64_t now, struct mrce_tx_pkt *pkts, int max);
/* The datagram a packet describes: header, then payload and CRC trailer
 * when it has a payload.  MRCE_TX_PKT_MAX bytes always suffice.  For
 * callers that carry datagrams in buffers (the simulator's tests, the test
 * channel, fuzzers); the daemon sends the three parts as iovecs instead. */
#define MRCE_TX_PKT_MAX (MRCE_TX_HDR_MAX + MRC_MAX_PAYLOAD + MRC_TRAILER_LEN)
size_t mrce_tx_pkt_len(const struct mrce_tx_pkt *p);
size_t mrce_tx_pkt_copy(const struct mrce_tx_pkt *p, uint8_t *out);

#define MRCE_RX_ECN 0x1u   /* the IP header arrived marked ECN-CE */
/* The datagram never left the caller's process (mrce_peer_set_local):
 * honoured only from a peer marked local; never set for a wire datagram. */
#define MRCE_RX_LOCAL 0x2u
/* One datagram from peer.  Malformed packets are dropped and counted by
 * reason; returns 0 or the negative errno of the drop (for tracing only). */
int mrce_rx(struct mrce *e, uint64_t now, uint32_t peer,
		  const void *pkt, size_t len, uint32_t rx_flags);
/* The same for a data packet handed over inside the caller's process
 * whose payload was never copied next to its header (mrcd's local.c: a
 * pointer into the sender's registered memory): hdr[0..hdr_len) is the
 * header (with its XACK extension), payload[0..plen) the payload, no
 * trailer.  Taken only with MRCE_RX_LOCAL from a peer marked local
 * (mrce_peer_set_local), else dropped (-EPERM, counted rx_bad_peer);
 * plen must be the header's. */
int mrce_rx_split(struct mrce *e, uint64_t now, uint32_t peer, const void *hdr,
		  size_t hdr_len, const void *payload, size_t plen, uint32_t rx_flags);

/* When mrce_tick must next run (UINT64_MAX: no timer armed). */
uint64_t mrce_next_deadline(const struct mrce *e);
void mrce_tick(struct mrce *e, uint64_t now);
/* Nonzero when mrce_tx would produce a packet now. */
int mrce_tx_pending(const struct mrce *e);

/* ---- events --------------------------------------------------------- */
enum mrce_event_type {
	MRCE_EVT_EV_STATE = 1,      /* an EV changed state */
	MRCE_EVT_PROBE_RESULT,      /* a probe came back (rtt_ns) or timed out */
	MRCE_EVT_QP_ERROR,          /* a QP entered ERROR (err) */
	MRCE_EVT_FLOOR,             /* an EV was kept usable: ev_floor, or (reason RTO)
	                              a timeout while the whole peer was silent */
	MRCE_EVT_QP_NO_PATH,        /* a QP with work found every path to its
	                              peer DENIED: it waits up to
	                              no_path_timeout_ns, then fails (QP_ERROR
	                              with err -ENETUNREACH) */
	MRCE_EVT_QP_PATH_BACK,      /* a path returned to a waiting QP before the
	                              bound: it resumed, no error */
};
enum mrce_ev_reason {
	MRCE_RSN_NONE = 0, MRCE_RSN_LOSS, MRCE_RSN_RTO, MRCE_RSN_PROBE_OK,
	MRCE_RSN_PROBE_LOST, MRCE_RSN_DENY, MRCE_RSN_ALLOW,
	MRCE_RSN_SPURIOUS,          /* the loss that retired it was not one */
};
struct mrce_event {
	uint8_t type;
	uint8_t old_state, new_state, reason;
	uint32_t peer, ev, qpn;
	int32_t err;
	uint64_t time_ns;
	uint64_t rtt_ns;           /* PROBE_RESULT; UINT64_MAX when lost */
};
/* Returns 1 and fills *ev, or 0 when none is queued. */
int mrce_event_pop(struct mrce *e, struct mrce_event *ev);

const char *mrce_ev_state_name(uint8_t s);
const char *mrce_ev_reason_name(uint8_t r);

/* ---- counters ------------------------------------------------------- */
/* Packets dropped for a token that is not the expected one, by kind. */
enum mrce_tok_kind {
	MRCE_TOK_DATA = 0,          /* data packet for a QP of ours */
	MRCE_TOK_ACK,               /* ACK or NACK (not NOQP) for a QP of ours */
	MRCE_TOK_NOQP,              /* NOQP naming a QP of ours, token not ours */
	MRCE_TOK_PROBE,             /* PROBE or PROBE_REPLY from a peer */
	MRCE_TOK__COUNT,
};
const char *mrce_tok_kind_name(enum mrce_tok_kind k);

/* Why the decoder dropped a packet (rx_drop[1..MRCE_DROP__COUNT), 0 is
 * none) and the NACK codes (nack_*[1..MRCE_NACK_MAX]): callers index and
 * name the counters through these, never through the wire format. */
#define MRCE_DROP__COUNT MRC_DROP__COUNT
#define MRCE_NACK_MAX    MRC_NACK_MAX
const char *mrce_drop_name(unsigned why);

#define MRCE_RTO_HIST 9   /* buckets of the RTO evidence in mrce_stats */
struct mrce_stats {
	uint64_t rx_pkts, tx_pkts, tx_data, tx_retx, tx_acks, tx_probes;
	uint64_t rx_drop[MRCE_DROP__COUNT];  /* by decoder reason */
	uint64_t rx_unknown_qp, rx_bad_peer, rx_qp_error, rx_dup, rx_oow;
	uint64_t rx_trimmed, rx_ecn, nack_tx[MRCE_NACK_MAX + 1], nack_rx[MRCE_NACK_MAX + 1];
	uint64_t access_errors, rto_fires, loss_detected, ctrl_overflow;
	uint64_t events_dropped, ev_changes, bytes_placed, msgs_completed;
	uint64_t rx_bad_token[MRCE_TOK__COUNT];
	/* Losses: paths probed before being retired, probes (or a late ACK
	 * of the packet) answered (path kept), unanswered or a second loss
	 * with no congestion seen (path ASSUMED_BAD). */
	uint64_t suspect_probes, suspect_cleared, suspect_retired;
	/* Suspect waits extended because ECN or trims came meanwhile (deep
	 * queues delay the probe's answer too; issue 34). */
	uint64_t suspect_extended;
	/* ACKs that rode on data packets (sent, received and taken), and the
	 * held ACKs that found no data in time and left as ACK packets. */
	uint64_t tx_pb_acks, rx_pb_acks, ack_delay_expired;
	/* Of those, ACKs of another QP to the same peer that rode on a data
	 * packet (cfg.xack; sent, received and taken). */
	uint64_t tx_xacks, rx_xacks;
	/* PROBE_REPLYs (token right) that answer no outstanding probe of
	 * ours, exactly (seq and ts_echo): recorded, late or forged; they
	 * change nothing.  NOQP NACKs not sent by the rate limit. */
	uint64_t rx_probe_stale, noqp_limited;
	/* Data packets sent per traffic class, and the turns the scheduler
	 * gave the other classes over waiting URGENT QPs (their minimum
	 * share, cfg.bulk_min_pct). */
	uint64_t tx_class[MRCE_TC__COUNT], tx_share_turns;
	/* Tail-loss probes sent (cfg.tlp_min_ns; loss.c). */
	uint64_t tlp_probes;
	/* RTOs proven spurious: the first ACK after one echoed a transmission
	 * from before it (Eifel/F-RTO undo, ack_rx.c rto_check). */
	uint64_t rto_spurious;
	/* Packets the reorder window (RACK, loss.c) declared lost: with a
	 * later packet on their own path acknowledged (paths are FIFO: a
	 * real loss, or a reorder within the path), or with only later
	 * packets on other paths acknowledged (what spraying over paths of
	 * unequal queues does by design). */
	uint64_t loss_own_path, loss_cross_path;
	/* Loss declarations the peer proved wrong (it had the packet: an
	 * ACK of it before its resend left, or echoing an earlier copy),
	 * and of those, by the rule that declared them: own path, cross
	 * path, tail-loss probe, RTO. */
	uint64_t loss_spurious, loss_spurious_own, loss_spurious_cross, loss_spurious_tlp,
		 loss_spurious_rto;
	/* RTOs, the evidence (issue 32).  rto_lag: every fire by how late
	 * the engine ran it past its deadline (the host's own lag, its
	 * caller descheduled).  Of the fires proven spurious: rto_sp_after,
	 * by how long after the fire the ACK that judged it came; rto_sp_ratio,
	 * by its late round trip over the RTO that fired (below x1.25, 1.5,
	 * 2, 3, 4, 8, 16, 32, more); sums of the RTO that fired, the QP's
	 * srtt, rttvar and floor then and of the timer's lag; and how many
	 * fired with the peer silent (nothing sent since the oldest packet
	 * left acked on any QP).  Edges of rto_lag and rto_sp_after (us):
	 * 100, 250, 500, 1000, 2500, 5000, 10000, 25000, more. */
	uint64_t rto_lag[MRCE_RTO_HIST], rto_sp_after[MRCE_RTO_HIST], rto_sp_ratio[MRCE_RTO_HIST];
	uint64_t rto_sp_rto_ns, rto_sp_srtt_ns, rto_sp_rttvar_ns, rto_sp_floor_ns, rto_sp_lag_ns;
	uint64_t rto_sp_silent, rto_silent;
	/* Packets RTOs declared lost besides the oldest (their path silent
	 * since they left while the peer acked a later one), and of the
	 * spurious declarations by RTO (loss_spurious_rto) those. */
	uint64_t rto_lost_rest, loss_spurious_rto_rest;
	/* The window pool (cfg.window_pool): posts that found no send block
	 * and waited, data packets refused (RNR) for want of a receive block;
	 * blocks held now, and blocks ever handed out (the pool's pages that
	 * may be resident: a returned block is reused first). */
	uint64_t wpool_waits, wpool_rnr;
	uint64_t wpool_send_busy, wpool_recv_busy, wpool_send_hwm, wpool_recv_hwm;
};
void mrce_stats(const struct mrce *e, struct mrce_stats *st);

/* Bytes of engine memory per QP (fixed at create) and per in-flight packet,
 * for capacity planning (documented in docs/design.md). */
size_t mrce_qp_bytes(const struct mrce *e);

/* ---- the wire, as far as callers need it ----------------------------- */
/* CTRL datagrams, the AEAD mode's framing, single packets for tools. */
#include "transport/engine_wire.h"

#endif

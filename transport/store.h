/* The engine's store: the state every transport/ file shares (the engine,
 * its peers, paths, QPs, regions) and the services on it that they use
 * downward: region and QP lookup, the control-packet and event queues, the
 * lists of QPs that may send or have completions.  It calls no other
 * engine file.  Not installed. */
#ifndef MRC_TRANSPORT_STORE_H
#define MRC_TRANSPORT_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "transport/cc.h"
#include "transport/engine.h"

#define MRCE__NIL 0xffffu          /* end of an intrusive slot list */
#define MRCE__RING_BITS 256        /* bit rings indexed by psn & 255 */
#define MRCE__BANDS 2              /* scheduling bands: URGENT, the rest */

struct mrce__mr {
	uint8_t *base;
	uint64_t len;
	uint32_t pd, access, key, refs;
	uint8_t valid;
};

/* One path to a peer, shared by all QPs to that peer: one cache line
 * (the array is line aligned, mrce_peer_add) holding all that a clean run
 * writes (the pick, tx_pkts, RTT and last_ack per ACK, the probes of late
 * packets, setup's state changes).  What only losses, trims, ECN and bad
 * paths write is in
 * struct mrce__ev_cold, a side array whose pages are never touched until
 * then (zmem.c).  A peer has an EV per path, 264 on the 8-plane
 * Clos, and the simulator 8,192 hosts of peers: the 128-byte record this
 * replaces was 45% of the 8,192-host permutation's memory (issue 33). */
struct mrce__ev {
	uint8_t state : 2;
	uint8_t user_probe : 1;     /* report the next probe reply as an event */
	uint8_t detour : 1;         /* last resort in its plane (mrce_ev_set_detour) */
	uint8_t suspect : 1;        /* lost a packet: out of the spray until its
	                               probe answers (stays GOOD) or
	                               suspect_until passes (ASSUMED_BAD) */
	uint8_t plane;
	uint8_t penalty;            /* spray skip credits: ECN, trims, delay (<= 9) */
	uint8_t reason;             /* of the last state change */
	uint32_t probe_seq;         /* outstanding probe (0: none) */
	/* RTT in ns, saturating at 4.29 s (mrce__ev_rtt_update). */
	uint32_t srtt, rttvar;
	/* 32 bits: probes back off on a dead path (probe_backoff), so 2^32
	 * takes years. */
	uint32_t probes_sent, probes_ok;
	uint64_t last_ack;          /* when an ACK last came back on this EV */
	uint64_t tx_pkts;
	uint64_t probe_ts;          /* send time of the last probe */
	uint64_t alive_ts;          /* send time of the newest answered probe */
	/* Hot only because the DENIED EVs a fabric lacks (a Clos pair's
	 * one-hop paths across leaves) change state at setup. */
	uint64_t last_change;
};
_Static_assert(sizeof(struct mrce__ev) == 64, "struct mrce__ev: one cache line");

/* The rest of a path's record: written on losses, trims, ECN, suspects
 * and the probes of bad paths only (evs.c, ack_rx.c); read where those
 * are handled.  Reading an untouched page maps the zero page: no cost. */
struct mrce__ev_cold {
	uint64_t suspect_until;
	uint64_t next_probe;        /* ASSUMED_BAD: when its next probe goes */
	uint64_t kept_ts;           /* last loss not blamed: the peer was silent */
	uint64_t lost, trims, ecn;
	uint8_t ok_streak;          /* ASSUMED_BAD: probe replies in a row */
	uint8_t probe_backoff;      /* probes lost in a row: the interval doubles */
	uint8_t suspect_ext;        /* suspect waits extended (congestion seen) */
	uint8_t lone;               /* suspect with no probe out and no congestion
	                               seen: a second loss retires it */
	/* Send time of the packet whose loss made it suspect or retired it:
	 * an ACK of that packet or a later one on it gives it back. */
	uint64_t blame_ts;
};

struct mrce__peer {
	uint8_t used;
	uint8_t local;              /* this host, in-process (mrce_peer_set_local) */
	uint32_t nev, ngood, nbad;
	uint32_t ndetour;           /* EVs marked detour (spray skips a pass without) */
	uint32_t nsuspect;          /* GOOD paths waiting for a probe's answer */
	uint64_t last_cong;         /* last ECN mark or trim towards the peer */
	uint64_t acked_sent;        /* send time of the newest packet acked */
	uint64_t heard;             /* when the last of those ACKs came */
	uint64_t rtt_hi;            /* recent highest RTT (slow decay) */
	uint64_t rtt_avg;           /* smoothed RTT over all its paths */
	uint32_t probe_seq;
	uint64_t probe_tx_token, probe_rx_token;
	uint64_t min_rtt;
	/* Recent highest RTT of an answered probe (slow decay): where the
	 * fabric gives probes no priority queue they wait behind data, and a
	 * suspect path must be given that long to answer (suspect_wait). */
	uint64_t probe_rtt_hi;
	uint64_t next_probe_due;    /* earliest next_probe of a bad EV */
	/* Reordering is a property of the paths, so what one QP learns from
	 * spurious losses serves every QP to the peer. */
	uint64_t reo_extra;         /* learned extra reorder tolerance */
	uint64_t reo_own;           /* the same within one path (loss.c own) */
	uint32_t clean_acks;        /* ACKs since the last spurious loss */
	/* Cross-QP ACKs (cfg.xack): when a QP last sent data to the peer
	 * (which QP, and when another QP last did), and the one QP whose held
	 * ACK the next data packet to it carries. */
	uint64_t data_tx_ts, data_tx_prev;
	uint32_t data_tx_qpn;
	uint32_t xack_qpn;
	uint8_t xack_set;
	struct mrce__ev *paths;    /* 64-byte aligned, inside paths_mem */
	void *paths_mem;
	struct mrce__ev_cold *cold; /* nev of them (mrce__zalloc) */
	/* Spraying: round robin over planes, then over each plane's EVs. */
	uint16_t *plane_evs[MRCE_MAX_PLANES];
	uint16_t plane_nev[MRCE_MAX_PLANES], plane_cur[MRCE_MAX_PLANES];
	uint32_t plane_rr;
};

enum { MRCE__WQE_POSTED = 0, MRCE__WQE_DONE = 1 };

struct mrce__wqe {
	uint64_t wr_id, loff, len, roff;
	const uint8_t *lbase;       /* resolved local source, or the addend */
	uint8_t add_be[8];          /* ATOMIC_ADD payload, big-endian */
	uint32_t lkey, rkey, imm, msn, ssn;
	uint32_t first_psn, npkts;
	uint8_t op, state, started;
	uint8_t fence;              /* MRC_SQE_F_FENCE: start after sq_done */
	int32_t status;
};

enum { MRCE__S_FREE = 0, MRCE__S_INFLIGHT, MRCE__S_LOST, MRCE__S_ACKED };

/* Which rule declared a packet lost (mrce_stats' loss_spurious_by). */
enum mrce__lost_by { MRCE__LB_NONE = 0, MRCE__LB_OWN, MRCE__LB_CROSS, MRCE__LB_TLP,
		     MRCE__LB_RTO, MRCE__LB_RTO_REST /* not the oldest: its path's silence */ };

/* Sender state of one PSN of the window. */
struct mrce__slot {
	uint64_t sent_ts;
	uint32_t wqe;               /* sq index (unmasked) */
	uint16_t ev;
	uint16_t prev, next;        /* send-order list of in-flight packets */
	uint8_t state, tries;       /* tries: resends (saturating), so RTT
	                               samples skip ambiguous ACKs */
	uint8_t strikes;            /* losses charged against max_retries */
	uint8_t rnr_tries;          /* RNR NACKs, against the QP's rnr_retry */
	uint8_t free_resend;        /* lost to a trim or RNR: next resend is
	                               not charged */
	uint8_t rto_lost : 1;       /* declared lost by an RTO (its undo,
	                               ack_rx.c); in the padding */
	uint8_t lost_by : 3;        /* enum mrce__lost_by of its last loss
	                               declaration (spurious ones counted by it) */
	uint8_t own_late : 1;       /* this transmission was overtaken on its
	                               own EV: a packet sent after it there was
	                               acked (loss.c) */
	uint16_t plen;
	uint16_t lost_ev;           /* EV blamed when it was declared lost */
	uint32_t xseq;              /* transmission order (ties in sent_ts) */
};

/* Receiver record of a PSN whose message has an effect (IMM completion,
 * RECV completion, atomic) that must wait for every earlier PSN. */
struct mrce__rslot {
	uint8_t op, has;
	uint32_t imm, mlen, rkey;
	uint64_t off, add;
};

struct mrce__rwqe {
	uint64_t wr_id, len;
	uint8_t *base;
	uint32_t lkey;
};

struct mrce__rcqe {
	uint64_t wr_id, byte_len;
	uint32_t imm;
	int32_t status;
	uint8_t op, has_imm;
};

struct mrce__qp {
	uint8_t used, state, in_active, in_ready, in_ack;
	uint8_t tclass;             /* enum mrce_tclass (mrce_qp_attr); in
	                               the padding before err */
	uint8_t in_wwait;           /* on the window pool's wait list */
	int32_t err;
	uint32_t err_psn;           /* the PSN that failed the QP */
	uint32_t qpn, pd, flags, pin_ev, pin_cur;
	uint32_t plane_mask;        /* mrce_qp_attr; 0 = every plane */
	uint32_t peer, rqpn;
	uint64_t tx_token, rx_token;   /* mrce_qp_set_tokens */
	struct mrce__qp *active_next, *ready_next, *ack_next;
	struct mrce__qp *wwait_next;   /* waiting for a send block (wpool.c) */

	/* send queue: head (reap) <= done (acked) <= seg (sending) <= tail */
	struct mrce__wqe *sq;
	uint32_t sq_head, sq_done, sq_seg, sq_tail;
	uint32_t next_msn, next_ssn;
	uint32_t snd_una, snd_nxt;
	/* The window state (slots; rslots and rcq) is the window pool's
	 * (wpool.c): NULL while the QP holds no block of that half. */
	struct mrce__slot *slots;
	uint64_t sacked[MRCE__RING_BITS / 64];
	uint16_t lst_head, lst_tail;
	uint16_t win, mtu;          /* what this QP sends: cfg's, or less as
	                               negotiated (mrce_qp_set_limits) */
	uint64_t lostmap[MRCE__RING_BITS / 64];  /* PSNs waiting for resend */
	uint32_t inflight_pkts;
	uint32_t slots_from;        /* snd_nxt when the send block was taken:
	                               the slots of earlier PSNs are not this
	                               QP's (wpool.c) */
	uint64_t inflight_bytes;
	uint64_t srtt, rttvar, rto;
	uint32_t backoff;
	/* Receive side, in the padding here: EV + 1 (0: none) of the last ACK
	 * packet, and of a packet received since, in another plane when one
	 * came (ack_tx.c ack_ev). */
	uint16_t ack_ev_last, ack_ev_alt;
	uint64_t rto_deadline, rack_deadline, rnr_until;
	uint64_t nopath_deadline;   /* waiting for a path to the peer until
	                               then (0: not waiting) */
	uint32_t rnr_retry;         /* 0..7, MRCE_RNR_RETRY_FOREVER */
	uint32_t xmit_seq;          /* transmissions so far */
	uint32_t rack_seq;          /* newest transmission acknowledged, + 1 */
	uint64_t tlp_ts;            /* last tail-loss probe (loss.c) */
	uint64_t rto_ts;            /* last RTO, until an ACK judges it (0) */
	uint64_t rto_floor;         /* learned from spurious RTOs (ack_rx.c) */
	uint64_t rto_restart;       /* last ACK of new data: the RTO runs from
	                               it or the oldest packet's send, the later
	                               (loss.c mrce__rto_rearm) */
	/* The last RTO as it fired, for its judge's evidence (mrce_stats
	 * rto_sp_*): the RTO, srtt, rttvar, floor, the timer's lag (ns,
	 * saturated), whether the peer was silent. */
	uint32_t fire_rto, fire_srtt, fire_rttvar, fire_floor, fire_lag;
	uint8_t fire_silent;
	uint64_t cc[MRCE_CC_STATE_MAX / 8];

	/* receive side */
	uint32_t rcv_nxt;
	uint32_t ack_pending;        /* packets received since the last ACK */
	uint32_t ack_flags;          /* rx flags OR'ed over them (ECN) */
	uint32_t ack_peer;
	struct mrc_data_hdr ack_trig; /* the newest of them, echoed */
	uint64_t ack_rx_ts;          /* when ack_trig arrived (pb_hold) */
	uint64_t ack_due;            /* a held ACK leaves as a packet then;
	                                0: at the next mrce_tx */
	uint64_t data_tx_ts;         /* last data packet sent: a QP that sends
	                                may hold its ACKs for data to ride on */
	uint64_t rbits[MRCE__RING_BITS / 64];
	struct mrce__rslot *rslots;
	struct mrce__rwqe *rq;
	uint32_t rq_head, rq_tail, ssn_base;
	uint32_t rq_fail;            /* ERROR: rq_head when it failed (the
	                                RECV an -EMSGSIZE failure charges) */
	struct mrce__rcqe *rcq;
	uint32_t rcq_head, rcq_tail;

	uint64_t tx_pkts, retx, rto_fires, trims_rx, nacks_rx, bytes_acked;
	uint64_t rnr_rx;
	uint64_t spurious, rto_spurious;
	uint64_t plane_tx[MRCE_MAX_PLANES];
	uint64_t rx_pkts, rx_dups, bytes_placed;
	struct mrce_qp_ev_stat *evst;    /* cfg.qp_ev_stats of them */
	uint64_t ev_other_tx, ev_other_lost;
};

struct mrce {
	/* What every call touches (mrce_rx, mrce_tx, mrce_wc_drain,
	 * mrce_event_pop, mrce_next_deadline) first, in two cache lines
	 * (the record is line aligned, engine.c): mrcsim's thousands of
	 * engines are cold at each call, and these were spread over six. */
	struct mrce__peer *peers;
	struct mrce__qp *qps;
	struct mrce_tx_pkt *ctrl;    /* queued ACK / NACK / probe packets */
	uint32_t ctrl_head, ctrl_tail, ctrl_mask;
	uint32_t theap_n;           /* armed timers (timers.c, below) */
	struct mrce_event *evq;
	uint32_t evq_head, evq_tail, evq_mask;
	uint32_t share_credit;      /* active_head's (below) */
	struct mrce__qp *active_head[MRCE__BANDS];   /* may send data (below) */
	struct mrce__qp *ready_head;                  /* have completions */
	struct mrce__qp *ack_head;                    /* owe a coalesced ACK */
	uint64_t ack_hold_min;      /* earliest ack_due of a held ACK (may be
	                               early, never late; UINT64_MAX: none) */
	struct mrce__qp *wwait_head;                  /* posts waiting, FIFO */
	uint64_t *tkey;             /* the id's earliest deadline, while armed */
	uint32_t *theap;            /* armed ids, a min-heap by tkey */

	struct mrce_cfg cfg;
	uint64_t noqp_tat;          /* NOQP token bucket (GCRA): the time the
	                               next NACK would be due at the rate */
	const struct mrce_cc_ops *cc;
	uint32_t wmask, sqmask, rqmask;
	uint32_t max_cwnd;

	struct mrce__mr *mrs;
	uint32_t mr_gen;            /* registrations so far (mod 2^32): the key's source */
	uint32_t *mr_hash;          /* key -> slot + 1 (0: empty), mr_hmask + 1 buckets */
	uint32_t mr_hmask, mr_free; /* mr_free: where the next free-slot search starts */
	uint32_t peer_hwm;          /* peers[0..peer_hwm) may be in use */
	uint32_t qp_hwm;            /* qps[0..qp_hwm) may be in use */
	uint32_t qp_gen;

	/* QPs that may send data, by band: URGENT, then the other classes
	 * (mrce__band); share_credit counts towards the others' next turn
	 * while both bands wait (cfg.bulk_min_pct per pop, a turn at 100). */
	struct mrce__qp *active_tail[MRCE__BANDS];   /* active_head's: above */
	struct mrce__qp *ready_tail;

	uint64_t last_cong;         /* last ECN echo or trim from any peer */
	struct mrce_stats st;

	/* The window pool (wpool.c): wp_n send blocks (a window of sender
	 * slots) and wp_n receive blocks (effect records, then completions),
	 * each kind one zmem mapping.  Blocks below *_hwm were handed out
	 * once; those given back are on a stack, taken before a new one. */
	uint8_t *wp_send, *wp_recv;
	uint32_t wp_n, wp_send_hwm, wp_recv_hwm;
	uint32_t *wp_send_free, *wp_recv_free;
	uint32_t wp_send_nfree, wp_recv_nfree;
	struct mrce__qp *wwait_tail;                  /* wwait_head's: above */

	/* Armed timers (timers.c), by id: peer p, or QP slot i as max_peers
	 * + i (tkey, theap, theap_n: above). */
	uint32_t *tpos;             /* its position in theap + 1 (0: not armed) */
	uint32_t *tdue;             /* mrce_tick's scratch: the ids due */
};
_Static_assert(offsetof(struct mrce, cfg) == 128, "struct mrce: its hot block is two lines");

/* store.c */
void mrce__event_push(struct mrce *e, const struct mrce_event *ev);
struct mrce_tx_pkt *mrce__ctrl_slot(struct mrce *e);
struct mrce__mr *mrce__mr_get(struct mrce *e, uint32_t key);
struct mrce__qp *mrce__qp_get(struct mrce *e, uint32_t qpn);
void mrce__qp_ready(struct mrce *e, struct mrce__qp *qp);
void mrce__qp_activate(struct mrce *e, struct mrce__qp *qp, uint64_t now);
struct mrce__qp *mrce__active_pop(struct mrce *e);

/* A class's scheduling band: 0 goes first. */
static inline unsigned mrce__band(unsigned tclass)
{
	return tclass == MRCE_TC_URGENT ? 0 : 1;
}

static inline struct mrce__peer *mrce__peer_get(struct mrce *e, uint32_t peer)
{
	return peer < e->cfg.max_peers && e->peers[peer].used ? &e->peers[peer] : NULL;
}

/* The sender's record of a PSN of the window. */
static inline struct mrce__slot *mrce__slot_of(struct mrce *e, struct mrce__qp *qp,
					     uint32_t psn)
{
	return &qp->slots[psn & e->wmask];
}

/* Some path to the peer may carry packets (not every EV DENIED). */
static inline int mrce__peer_reachable(const struct mrce__peer *p)
{
	return p->ngood + p->nbad > 0;
}
static inline int mrce__cwnd_allows(const struct mrce *e, const struct mrce__qp *qp, uint32_t plen)
{
	return qp->inflight_pkts == 0 ||
	       qp->inflight_bytes + plen <= e->cc->cwnd(qp->cc);
}

/* The next work request may send its next packet. */
static inline int mrce__new_data_ok(const struct mrce *e, const struct mrce__qp *qp)
{
	if (qp->sq_seg == qp->sq_tail || qp->snd_nxt - qp->snd_una >= qp->win ||
	    !qp->slots)   /* waiting for a send block (wpool.c) */
		return 0;
	/* A fenced request starts only once every earlier one completed;
	 * the ACK that completes the last of them activates the QP again. */
	const struct mrce__wqe *w = &qp->sq[qp->sq_seg & e->sqmask];
	return !w->fence || w->started || qp->sq_done == qp->sq_seg;
}

/* The QP may send a packet now (a resend or new data). */
static inline int mrce__qp_can_send(const struct mrce *e, const struct mrce__qp *qp, uint64_t now)
{
	if (qp->state != MRCE_QPS_RTS || qp->rnr_until > now)
		return 0;
	if (!mrce__cwnd_allows(e, qp, qp->mtu))
		return 0;
	if (qp->lostmap[0] | qp->lostmap[1] | qp->lostmap[2] | qp->lostmap[3])
		return 1;
	return mrce__new_data_ok(e, qp);
}

/* Smoothed RTT and its variation (RFC 6298 gains), for paths and QPs. */
/* The RTO evidence's buckets (mrce_stats rto_lag, rto_sp_*): a time by
 * its edges in us, a ratio (x1000) by its edges. */
static inline uint32_t mrce__sat32(uint64_t v)
{
	return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

static inline unsigned mrce__hist_bucket(uint64_t v, const uint32_t edge[MRCE_RTO_HIST - 1])
{
	unsigned b = 0;
	while (b < MRCE_RTO_HIST - 1 && v >= edge[b])
		b++;
	return b;
}

static inline void mrce__rtt_update(uint64_t *srtt, uint64_t *rttvar, uint64_t rtt)
{
	if (!*srtt) {
		*srtt = rtt;
		*rttvar = rtt / 2;
		return;
	}
	uint64_t d = rtt > *srtt ? rtt - *srtt : *srtt - rtt;
	*rttvar = (3 * *rttvar + d) / 4;
	*srtt = (7 * *srtt + rtt) / 8;
}

/* A path's RTT: the same update in 64 bits, kept in 32 (ns, saturating
 * at 4.29 s: no fabric path is that slow, and a saturated srtt only makes
 * the path look as slow as it is). */
static inline void mrce__ev_rtt_update(struct mrce__ev *pa, uint64_t rtt)
{
	uint64_t srtt = pa->srtt, rttvar = pa->rttvar;
	mrce__rtt_update(&srtt, &rttvar, rtt);
	pa->srtt = srtt > UINT32_MAX ? UINT32_MAX : (uint32_t)srtt;
	pa->rttvar = rttvar > UINT32_MAX ? UINT32_MAX : (uint32_t)rttvar;
}

static inline int mrce__bit_test(const uint64_t *r, uint32_t psn)
{
	return (r[(psn & 255) >> 6] >> (psn & 63)) & 1;
}
static inline void mrce__bit_set(uint64_t *r, uint32_t psn)
{
	r[(psn & 255) >> 6] |= 1ull << (psn & 63);
}
static inline void mrce__bit_clear(uint64_t *r, uint32_t psn)
{
	r[(psn & 255) >> 6] &= ~(1ull << (psn & 63));
}
#endif

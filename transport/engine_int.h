/* Engine internals shared by the transport/ files.  Not installed. */
#ifndef MRC_TRANSPORT_ENGINE_INT_H
#define MRC_TRANSPORT_ENGINE_INT_H

#include "transport/store.h"

/* path.c */
int mrc__path_pick(struct mrce *e, struct mrc__peer *p, struct mrc__qp *qp,
		   int avoid_plane);
void mrc__path_set_state(struct mrce *e, uint32_t peer, uint32_t ev,
			 uint8_t st, uint8_t reason, uint64_t now);
/* weak: the loss is a timeout while the whole peer was silent, which
 * blames no path in particular (sender.c mark_lost). */
void mrc__path_lost(struct mrce *e, uint32_t peer, uint32_t ev,
		    uint64_t sent_ts, uint8_t reason, int cong, int weak, uint64_t now);
void mrc__path_check(struct mrce *e, uint32_t peer, uint32_t ev,
		     uint64_t sent_ts, uint64_t now);
void mrc__path_rtt(struct mrce *e, struct mrc__peer *p, uint32_t ev,
		   uint64_t rtt);
void mrc__probe_tick_peer(struct mrce *e, uint32_t peer, uint64_t now);
void mrc__probe_rx(struct mrce *e, uint64_t now, uint32_t peer,
		   const struct mrc_probe_hdr *h);

/* sender.c */
int mrc__qp_tx_one(struct mrce *e, struct mrc__qp *qp, uint64_t now,
		   struct mrce_tx_pkt *pkt);
void mrc__ack_rx(struct mrce *e, uint64_t now, uint32_t peer,
		 const struct mrc_ack_hdr *h);
void mrc__qp_timers(struct mrce *e, struct mrc__qp *qp, uint64_t now);

int mrc__pb_ack_rx(struct mrce *e, uint64_t now, struct mrc__qp *qp,
		   const struct mrc_data_hdr *d);

/* timers.c */
int mrc__timers_init(struct mrce *e);
void mrc__timers_fini(struct mrce *e);
size_t mrc__timers_bytes_per_qp(void);
void mrc__qp_timer_sync(struct mrce *e, struct mrc__qp *qp);
void mrc__peer_timer_sync(struct mrce *e, uint32_t peer);
int mrc__timers_check(const struct mrce *e);   /* 0: every key exact (tests) */
/* The earliest armed deadline (UINT64_MAX: none). */
uint64_t mrc__timers_next(const struct mrce *e);
/* Takes the ids due by now out of the heap into e->tdue, ascending (peers
 * before QPs, each in index order); returns how many. */
uint32_t mrc__timers_take_due(struct mrce *e, uint64_t now);

/* receiver.c */
/* Sends the coalesced ACKs that are due (held ones once ack_due passed);
 * keep_senders: leaves those of QPs that can send data now, which carry
 * them (mrc__ack_attach). */
void mrc__acks_flush(struct mrce *e, uint64_t now, int keep_senders);
int mrc__acks_urgent(const struct mrce *e);
void mrc__ack_flush_qp(struct mrce *e, struct mrc__qp *qp);
void mrc__ack_attach(struct mrce *e, struct mrc__qp *qp, uint64_t now,
		     struct mrc_data_hdr *h);
void mrc__data_rx(struct mrce *e, uint64_t now, uint32_t peer,
		  const struct mrc_pkt_view *v, uint32_t rx_flags);

/* qp.c */
void mrc__qp_fail(struct mrce *e, struct mrc__qp *qp, int err,
		  uint32_t bad_psn, uint64_t now);
void mrc__sq_advance(struct mrce *e, struct mrc__qp *qp);

#endif

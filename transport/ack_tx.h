/* The ACKs a receiver sends (ack_tx.c).  Not installed. */
#ifndef MRC_TRANSPORT_ACK_TX_H
#define MRC_TRANSPORT_ACK_TX_H

#include "transport/store.h"

/* An ACK or NACK answering data header d, now, on d's EV when it can. */
void mrce__ack_send(struct mrce *e, struct mrce__qp *qp, uint32_t peer,
		   const struct mrc_data_hdr *d, uint8_t nack, uint32_t rx_flags);
/* The NOQP NACK for data to a QP that does not exist (rate limited). */
void mrce__ack_noqp(struct mrce *e, uint32_t peer, const struct mrc_data_hdr *d,
		   uint64_t now);
/* Data d was placed: the QP owes an ACK, sent, held or coalesced. */
void mrce__ack_later(struct mrce *e, struct mrce__qp *qp, uint32_t peer,
		    const struct mrc_data_hdr *d, uint32_t rx_flags, uint64_t now);
/* Sends the coalesced ACKs that are due (held ones once ack_due passed);
 * keep_senders: leaves those of QPs that can send data now, which carry
 * them (mrce__ack_attach). */
void mrce__acks_flush(struct mrce *e, uint64_t now, int keep_senders);
int mrce__acks_urgent(const struct mrce *e);
void mrce__ack_flush_qp(struct mrce *e, struct mrce__qp *qp);
void mrce__ack_attach(struct mrce *e, struct mrce__qp *qp, uint64_t now,
		     struct mrc_data_hdr *h);
/* The same for a held ACK of another QP to qp's peer (cfg.xack). */
void mrce__xack_attach(struct mrce *e, struct mrce__qp *qp, uint64_t now,
		       struct mrc_data_hdr *h, struct mrc_xack *x);

#endif

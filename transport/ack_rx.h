/* The ACKs a sender receives (ack_rx.c).  Not installed. */
#ifndef MRC_TRANSPORT_ACK_RX_H
#define MRC_TRANSPORT_ACK_RX_H

#include "transport/store.h"

void mrce__ack_rx(struct mrce *e, uint64_t now, uint32_t peer,
		 const struct mrc_ack_hdr *h);
int mrce__pb_ack_rx(struct mrce *e, uint64_t now, struct mrce__qp *qp,
		   const struct mrc_data_hdr *d);
int mrce__xack_rx(struct mrce *e, uint64_t now, uint32_t peer,
		  const struct mrc_data_hdr *d, const struct mrc_xack *xa);

#endif

/* Receiver side of a QP (receiver.c).  Not installed. */
#ifndef MRC_TRANSPORT_RECEIVER_H
#define MRC_TRANSPORT_RECEIVER_H

#include "transport/store.h"

void mrce__data_rx(struct mrce *e, uint64_t now, uint32_t peer,
		  const struct mrc_pkt_view *v, uint32_t rx_flags);

#endif

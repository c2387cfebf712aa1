/* Sender side of a QP, transmit (sender.c).  Not installed. */
#ifndef MRC_TRANSPORT_SENDER_H
#define MRC_TRANSPORT_SENDER_H

#include "transport/store.h"

/* The QP's next packet into pkt (a resend first): 1, or 0 when it can
 * send nothing now. */
int mrce__qp_tx_one(struct mrce *e, struct mrce__qp *qp, uint64_t now,
		   struct mrce_tx_pkt *pkt);

#endif

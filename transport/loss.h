/* Loss detection and the QP's timers (loss.c).  Not installed. */
#ifndef MRC_TRANSPORT_LOSS_H
#define MRC_TRANSPORT_LOSS_H

#include "transport/store.h"

/* Out of the send-order list of in-flight packets. */
static inline void mrc__lst_remove(struct mrc__qp *qp, uint16_t i)
{
	struct mrc__slot *s = &qp->slots[i];
	if (s->prev != MRC__NIL)
		qp->slots[s->prev].next = s->next;
	else
		qp->lst_head = s->next;
	if (s->next != MRC__NIL)
		qp->slots[s->next].prev = s->prev;
	else
		qp->lst_tail = s->prev;
	s->prev = s->next = MRC__NIL;
}

/* Slot i is lost: out of flight, waiting for a resend; blame: its path
 * is charged (mrc__path_lost). */
void mrc__mark_lost(struct mrce *e, struct mrc__qp *qp, uint16_t i,
		    uint8_t reason, int blame, uint64_t now);
/* Declares lost what an ACK of a later transmission shows overdue. */
void mrc__detect_losses(struct mrce *e, struct mrc__qp *qp, uint64_t now);
void mrc__rto_rearm(struct mrc__qp *qp, uint64_t now);
/* The QP's deadlines that passed (RNR, no path, RACK, RTO). */
void mrc__qp_timers(struct mrce *e, struct mrc__qp *qp, uint64_t now);

#endif

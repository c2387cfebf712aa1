/* Loss detection and the QP's timers (loss.c).  Not installed. */
#ifndef MRC_TRANSPORT_LOSS_H
#define MRC_TRANSPORT_LOSS_H

#include "transport/store.h"

/* Out of the send-order list of in-flight packets. */
static inline void mrce__lst_remove(struct mrce__qp *qp, uint16_t i)
{
	struct mrce__slot *s = &qp->slots[i];
	if (s->prev != MRCE__NIL)
		qp->slots[s->prev].next = s->next;
	else
		qp->lst_head = s->next;
	if (s->next != MRCE__NIL)
		qp->slots[s->next].prev = s->prev;
	else
		qp->lst_tail = s->prev;
	s->prev = s->next = MRCE__NIL;
}

/* Slot i is lost: out of flight, waiting for a resend; blame: its path
 * is charged (mrce__ev_lost). */
void mrce__mark_lost(struct mrce *e, struct mrce__qp *qp, uint16_t i,
		    uint8_t reason, int blame, uint64_t now);
/* The EVs one ACK proved, each with the newest transmission (xseq) it
 * acked there: a path is FIFO, so what was sent before that on the same
 * EV and is still unacked was overtaken on its own path (slot own_late).
 * Bounded: an ACK that acks on more EVs leaves the rest out (their
 * packets are judged as overtaken on other paths: later, never sooner). */
#define MRCE__ACKED_EVS 16
struct mrce__acked_evs {
	uint32_t n;
	uint16_t ev[MRCE__ACKED_EVS];
	uint32_t xseq[MRCE__ACKED_EVS];
};
/* Declares lost what an ACK of a later transmission shows overdue; a:
 * what the ACK that brings us here acked (NULL from a timer). */
void mrce__detect_losses(struct mrce *e, struct mrce__qp *qp, uint64_t now,
			 const struct mrce__acked_evs *a);
/* A packet declared lost turned out received (lost_by says by which
 * rule): counted (mrce_stats loss_spurious*). */
void mrce__loss_spurious(struct mrce *e, const struct mrce__slot *s);
void mrce__rto_rearm(struct mrce__qp *qp, uint64_t now);
void mrce__tlp_arm(struct mrce *e, struct mrce__qp *qp, uint64_t now);
/* The QP's deadlines that passed (RNR, no path, RACK, RTO). */
void mrce__qp_timers(struct mrce *e, struct mrce__qp *qp, uint64_t now);

#endif

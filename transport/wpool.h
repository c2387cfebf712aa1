/* The window pool (wpool.c): a QP's window state, taken when the QP gets
 * work and given back when it is quiescent.  Not installed. */
#ifndef MRC_TRANSPORT_WPOOL_H
#define MRC_TRANSPORT_WPOOL_H

#include "transport/store.h"

int mrce__wpool_init(struct mrce *e);
void mrce__wpool_fini(struct mrce *e);
/* Bytes of one send block plus one receive block. */
size_t mrce__wpool_pair_bytes(const struct mrce_cfg *c);

/* A send block for a QP with work posted: 0, or -ENOBUFS: the QP waits
 * (FIFO) until mrce__wpool_grant hands it one. */
int mrce__wpool_send_get(struct mrce *e, struct mrce__qp *qp);
/* A receive block for a data packet: 0, or -ENOBUFS (the packet is
 * refused; nothing waits). */
int mrce__wpool_recv_get(struct mrce *e, struct mrce__qp *qp);
/* Gives back each half the QP no longer needs.  Only where no pointer
 * into its blocks is live: at the end of an entry point's work on it. */
void mrce__wpool_settle(struct mrce *e, struct mrce__qp *qp);
/* Gives back both halves and leaves the wait list (mrce_qp_close). */
void mrce__wpool_drop(struct mrce *e, struct mrce__qp *qp);
/* Hands blocks given back to the QPs waiting, in order, and lets them send. */
void mrce__wpool_grant(struct mrce *e, uint64_t now);

/* A waiting QP can be given a block now (mrce_tx_pending). */
static inline int mrce__wpool_grantable(const struct mrce *e)
{
	return e->wwait_head && (e->wp_send_nfree || e->wp_send_hwm < e->wp_n);
}

#endif

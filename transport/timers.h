/* The engine's timers (timers.c): every peer and QP with a deadline armed,
 * in a min-heap; the keys are recomputed from the record's own fields.  Not installed. */
#ifndef MRC_TRANSPORT_TIMERS_H
#define MRC_TRANSPORT_TIMERS_H

#include "transport/store.h"

int mrce__timers_init(struct mrce *e);
void mrce__timers_fini(struct mrce *e);
size_t mrce__timers_bytes_per_qp(void);
void mrce__qp_timer_sync(struct mrce *e, struct mrce__qp *qp);
void mrce__peer_timer_sync(struct mrce *e, uint32_t peer);
int mrce__timers_check(const struct mrce *e);   /* 0: every key exact (tests) */
/* The earliest armed deadline (UINT64_MAX: none). */
uint64_t mrce__timers_next(const struct mrce *e);
/* Takes the ids due by now out of the heap into e->tdue, ascending (peers
 * before QPs, each in index order); returns how many. */
uint32_t mrce__timers_take_due(struct mrce *e, uint64_t now);

#endif

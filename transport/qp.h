/* Queue pairs (qp.c): what the sender and receiver need of them.  Not installed. */
#ifndef MRC_TRANSPORT_QP_H
#define MRC_TRANSPORT_QP_H

#include "transport/store.h"

void mrce__qp_fail(struct mrce *e, struct mrce__qp *qp, int err,
		  uint32_t bad_psn, uint64_t now);
void mrce__sq_advance(struct mrce *e, struct mrce__qp *qp);

#endif

/* Queue pairs (qp.c): what the sender and receiver need of them.  Not installed. */
#ifndef MRC_TRANSPORT_QP_H
#define MRC_TRANSPORT_QP_H

#include "transport/store.h"

void mrc__qp_fail(struct mrce *e, struct mrc__qp *qp, int err,
		  uint32_t bad_psn, uint64_t now);
void mrc__sq_advance(struct mrce *e, struct mrc__qp *qp);

#endif

/* Two QPs of one client connected to each other through one mrcd, with a
 * source and a target region of len bytes: the smallest real transfer
 * through a daemon.  Include after <cmocka.h>. */
#ifndef MRC_TESTS_QP_PAIR_H
#define MRC_TESTS_QP_PAIR_H

#include <stdint.h>

#include "mrc/mrc.h"
#include "tests/support/mrcd_spawn.h"

struct qp_pair {
	struct mrc_ctx *ctx;
	struct mrc_qp *a, *b;
	struct mrc_mr *src, *dst;
};

static inline void qp_pair_open(const struct mrcd_proc *d, struct qp_pair *p, uint64_t len)
{
	assert_int_equal(mrc_open(d->sock, &p->ctx), 0);
	assert_int_equal(mrc_alloc_mr(p->ctx, len, MRC_MR_LOCAL_READ | MRC_MR_LOCAL_WRITE, &p->src), 0);
	assert_int_equal(mrc_alloc_mr(p->ctx, len, MRC_MR_ALL, &p->dst), 0);
	assert_int_equal(mrc_create_qp(p->ctx, NULL, &p->a), 0);
	assert_int_equal(mrc_create_qp(p->ctx, NULL, &p->b), 0);
	struct mrc_qp_addr la, lb;
	assert_int_equal(mrc_qp_info_get(p->a, &la), 0);
	assert_int_equal(mrc_qp_info_get(p->b, &lb), 0);
	assert_int_equal(mrc_connect_oob(p->a, &lb), 0);
	assert_int_equal(mrc_connect_oob(p->b, &la), 0);
}

#endif

/* MoE internals shared by coll/moe.c, mrc-coll-perf (coll/perf_moe.c) and
 * the tests: the old per-expert dispatch kept for comparison, and what one
 * dispatch + combine moved and how long its phases took. */
#ifndef MRC_COLL_MOE_INT_H
#define MRC_COLL_MOE_INT_H

#include <stddef.h>
#include <stdint.h>

#include "mrc/coll.h"

/* Phases of one all-to-all(v) of the MoE (seconds): [0] the counts
 * (the 2-D all-gather of every rank's send counts; 0 flat), [1] phase 1
 * (flat: the whole exchange; 2-D: the intra-node exchange and its
 * packing), [2] phase 2 (2-D: the inter-node exchange and its packing),
 * [3] the final unpacking (2-D). */
enum { MRC__MOE_PH_COUNTS, MRC__MOE_PH_1, MRC__MOE_PH_2, MRC__MOE_PH_UNPACK, MRC__MOE_PH_N };

struct mrc__coll_moe_stats {
	size_t pairs;              /* kept (token, expert) pairs of this rank */
	size_t pairs_remote;       /* of them, to experts on other ranks */
	size_t rows;               /* token rows sent by the dispatch (self included) */
	size_t rows_remote;        /* of them, to other ranks: what crosses the fabric */
	size_t rows_recv;          /* rows this rank's experts' ranks received */
	size_t row_bytes;          /* token payload per row */
	size_t meta_bytes;         /* routing metadata per dispatched row */
	double t_layout;           /* capacity, packing, the counts' all-to-all */
	double t_disp[MRC__MOE_PH_N], t_expand;   /* dispatch exchange; expansion to experts */
	double t_reduce, t_comb[MRC__MOE_PH_N], t_acc;   /* per-rank partial sums; way back; sum */
};

/* mrc_coll_moe_dispatch with per_expert = 1 sends a token once per kept
 * (token, expert) pair, as before the per-rank deduplication (results are
 * the same; for measuring the difference). */
int mrc__coll_moe_dispatch(struct mrc_coll *c, const struct mrc_coll_moe_cfg *cfg, size_t T,
			   const int32_t *idx, const float *w, const void *tokens, int per_expert,
			   struct mrc_coll_moe_plan **plan, void **expert_in, size_t *counts);
/* What the plan's dispatch (and combine, once run) moved and took. */
void mrc__coll_moe_stats(const struct mrc_coll_moe_plan *p, struct mrc__coll_moe_stats *s);
/* mrc_coll_alltoallv_2d recording its phase times into ph (MRC__MOE_PH_N;
 * may be NULL). */
int mrc__coll_alltoallv_2d(struct mrc_coll *c, uint32_t L, const void *sendbuf,
			   const size_t *sendcounts, const size_t *sdispls, void *recvbuf,
			   const size_t *recvcounts, const size_t *rdispls, int dtype, double *ph);

#endif

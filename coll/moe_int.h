/* MoE internals shared by coll/moe.c, mrc-coll-perf (tools/coll-perf/perf_moe.c) and
 * the tests: the old per-expert dispatch kept for comparison, and what one
 * dispatch + combine moved and how long its phases took. */
#ifndef MRC_COLL_MOE_INT_H
#define MRC_COLL_MOE_INT_H

#include <stddef.h>
#include <stdint.h>

#include "mrc/coll.h"

/* Phases of one all-to-all(v) of the MoE (seconds): [0] the counts
 * (2-D: the all-gather of every rank's send counts, or with node dedupe
 * the forwarding counts; 0 flat), [1] phase 1 (flat: the whole exchange;
 * 2-D: the intra-node exchange), [2] phase 2 (2-D: the inter-node
 * exchange), [3] the 2-D's unpacking, or node dedupe's forwarding (the
 * proxy's packing; on the way back its sums). */
enum { MRC__MOE_PH_COUNTS, MRC__MOE_PH_1, MRC__MOE_PH_2, MRC__MOE_PH_UNPACK, MRC__MOE_PH_N };

struct mrc__coll_moe_stats {
	size_t pairs;              /* kept (token, expert) pairs of this rank */
	size_t pairs_remote;       /* of them, to experts on other ranks */
	size_t rows;               /* token rows sent by the dispatch (self included; node
				    * dedupe: to proxies, one per token and node) */
	size_t rows_remote;        /* rows this rank sent to other ranks (node dedupe: to
				    * proxies and forwarded): what leaves through mrcd */
	size_t rows_fwd;           /* node dedupe: rows this rank forwarded as proxy (self included) */
	size_t rows_recv;          /* rows this rank's experts' ranks received */
	size_t row_bytes;          /* token payload per row */
	size_t meta_bytes;         /* routing metadata per dispatched row */
	double t_layout;           /* capacity, packing, the counts' all-to-all */
	double t_disp[MRC__MOE_PH_N], t_expand;   /* dispatch exchange; expansion to experts */
	double t_reduce, t_comb[MRC__MOE_PH_N], t_acc;   /* per-rank partial sums; way back; sum */
};

/* mrc_coll_moe_dispatch with per_expert = MRC__MOE_PER_EXPERT sends a
 * token once per kept (token, expert) pair, as before the per-rank
 * deduplication (results are the same; for measuring the difference);
 * with MRC__MOE_RANK_2D and local_ranks, rows per rank through
 * mrc_coll_alltoallv_2d, as before the node dedupe.  Either with
 * local_ranks uses mrc_coll_alltoallv_2d.  MRC__MOE_KEPT (with either or
 * none): expert_in is the communicator's (mrc_coll_moe_dispatch_kept). */
enum { MRC__MOE_PER_EXPERT = 1, MRC__MOE_RANK_2D = 2, MRC__MOE_KEPT = 4 };
int mrc__coll_moe_dispatch(struct mrc_coll *c, const struct mrc_coll_moe_cfg *cfg, size_t T,
			   const int32_t *idx, const float *w, const void *tokens, int per_expert,
			   struct mrc_coll_moe_plan **plan, void **expert_in, size_t *counts);
/* What the plan's dispatch (and combine, once run) moved and took. */
void mrc__coll_moe_stats(const struct mrc_coll_moe_plan *p, struct mrc__coll_moe_stats *s);
/* Rows this rank's dispatch sent to ranks of other nodes, nodes being
 * blocks of L consecutive ranks (any L: what would cross hosts with L
 * ranks per host; the combine sends as many back). */
size_t mrc__coll_moe_rows_across(const struct mrc_coll_moe_plan *p, uint32_t L);
/* mrc_coll_alltoallv_2d recording its phase times into ph (MRC__MOE_PH_N;
 * may be NULL). */
int mrc__coll_alltoallv_2d(struct mrc_coll *c, uint32_t L, const void *sendbuf,
			   const size_t *sendcounts, const size_t *sdispls, void *recvbuf,
			   const size_t *recvcounts, const size_t *rdispls, int dtype, double *ph);

#endif

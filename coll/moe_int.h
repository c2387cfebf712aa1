/* MoE internals shared by coll/moe.c, mrc-coll-perf (tools/coll-perf/perf_moe.c) and
 * the tests: the old per-expert dispatch kept for comparison, and what one
 * dispatch + combine moved and how long its phases took. */
#ifndef MRC_COLL_MOE_INT_H
#define MRC_COLL_MOE_INT_H

#include "common/clock.h"
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
	/* Pre-gated dispatch (coll/pregate.c): rows sent past the pre-gate's
	 * count to a rank (the correction exchange's), rows sent as padding
	 * (a rank got fewer than predicted), the correction exchange's time. */
	size_t rows_extra, rows_pad;
	double t_corr;
};

/* mrc_coll_moe_dispatch with per_expert = MRC__MOE_PER_EXPERT sends a
 * token once per kept (token, expert) pair, as before the per-rank
 * deduplication (results are the same; for measuring the difference);
 * with MRC__MOE_RANK_2D and local_ranks, rows per rank through
 * mrc_coll_alltoallv_2d, as before the node dedupe.  Either with
 * local_ranks uses mrc_coll_alltoallv_2d.  MRC__MOE_KEPT (with either or
 * none): expert_in is the communicator's (mrc_coll_moe_dispatch_kept). */
enum { MRC__MOE_PER_EXPERT = 1, MRC__MOE_RANK_2D = 2, MRC__MOE_KEPT = 4 };
int mrc__coll_moe_dispatch_run(struct mrc_coll *c, const struct mrc_coll_moe_cfg *cfg, size_t T,
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
int mrc__coll_a2a2d_run(struct mrc_coll *c, uint32_t L, const void *sendbuf,
			   const size_t *sendcounts, const size_t *sdispls, void *recvbuf,
			   const size_t *recvcounts, const size_t *rdispls, int dtype, double *ph);
/* Its phases with everyone's send counts already known: M[src * n + dst]
 * in units of `unit` elements (the pre-gated dispatch's, gathered ahead
 * by the pre-gate: coll/pregate.c); 1 < L < n. */
int mrc__coll_a2a2d_exec(struct mrc_coll *c, uint32_t L, const int64_t *M, size_t unit,
			 const void *sendbuf, const size_t *sendcounts, const size_t *sdispls,
			 void *recvbuf, const size_t *recvcounts, const size_t *rdispls, int dtype,
			 double *ph);

/* Dispatch sends a token once per destination rank (as DeepEP), not once
 * per expert: each row carries, after its hidden elements, top_k routing
 * entries (the rank's local expert, -1 for none, and the weight), and the
 * receiver copies it to each of its experts that the token chose.  The
 * combine sends back one row per received token, the weighted sum over
 * that rank's experts, so that the way back is deduplicated too.
 *
 * With local_ranks = L (1 < L < n) the dedupe goes one level up (as
 * DeepEP's internode kernels): a token crosses to a node once, to its
 * first destination rank there (its proxy), its entries naming the node's
 * experts; the proxy keeps its own copy and forwards it inside the node
 * once to each other local rank with an expert of it (so a token for one
 * rank of a node goes straight there, as flat).  The combine retraces
 * this: each rank's row back to the proxy, the proxy's sum of them
 * (rounded to the type) across to the token's rank.  Such rows end with
 * the source rank and token, so that a receiver can restore the source
 * order of rows that reached it through several proxies. */
struct moe_meta {
	int32_t le;                /* expert at the destination (rank's, or node's for a proxy); -1: unused */
	float w;
};
struct moe_src {
	uint32_t src, pad;         /* source rank (filled in by the proxy) */
	uint64_t tok;              /* token index at the source */
};

struct mrc_coll_moe_plan {
	struct mrc_coll_moe_cfg cfg;
	uint32_t n, me, epr;
	uint32_t L;                /* node dedupe: ranks per node; 0: rows go to ranks directly */
	uint32_t L2d;              /* rows per rank through mrc_coll_alltoallv_2d with L2d; 0: flat */
	size_t T;
	size_t n_sent, n_recv;     /* rows sent (to ranks, or proxies), rows the experts got */
	size_t *sc, *sd, *rc, *rd; /* rows per rank (node dedupe: to and from proxies) */
	size_t n_a, n_b;           /* node dedupe: rows received as proxy, rows it forwarded */
	size_t *bsc, *bsd, *brc, *brd;   /* node dedupe: the forwarding exchange's rows per rank */
	int64_t *fwd;              /* [n_b] the proxy's received row each forwarded row copies */
	int64_t *tok;              /* [n_sent] token of each sent row, in send order */
	int64_t *rpos;             /* [n_recv * top_k] expert_in row each received row feeds, -1 */
	float *rw;                 /* [n_recv * top_k] with this weight */
	struct mrc__coll_moe_stats st;
};


/* moe.c: one MoE exchange as an all-to-allv of stride-element rows, 2-D
 * with L2d, its phases' times into ph[slot...] */
int mrc__coll_moe_a2av(struct mrc_coll *c, uint32_t L2d, int dtype, size_t stride, const void *sb,
		       const size_t *sc, void *rb, const size_t *rc, double *ph, int slot);
/* moe.c: an exchange's rows per rank: sc[j] ours to rank j; from theirs
 * rc[s] rank s's to us, rd their displacements, *total the rows we get
 * (cnt: 2n scratch; cnt + n keeps the counts as received). */
int mrc__coll_moe_counts(struct mrc_coll *c, uint32_t n, const size_t *sc, size_t *rc,
			 size_t *rd, size_t *total, int64_t *cnt);
/* moe_node.c: node dedupe's forwarding at the proxy and its way back */
int mrc__coll_moe_node_forward(struct mrc_coll *c, struct mrc_coll_moe_plan *p,
			       const uint8_t *abuf, size_t strideb, size_t rowb, uint8_t **out,
			       size_t **ordp);
int mrc__coll_moe_node_back(struct mrc_coll *c, struct mrc_coll_moe_plan *p, const uint8_t *part,
			    uint8_t *back);

/* moe.c, for the pre-gated dispatch (coll/pregate.c): the arguments'
 * checks (-EINVAL, or the communicator's error); a new plan with its
 * rows-per-rank arrays (and node dedupe's; NULL when out of memory); the
 * capacity (pos) and rows per rank (p->sc, p->sd, p->n_sent, the pair and
 * row figures); the packing into sbuf (rank r's rows shift[r] rows past
 * p->sd[r]; NULL: none; cur: 3n scratch); the receiver's expansion into
 * the experts' input (row j at rows[j], or rbuf + j * strideb). */
int mrc__coll_moe_args(const struct mrc_coll *c, const struct mrc_coll_moe_cfg *cfg, size_t T,
		       const int32_t *idx, const float *w, const void *tokens, int per_expert,
		       struct mrc_coll_moe_plan **plan, void **expert_in, size_t *counts);
struct mrc_coll_moe_plan *mrc__coll_moe_plan_new(const struct mrc_coll *c,
						 const struct mrc_coll_moe_cfg *cfg, size_t T,
						 int dedupe, size_t rowb, size_t metab);
int mrc__coll_moe_count_rows(struct mrc_coll_moe_plan *p, const int32_t *idx, int per_expert,
			     int64_t *pos);
int mrc__coll_moe_pack(struct mrc_coll_moe_plan *p, const int32_t *idx, const float *w,
		       const void *tokens, int per_expert, const int64_t *pos, size_t *cur,
		       size_t rowb, size_t strideb, uint8_t *sbuf, const size_t *shift);
int mrc__coll_moe_expand(struct mrc_coll_moe_plan *p, const uint8_t *rbuf,
			 const uint8_t *const *rows, size_t strideb, size_t rowb,
			 const size_t *ord, uint8_t *grouped, size_t *counts);

/* Displacements (exclusive prefix sums) of n counts. */
static inline void mrc__coll_prefix(const size_t *cnt, size_t *disp, uint32_t n)
{
	size_t a = 0;
	for (uint32_t i = 0; i < n; i++) {
		disp[i] = a;
		a += cnt[i];
	}
}

/* Adds the time since *t0 to *acc (when acc is not NULL) and restarts. */
static inline void mrc__coll_lap(double *acc, double *t0)
{
	double t = mrc__mono_s();
	if (acc)
		*acc += t - *t0;
	*t0 = t;
}

#endif

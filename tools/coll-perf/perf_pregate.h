/* mrc-coll-perf's pre-gate mode (tools/coll-perf/perf_pregate.c). */
#ifndef MRC_COLL_PERF_PREGATE_H
#define MRC_COLL_PERF_PREGATE_H

#include <stddef.h>
#include <stdint.h>

#include "mrc/coll.h"

/* T tokens x H bfloat16 per rank, E experts, top-K, comp_us of compute
 * before the layer, slack % for the slack variant, L ranks per node (1 < L
 * < ranks: 2-D, plain being the 2-D dispatch of rows per rank; else
 * flat); iters timed steps (after warm) of each variant.
 * Prints the medians on rank 0; 0, -EPROTO when a result was wrong, or
 * the collective's error. */
int mrc__perf_pregate(struct mrc_coll *c, size_t T, size_t H, uint32_t E, uint32_t K,
		      double comp_us, unsigned slack, uint32_t L, int iters, int warm);

#endif

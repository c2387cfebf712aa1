/* mrc-coll-perf's MoE mode (coll/perf_moe.c). */
#ifndef MRC_COLL_PERF_MOE_H
#define MRC_COLL_PERF_MOE_H

#include <stddef.h>
#include <stdint.h>

#include "mrc/coll.h"

/* T tokens x H hidden bfloat16 per rank, E experts, top-K, 2-D with L
 * ranks per node (0: 2, or 1 for an odd rank count); iters timed runs of
 * each variant.  Prints the medians on rank 0; 0, -EPROTO when a result
 * was wrong, or the collective's error. */
int mrc__perf_moe(struct mrc_coll *c, size_t T, size_t H, uint32_t E, uint32_t K, uint32_t L,
		  int iters);

#endif

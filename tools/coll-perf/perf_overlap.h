/* mrc-coll-perf's overlap mode (tools/coll-perf/perf_overlap.c). */
#ifndef MRC_COLL_PERF_OVERLAP_H
#define MRC_COLL_PERF_OVERLAP_H

#include <stddef.h>

#include "mrc/coll.h"

/* B buckets of bucket_bytes (float32 all-reduce), comp_us of compute
 * before each (sleep: the stub sleeps instead of spinning), tests every
 * tick_us while computing; warm + iters steps of
 * each variant (blocking, overlap, communication only).  Prints the table
 * on rank 0; 0, -EPROTO when an element was wrong, or the error. */
int mrc__perf_overlap(struct mrc_coll *c, size_t B, size_t bucket_bytes, double comp_us,
		      double tick_us, int sleep, int iters, int warm);

#endif

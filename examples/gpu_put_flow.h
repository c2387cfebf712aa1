/* The GPU put flow, written once for a kernel and for a host thread:
 * put a buffer into the peer's memory, signal the peer's semaphore, wait
 * for the peer's signal on ours (its buffer has then landed here), and
 * flush (our source may be reused).  examples/gpu_put.cu calls it from a
 * kernel, examples/gpu_put_host.c from a host thread (mrc/gpu.h). */
#ifndef MRC_EXAMPLES_GPU_PUT_FLOW_H
#define MRC_EXAMPLES_GPU_PUT_FLOW_H

#include "mrc/gpu.h"

/* Round r (from 0): our semaphore reaches r + 1 when the peer's round-r
 * data is in place (the signal lands only after the put it follows). */
MRC_GPU_FN int gpu_put_round(struct mrc_gpu_chan *ch, uint32_t rkey, uint64_t roff, uint32_t lkey,
			     uint64_t loff, uint64_t bytes, const uint64_t *sem, uint64_t r)
{
	int rc = mrc_gpu_put_with_signal(ch, rkey, roff, lkey, loff, bytes);
	if (rc == 0)
		rc = mrc_gpu_wait(ch, sem, r + 1);
	if (rc == 0)
		rc = mrc_gpu_flush(ch);
	return rc;
}

#endif

/* The fake CUDA copy engine linked into build/tests/libnccl-net-mrcfake.so
 * in place of libmrc-gpu's (tests/support/nccl_fake_cuda.c): "device"
 * memory is host memory, copies are queued and run only when their event
 * is waited for (after an injected delay), so a plugin that used the
 * arena before waiting would move stale bytes.  The test reaches the
 * controls with dlsym. */
#ifndef MRC_TESTS_NCCL_FAKE_CUDA_H
#define MRC_TESTS_NCCL_FAKE_CUDA_H

#include <stdint.h>

struct mrcn_fake_stats {
	uint64_t d2h, h2d;              /* copies enqueued */
	uint64_t d2h_bytes, h2d_bytes;  /* bytes copied (run at a wait) */
	uint64_t waits, failed;         /* waits; copies failed by injection */
	uint64_t engines, destroyed;    /* copy engines made, destroyed */
	uint64_t pinned, unpinned;      /* host_register / host_unregister */
};

/* present 0: "no CUDA device" (-ENODEV) from now on; fail_at n > 0: the
 * n-th copy enqueued from now on fails at its wait (-EIO) without copying;
 * delay_us: each wait takes this long first.  Resets the counters. */
typedef void mrcn_fake_cuda_set_fn(int present, uint64_t fail_at, unsigned delay_us);
typedef void mrcn_fake_cuda_stats_fn(struct mrcn_fake_stats *out);

#endif

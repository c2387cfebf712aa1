/* GPU memory staged through pinned host memory (libmrc-gpu, internal).
 *
 * The copy engine is an ops table so that the pipeline's logic (chunking,
 * ordering, overlap, errors) is the same code with CUDA (gpu/cuda_ops.c)
 * and with the memcpy-and-thread fake the tests use where there is no GPU.
 * The sink is where a staged chunk goes: libmrc WRITE posts
 * (gpu/gpumem.c), or a test's recorder. */
#ifndef MRC_GPU_STAGE_H
#define MRC_GPU_STAGE_H

#include <stdint.h>

/* Marks (CUDA events) in flight at once: the copy of up to DEPTH-1
 * chunks ahead of the one being posted. */
#define MRC__GPU_STAGE_DEPTH 4u
#define MRC__GPU_CHUNK_DEFAULT (1u << 20)

/* Copy engine.  Copies run in the order they were enqueued, on one
 * stream; every function returns 0 or a negative errno. */
struct mrc__gpu_copy_ops {
	int (*d2h)(void *be, void *dst, const void *src, uint64_t n);   /* enqueue */
	int (*h2d)(void *be, void *dst, const void *src, uint64_t n);   /* enqueue */
	/* mark slot: reached when every copy enqueued before it is done */
	int (*mark)(void *be, unsigned slot);
	int (*wait)(void *be, unsigned slot);  /* blocks until mark slot is reached */
	int (*host_register)(void *be, void *p, uint64_t n);  /* pin for async copies */
	void (*host_unregister)(void *be, void *p);
	void (*destroy)(void *be);
};

/* Where staged chunks go.  post: send [off, off+len) of the host shadow
 * to the remote's roff; -ENOSPC when the queue is full (the pipeline
 * reaps and retries).  reap: blocks until at least one posted chunk
 * completed; returns how many (> 0) and sets *err to the first error
 * status among them (0 if none), or returns < 0 (daemon gone, timeout). */
struct mrc__gpu_sink {
	int (*post)(void *sk, uint64_t off, uint64_t len, uint64_t roff);
	int (*reap)(void *sk, int *err);
};

struct mrc__gpu_stage {
	const struct mrc__gpu_copy_ops *ops;
	void *be;
	uint8_t *shadow;           /* host, registered with ops->host_register */
	const uint8_t *dev;        /* device memory it shadows */
	uint64_t chunk;            /* bytes per copy and per WRITE */
};

/* Device [off, off+len) -> remote roff: chunk k is copied device->host,
 * then posted as soon as its copy is done, while the copies of the next
 * DEPTH-1 chunks run; returns once every posted chunk completed (0), or
 * the first error (a copy error or an error completion stops further
 * posts; chunks already posted are still reaped, and copies already
 * enqueued waited for, before returning). */
int mrc__gpu_stage_put(const struct mrc__gpu_stage *st, const struct mrc__gpu_sink *sink,
		       void *sk, uint64_t off, uint64_t len, uint64_t roff);
/* One synchronous copy between the shadow and device memory, on the
 * stage's stream: to_dev 1: shadow -> device (landed data), 0: back. */
int mrc__gpu_stage_copy(const struct mrc__gpu_stage *st, int to_dev, uint64_t off, uint64_t len);

/* The CUDA copy engine (gpu/cuda_ops.c), or -ENOSYS when libmrc-gpu was
 * built without CUDA (gpu/cuda_none.c); -ENODEV when no GPU is present. */
int mrc__gpu_cuda_backend(const struct mrc__gpu_copy_ops **ops, void **be);


/* mrc_gpu_reg_mr with a given copy engine (tests: a fake without a GPU);
 * the region owns be (ops->destroy at dereg). */
struct mrc_ctx;
struct mrc_gpu_mr;
int mrc__gpu_reg_mr_with(struct mrc_ctx *ctx, void *devptr, uint64_t len, uint32_t access,
			 const struct mrc__gpu_copy_ops *ops, void *be, struct mrc_gpu_mr **out);

#endif

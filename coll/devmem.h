/* libmrc-coll on device (GPU) buffers (docs/coll.md, "GPU buffers"): a
 * device backend, and how a call picks the memory operations table.
 *
 * The executor moves and combines bytes only through struct
 * mrc__coll_memops (coll_int.h); for device buffers c->ops is a table
 * (coll/memops_dev.c) that hands every copy and reduction to a backend:
 * CUDA's (coll/memops_cuda.c with the kernels of coll/reduce_cuda.cu) or,
 * in the tests, a fake over host memory.  Backend calls are synchronous:
 * when one returns, its result is in place (the executor frees receive
 * slots and posts sends right after). */
#ifndef MRC_COLL_DEVMEM_H
#define MRC_COLL_DEVMEM_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

struct mrc_coll;

struct mrc__coll_devops {
	/* One instance per communicator (a stream, scratch): 0 or -errno. */
	int (*open)(void **be);
	void (*close)(void *be);
	/* 1: p is device memory (kernels must touch it), 0: host memory. */
	int (*where)(void *be, const void *p);
	/* dst <- src, either of them host or device; 0 or -errno. */
	int (*copy)(void *be, void *dst, const void *src, size_t bytes);
	/* dst[i] = a[i] op b[i]: dst and a device memory, b device or host
	 * (a receive slot); 0 or -errno. */
	int (*reduce)(void *be, void *dst, const void *a, const void *b, size_t count, int dtype,
		      int op);
	/* Device scratch (the schedules' temporary buffer). */
	int (*alloc)(void *be, void **p, size_t bytes);
	void (*free)(void *be, void *p);
	/* Pins a host staging region for fast copies (failure: unpinned,
	 * slower, still correct). */
	int (*pin)(void *be, void *p, size_t bytes);
	void (*unpin)(void *be, void *p);
};

/* The CUDA backend: 0, -ENOSYS (libmrc-coll built without CUDA,
 * coll/memops_none.c) or -ENODEV (no GPU). */
int mrc__coll_cuda_devops(const struct mrc__coll_devops **out);

/* Attaches a backend to c (pins its staging regions); tests pass a fake.
 * mem: MRC_COLL_MEM_*.  Replaces any earlier one. */
int mrc__coll_dev_attach(struct mrc_coll *c, const struct mrc__coll_devops *d, int mem);
void mrc__coll_dev_release(struct mrc_coll *c);

/* Per call, at the executor's start: sets c->ops to the host or the
 * device table by c's memory mode and where in and out are; -EINVAL when
 * one is device memory and the other host memory. */
int mrc__coll_pick(struct mrc_coll *c, const void *in, const void *out);
/* The schedule's temporary buffer, where the call's table can reach it. */
void *mrc__coll_tmp_alloc(struct mrc_coll *c, size_t bytes);
void mrc__coll_tmp_free(struct mrc_coll *c, void *p);

/* The CUDA reduction kernels (coll/reduce_cuda.cu): dst = a op b on
 * device memory, launched on stream (a cudaStream_t); returns the
 * launch's cudaError_t (0: launched). */
int mrc__coll_cuda_reduce(void *dst, const void *a, const void *b, size_t count, int dtype, int op,
			  void *stream);

#ifdef __cplusplus
}
#endif
#endif

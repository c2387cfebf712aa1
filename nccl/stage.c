/* CUDA buffers in the NCCL plugin (docs/nccl.md, "CUDA buffers"): the
 * copy engine of libmrc-gpu's staging pipeline (gpu/stage.h: a
 * non-blocking stream and events, gpu/cuda_ops.c) moves device memory to
 * and from the comm's bounce arena, which it pins once (cudaHostRegister)
 * so the copies are DMA at PCIe rate.  The engine is reached only through
 * mrc__gpu_cuda_backend, so the tests link a fake engine in its place
 * (tests/support/nccl_fake_cuda.c) and drive this file without a GPU. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gpu/stage.h"
#include "nccl/plugin.h"

int mrcn_cuda_probe(char *why, size_t whylen)
{
	const struct mrc__gpu_copy_ops *o;
	void *be;
	int r = mrc__gpu_cuda_backend(&o, &be);
	if (!r) {
		o->destroy(be);
		snprintf(why, whylen, "a CUDA device is present");
	} else if (r == -ENOSYS) {
		snprintf(why, whylen, "built without CUDA (no nvcc at build time)");
	} else if (r == -ENODEV) {
		snprintf(why, whylen, "no CUDA device");
	} else {
		snprintf(why, whylen, "no CUDA copy engine: %s", strerror(-r));
	}
	return r;
}

int mrcn_cuda_attach(struct comm *c)
{
	if (c->cops)
		return 0;
	int r = mrc__gpu_cuda_backend(&c->cops, &c->cbe);
	if (r) {
		c->cops = NULL;
		return r;
	}
	/* Pinned, async copies run at DMA rate; unpinned they still work
	 * (the driver stages them), only slower: not an error. */
	r = c->cops->host_register(c->cbe, c->base, mrcn_arena_bytes);
	c->pinned = !r;
	if (r)
		INFO("comm to host %u: bounce arena not pinned (%s): CUDA copies go unpinned", c->host,
		     strerror(-r));
	return 0;
}

int mrcn_cuda_copy(struct comm *c, int to_dev, void *dev, uint64_t off, uint64_t n)
{
	const struct mrc__gpu_copy_ops *o = c->cops;
	/* One copy, then its event: copy errors of the stream (an async
	 * CUDA error) surface at the wait, before anything is posted or
	 * reported done. */
	int r = to_dev ? o->h2d(c->cbe, dev, c->base + off, n) : o->d2h(c->cbe, c->base + off, dev, n);
	if (!r)
		r = o->mark(c->cbe, 0);
	if (!r)
		r = o->wait(c->cbe, 0);
	return r;
}

void mrcn_cuda_detach(struct comm *c)
{
	if (!c->cops)
		return;
	if (c->pinned)
		c->cops->host_unregister(c->cbe, c->base);
	c->cops->destroy(c->cbe);
	c->cops = NULL;
	c->cbe = NULL;
	c->pinned = 0;
}

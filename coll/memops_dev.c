/* The device memory operations table and its selection per call
 * (coll/devmem.h, docs/coll.md "GPU buffers"). */
#include <errno.h>
#include <stdlib.h>

#include "coll/coll_int.h"
#include "coll/devmem.h"

/* The communicator whose collective runs on this thread.  The table's
 * functions have the host table's signatures (no context, no status), so
 * they find their backend, and report a failure, through it: one
 * communicator is used by one thread at a time (mrc/coll.h), and pick
 * sets it at the start of every call. */
static __thread struct mrc_coll *cur;

/* A failed device operation aborts the communicator (every rank's call
 * returns an error, as for a failed transfer); later operations of the
 * call are skipped. */
static void dev_copy(void *dst, const void *src, size_t bytes)
{
	if (!bytes || dst == src || cur->err)
		return;
	int r = cur->dev->copy(cur->dev_be, dst, src, bytes);
	if (r)
		mrc__coll_fail(cur, r);
}

static void dev_reduce(void *dst, const void *a, const void *b, size_t count, int dtype, int op)
{
	if (!count || cur->err)
		return;
	int r = cur->dev->reduce(cur->dev_be, dst, a, b, count, dtype, op);
	if (r)
		mrc__coll_fail(cur, r);
}

/* No axpy/from_float: the MoE combine runs on its own host buffers and
 * calls the host table's (MoE takes host memory only). */
static const struct mrc__coll_memops dev_ops = { .copy = dev_copy, .reduce = dev_reduce };

static uint64_t region_bytes(const struct mrc_coll *c)
{
	return (uint64_t)c->n * c->window * c->chunk;
}

int mrc__coll_dev_attach(struct mrc_coll *c, const struct mrc__coll_devops *d, int mem)
{
	if (mem < MRC_COLL_MEM_HOST || mem > MRC_COLL_MEM_DEVICE)
		return -EINVAL;
	mrc__coll_dev_release(c);
	void *be;
	int r = d->open(&be);
	if (r)
		return r;
	c->dev = d;
	c->dev_be = be;
	c->mem = mem;
	/* The staging regions every device byte passes through. */
	c->dev_pinned = d->pin(be, c->rxb, region_bytes(c)) == 0;
	if (c->dev_pinned && d->pin(be, c->txb, region_bytes(c))) {
		d->unpin(be, c->rxb);
		c->dev_pinned = 0;
	}
	return 0;
}

void mrc__coll_dev_release(struct mrc_coll *c)
{
	if (!c->dev)
		return;
	if (c->dev_pinned) {
		c->dev->unpin(c->dev_be, c->rxb);
		c->dev->unpin(c->dev_be, c->txb);
	}
	c->dev->close(c->dev_be);
	c->dev = NULL;
	c->dev_be = NULL;
	c->dev_pinned = 0;
	c->mem = MRC_COLL_MEM_HOST;
}

int mrc_coll_set_memory(struct mrc_coll *c, int mem)
{
	if (!c || mem < MRC_COLL_MEM_HOST || mem > MRC_COLL_MEM_DEVICE)
		return -EINVAL;
	if (mem == MRC_COLL_MEM_HOST) {
		mrc__coll_dev_release(c);
		return 0;
	}
	if (c->dev) {
		c->mem = mem;
		return 0;
	}
	const struct mrc__coll_devops *d;
	int r = mrc__coll_cuda_devops(&d);
	return r ? r : mrc__coll_dev_attach(c, d, mem);
}

void mrc__coll_use(struct mrc_coll *c, const struct mrc__coll_memops *ops)
{
	/* A stage of a queued request runs after other calls may have
	 * picked: its table (and this thread's communicator) again. */
	cur = c;
	c->ops = ops;
}

int mrc__coll_pick(struct mrc_coll *c, const void *in, const void *out)
{
	cur = c;
	c->ops = &mrc__coll_host_ops;
	if (!c->dev || c->mem == MRC_COLL_MEM_HOST)
		return 0;
	int din = 1, dout = 1;
	if (c->mem == MRC_COLL_MEM_AUTO) {
		/* NULL (a count of 0): takes the other buffer's side */
		din = in ? c->dev->where(c->dev_be, in) : -1;
		dout = out ? c->dev->where(c->dev_be, out) : din;
		if (din < 0)
			din = dout;
		if (din != dout)
			return -EINVAL;     /* one on the device, one on the host */
	}
	if (din == 1)
		c->ops = &dev_ops;
	return 0;
}

void *mrc__coll_tmp_alloc(struct mrc_coll *c, size_t bytes)
{
	if (c->ops != &dev_ops)
		return malloc(bytes);
	void *p = NULL;
	return c->dev->alloc(c->dev_be, &p, bytes) ? NULL : p;
}

void mrc__coll_tmp_free(struct mrc_coll *c, void *p)
{
	if (c->ops != &dev_ops)
		free(p);
	else if (p)
		c->dev->free(c->dev_be, p);
}

/* The device view of a host channel (mrc_gpu_chan_to_device): the QP's
 * ring mapping, the client's notify page and the watchdog's abort word are
 * registered with cudaHostRegister(..., cudaHostRegisterMapped) and the
 * channel's pointers translated with cudaHostGetDevicePointer.  Several
 * channels share a notify page (one per client) and an abort word (one per
 * watchdog), and a ring mapping may be given to the device twice, so the
 * registrations are counted per page range and undone by the last
 * release.  CUDA's own registry cannot do this: a second cudaHostRegister
 * of the same range fails and one cudaHostUnregister undoes it for all. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "mrc/gpu.h"
#include "gpu/cuda_err.h"

struct reg {
	struct reg *next;
	uintptr_t base;
	uint64_t len;
	unsigned refs;
	int owned;                 /* 0: registered by someone else before us */
};
static struct reg *regs;
static pthread_mutex_t regs_lock = PTHREAD_MUTEX_INITIALIZER;

struct range {
	uintptr_t base;
	uint64_t len;
};

static struct range page_range(const void *p, uint64_t len)
{
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t a = (uintptr_t)p & ~(pg - 1);
	uintptr_t e = ((uintptr_t)p + len + pg - 1) & ~(pg - 1);
	return (struct range){ a, e - a };
}

/* The (up to) three page ranges a channel's device view needs. */
static int chan_ranges(const struct mrc_gpu_chan *h, struct range r[3])
{
	int n = 0;
	uintptr_t lo = (uintptr_t)h->sqh < (uintptr_t)h->cqh ? (uintptr_t)h->sqh : (uintptr_t)h->cqh;
	uintptr_t sq_end = (uintptr_t)(h->sq + (uint64_t)h->sq_mask + 1);
	uintptr_t cq_end = (uintptr_t)(h->cq + (uint64_t)h->cq_mask + 1);
	uintptr_t hi = sq_end > cq_end ? sq_end : cq_end;
	/* Both rings live in one mapping (one memfd, ring.h), so the span
	 * from the lower header to the higher ring's end lies inside it. */
	r[n++] = page_range((void *)lo, hi - lo);
	if (h->notify)
		r[n++] = page_range(h->notify, sizeof(*h->notify) + h->notify->slots);
	if (h->abort)
		r[n++] = page_range((const void *)h->abort, sizeof(*h->abort));
	return n;
}

static int reg_get(struct range rg)
{
	for (struct reg *g = regs; g; g = g->next)
		if (g->base == rg.base && g->len == rg.len) {
			g->refs++;
			return 0;
		}
	struct reg *g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	int r = mrc__gpu_cuda_errno(cudaHostRegister((void *)rg.base, rg.len,
						 cudaHostRegisterMapped | cudaHostRegisterPortable));
	/* Registered already by the application (e.g. the whole page of an
	 * abort word it pinned itself): usable as it is, not ours to undo. */
	if (r == -EEXIST)
		(void)cudaGetLastError();
	else if (r) {
		free(g);
		return r;
	}
	*g = (struct reg){ .next = regs, .base = rg.base, .len = rg.len, .refs = 1, .owned = !r };
	regs = g;
	return 0;
}

static void reg_put(struct range rg)
{
	for (struct reg **pp = &regs; *pp; pp = &(*pp)->next) {
		struct reg *g = *pp;
		if (g->base != rg.base || g->len != rg.len)
			continue;
		if (--g->refs == 0) {
			if (g->owned)
				(void)cudaHostUnregister((void *)g->base);
			*pp = g->next;
			free(g);
		}
		return;
	}
}

static int dev_ptr(void *host, void **dev)
{
	if (!host) {
		*dev = NULL;
		return 0;
	}
	return mrc__gpu_cuda_errno(cudaHostGetDevicePointer(dev, host, 0));
}

int mrc_gpu_chan_to_device(const struct mrc_gpu_chan *host, struct mrc_gpu_chan *dev)
{
	int r = mrc__gpu_cuda_have_device();
	if (r)
		return r;
	if (!host->sqh || !host->sq || !host->cqh || !host->cq)
		return -EINVAL;
	struct range rg[3];
	int n = chan_ranges(host, rg), i;
	pthread_mutex_lock(&regs_lock);
	for (i = 0; i < n && !r; i++)
		r = reg_get(rg[i]);
	if (r)
		while (--i > 0)
			reg_put(rg[i - 1]);
	pthread_mutex_unlock(&regs_lock);
	if (r)
		return r;

	struct mrc_gpu_chan d = *host;
	void *p[6];
	r = dev_ptr(host->sqh, &p[0]);
	if (!r) r = dev_ptr(host->sq, &p[1]);
	if (!r) r = dev_ptr(host->cqh, &p[2]);
	if (!r) r = dev_ptr(host->cq, &p[3]);
	if (!r) r = dev_ptr(host->notify, &p[4]);
	if (!r) r = dev_ptr((void *)(uintptr_t)host->abort, &p[5]);
	if (r) {
		mrc_gpu_chan_release(host);
		return r;
	}
	d.sqh = p[0];
	d.sq = p[1];
	d.cqh = p[2];
	d.cq = p[3];
	d.notify = p[4];
	d.abort = p[5];
	*dev = d;
	return 0;
}

void mrc_gpu_chan_release(const struct mrc_gpu_chan *host)
{
	struct range rg[3];
	int n = chan_ranges(host, rg);
	pthread_mutex_lock(&regs_lock);
	for (int i = 0; i < n; i++)
		reg_put(rg[i]);
	pthread_mutex_unlock(&regs_lock);
}

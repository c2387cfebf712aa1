/* A fake of libmrc-gpu's CUDA copy engine (gpu/stage.h's
 * mrc__gpu_cuda_backend) for the NCCL plugin's CUDA path without a GPU
 * (tests/support/nccl_fake_cuda.h). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu/stage.h"
#include "tests/support/nccl_fake_cuda.h"

#define EXPORT __attribute__((visibility("default")))
#define QMAX 64

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int present = 1;
static uint64_t fail_at, seq;
static unsigned delay_us;
static struct mrcn_fake_stats st;

struct copy {
	void *dst;
	const void *src;
	uint64_t n;
	int to_dev, fail;
};

struct fake_be {
	struct copy q[QMAX];
	unsigned nq;
	unsigned mark[MRC__GPU_STAGE_DEPTH];   /* queue length at each mark */
};

static int enqueue(void *be, void *dst, const void *src, uint64_t n, int to_dev)
{
	struct fake_be *f = be;
	if (f->nq == QMAX)
		return -ENOSPC;
	pthread_mutex_lock(&mu);
	int fail = fail_at && ++seq == fail_at;
	if (to_dev)
		st.h2d++;
	else
		st.d2h++;
	pthread_mutex_unlock(&mu);
	f->q[f->nq++] = (struct copy){ dst, src, n, to_dev, fail };
	return 0;
}

static int f_d2h(void *be, void *dst, const void *src, uint64_t n)
{
	return enqueue(be, dst, src, n, 0);
}

static int f_h2d(void *be, void *dst, const void *src, uint64_t n)
{
	return enqueue(be, dst, src, n, 1);
}

static int f_mark(void *be, unsigned slot)
{
	struct fake_be *f = be;
	if (slot >= MRC__GPU_STAGE_DEPTH)
		return -EINVAL;
	f->mark[slot] = f->nq;
	return 0;
}

/* Runs the copies enqueued before the mark, in order; a failed one
 * copies nothing and is the wait's error (as an async CUDA error surfaces
 * at cudaEventSynchronize). */
static int f_wait(void *be, unsigned slot)
{
	struct fake_be *f = be;
	if (slot >= MRC__GPU_STAGE_DEPTH)
		return -EINVAL;
	if (delay_us) {
		/* the engine's latency, not a synchronisation */
		struct timespec ts = { 0, (long)delay_us * 1000 };
		nanosleep(&ts, NULL);
	}
	unsigned upto = f->mark[slot];
	int r = 0;
	pthread_mutex_lock(&mu);
	st.waits++;
	for (unsigned i = 0; i < upto; i++) {
		struct copy *c = &f->q[i];
		if (c->fail) {
			st.failed++;
			if (!r)
				r = -EIO;
			continue;
		}
		memcpy(c->dst, c->src, c->n);
		if (c->to_dev)
			st.h2d_bytes += c->n;
		else
			st.d2h_bytes += c->n;
	}
	pthread_mutex_unlock(&mu);
	memmove(f->q, f->q + upto, (f->nq - upto) * sizeof(f->q[0]));
	f->nq -= upto;
	for (unsigned i = 0; i < MRC__GPU_STAGE_DEPTH; i++)
		f->mark[i] = f->mark[i] > upto ? f->mark[i] - upto : 0;
	return r;
}

static int f_pin(void *be, void *p, uint64_t n)
{
	pthread_mutex_lock(&mu);
	st.pinned++;
	pthread_mutex_unlock(&mu);
	return 0;
}

static void f_unpin(void *be, void *p)
{
	pthread_mutex_lock(&mu);
	st.unpinned++;
	pthread_mutex_unlock(&mu);
}

static void f_destroy(void *be)
{
	pthread_mutex_lock(&mu);
	st.destroyed++;
	pthread_mutex_unlock(&mu);
	free(be);
}

static const struct mrc__gpu_copy_ops fake_ops = {
	.d2h = f_d2h, .h2d = f_h2d, .mark = f_mark, .wait = f_wait,
	.host_register = f_pin, .host_unregister = f_unpin, .destroy = f_destroy,
};

int mrc__gpu_cuda_backend(const struct mrc__gpu_copy_ops **ops, void **be)
{
	pthread_mutex_lock(&mu);
	int ok = present;
	if (ok)
		st.engines++;
	pthread_mutex_unlock(&mu);
	if (!ok)
		return -ENODEV;
	struct fake_be *f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	*ops = &fake_ops;
	*be = f;
	return 0;
}

EXPORT void mrcn_fake_cuda_set(int p, uint64_t fail, unsigned delay)
{
	pthread_mutex_lock(&mu);
	present = p;
	fail_at = fail;
	delay_us = delay;
	seq = 0;
	memset(&st, 0, sizeof(st));
	pthread_mutex_unlock(&mu);
}

EXPORT void mrcn_fake_cuda_stats(struct mrcn_fake_stats *out)
{
	pthread_mutex_lock(&mu);
	*out = st;
	pthread_mutex_unlock(&mu);
}

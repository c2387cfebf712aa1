/* The staging pipeline: device memory -> pinned host shadow -> WRITE
 * posts, chunk by chunk, with the copies of the next chunks running on the
 * copy engine while the current one is posted and sent (gpu/stage.h). */
#include <errno.h>

#include "gpu/stage.h"

/* Reaps until fewer than max_out chunks are outstanding. */
static int reap_until(const struct mrc__gpu_sink *sink, void *sk, uint64_t *done,
		      uint64_t posted, uint64_t max_out, int *first_err)
{
	while (posted - *done > max_out) {
		int err = 0;
		int r = sink->reap(sk, &err);
		if (r < 0)
			return r;
		if (err && !*first_err)
			*first_err = err;
		*done += (uint64_t)r;
	}
	return 0;
}

int mrc__gpu_stage_put(const struct mrc__gpu_stage *st, const struct mrc__gpu_sink *sink,
		       void *sk, uint64_t off, uint64_t len, uint64_t roff)
{
	const struct mrc__gpu_copy_ops *o = st->ops;
	if (!st->chunk || !len)
		return len ? -EINVAL : 0;
	uint64_t n = (len + st->chunk - 1) / st->chunk;
	uint64_t issued = 0, posted = 0, done = 0;
	int err = 0, cerr = 0;

	while (posted < n && !err && !cerr) {
		/* Keep up to DEPTH chunks copied or copying ahead of the post. */
		while (issued < n && issued - posted < MRC__GPU_STAGE_DEPTH) {
			uint64_t at = off + issued * st->chunk;
			uint64_t b = issued + 1 == n ? len - issued * st->chunk : st->chunk;
			int r = o->d2h(st->be, st->shadow + at, st->dev + at, b);
			if (!r)
				r = o->mark(st->be, (unsigned)(issued % MRC__GPU_STAGE_DEPTH));
			if (r) {
				err = r;
				break;
			}
			issued++;
		}
		if (err || posted == issued)
			break;
		int r = o->wait(st->be, (unsigned)(posted % MRC__GPU_STAGE_DEPTH));
		uint64_t at = off + posted * st->chunk;
		uint64_t b = posted + 1 == n ? len - posted * st->chunk : st->chunk;
		while (!r) {
			r = sink->post(sk, at, b, roff + posted * st->chunk);
			/* Full: reap one of ours (full with none of ours
			 * outstanding cannot clear: -ENOSPC stands). */
			if (r != -ENOSPC || posted == done)
				break;
			r = reap_until(sink, sk, &done, posted, posted - done - 1, &cerr);
			if (!r && cerr)
				r = cerr;  /* an error completion: post nothing more */
		}
		if (r) {
			err = r;
			break;
		}
		posted++;
	}
	/* Copies still in flight write into the shadow: wait for them before
	 * the caller may reuse it (errors there change nothing now; waiting
	 * again for a mark already waited for is harmless). */
	for (uint64_t k = posted; k < issued; k++)
		(void)o->wait(st->be, (unsigned)(k % MRC__GPU_STAGE_DEPTH));
	int r = reap_until(sink, sk, &done, posted, 0, &cerr);
	if (err)
		return err;
	if (r)
		return r;
	return cerr;
}

int mrc__gpu_stage_copy(const struct mrc__gpu_stage *st, int to_dev, uint64_t off, uint64_t len)
{
	const struct mrc__gpu_copy_ops *o = st->ops;
	int r = to_dev ? o->h2d(st->be, (void *)(st->dev + off), st->shadow + off, len)
		       : o->d2h(st->be, st->shadow + off, st->dev + off, len);
	if (!r)
		r = o->mark(st->be, 0);
	if (!r)
		r = o->wait(st->be, 0);
	return r;
}

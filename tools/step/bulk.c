/* mrc-step's background traffic (bulk=SIZE): each rank WRITEs SIZE bytes
 * per step to rank (r + n/2) % n on a QP of class MRC_QP_BULK (prefetch,
 * checkpoint: what the step never waits on), CHUNK at a time with DEPTH in
 * flight, posted and reaped only when the step's stub or waits poll it.
 * The step does not wait for it; close drains what is queued. */
#include <errno.h>
#include <stdlib.h>

#include "common/clock.h"
#include "coll/coll_int.h"
#include "mrc/mrc.h"
#include "tools/step/step.h"

#define CHUNK (1u << 20)
#define DEPTH 16
#define REGION (16u << 20)

struct step_bulk {
	struct mrc_ctx *ctx;
	struct mrc_mr *src, *dst;
	struct mrc_qp *tx, *rx;
	uint32_t rkey;
	uint64_t queued, posted, done, inflight, woff;
	int timeout_ms;
};

/* Connects tx to the peer's listener and accepts the peer's tx on rx;
 * the lower half connects first, the upper half accepts first. */
static int pair_up(struct step_bulk *b, struct mrc_coll *c, uint32_t sid)
{
	uint32_t n = mrc_coll_size(c), me = mrc_coll_rank(c), peer = (me + n / 2) % n;
	uint32_t *hosts = calloc(n, sizeof(*hosts));
	if (!hosts)
		return -ENOMEM;
	int r = mrc_coll_allgather(c, &c->host, hosts, 1, MRC_COLL_INT32);
	if (!r)
		r = mrc_listen(b->ctx, sid + me, 1);
	if (!r)
		r = mrc_coll_barrier(c);
	struct mrc_qp_addr ra;
	for (int k = 0; k < 2 && !r; k++) {
		if ((k == 0) == (me < n / 2)) {
			int64_t end = mrc__mono_ms() + b->timeout_ms;
			while ((r = mrc_connect(b->tx, hosts[peer], sid + peer, 0, &ra)) == -ECONNREFUSED &&
			       mrc__mono_ms() < end)
				;   /* the peer listens already (barrier): a full backlog clears */
			b->rkey = ra.priv;
		} else {
			r = mrc_accept(b->rx, sid + me, mrc_mr_key(b->dst), b->timeout_ms, &ra);
		}
	}
	free(hosts);
	return r;
}

int mrc__step_bulk_open(struct mrc_coll *c, const struct step_par *p, uint32_t sid,
			const char *sock, struct step_bulk **out)
{
	struct step_bulk *b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->timeout_ms = 30000;
	struct mrc_qp_cfg cfg = { .sq_entries = 64, .cq_entries = 128, .flags = MRC_QP_BULK };
	int r = mrc_open(sock, &b->ctx);
	if (!r)
		r = mrc_alloc_mr(b->ctx, CHUNK, MRC_MR_LOCAL_READ, &b->src);
	if (!r)
		r = mrc_alloc_mr(b->ctx, REGION, MRC_MR_REMOTE_WRITE, &b->dst);
	if (!r)
		r = mrc_create_qp(b->ctx, &cfg, &b->tx);
	if (!r)
		r = mrc_create_qp(b->ctx, &cfg, &b->rx);
	if (!r)
		r = pair_up(b, c, sid);
	(void)p;
	if (r) {
		if (b->ctx)
			mrc_close(b->ctx);
		free(b);
		return r;
	}
	*out = b;
	return 0;
}

void mrc__step_bulk_add(struct step_bulk *b, uint64_t bytes)
{
	b->queued += bytes;
}

int mrc__step_bulk_poll(struct step_bulk *b)
{
	struct mrc_completion cq[DEPTH];
	int k = mrc_poll_cq(b->tx, cq, DEPTH);
	if (k < 0)
		return k;
	for (int i = 0; i < k; i++) {
		if (cq[i].status)
			return cq[i].status;
		b->done += cq[i].wr_id, b->inflight--;
	}
	while (b->posted < b->queued && b->inflight < DEPTH) {
		uint64_t len = b->queued - b->posted < CHUNK ? b->queued - b->posted : CHUNK;
		if (b->woff + len > REGION)
			b->woff = 0;
		int r = mrc_post_write(b->tx, len, mrc_mr_key(b->src), 0, len, b->rkey, b->woff);
		if (r == -ENOSPC)
			break;
		if (r)
			return r;
		b->posted += len, b->woff += len, b->inflight++;
	}
	return 0;
}

int mrc__step_bulk_close(struct step_bulk *b, struct mrc_coll *c, uint64_t *done)
{
	int r = 0;
	int64_t end = mrc__mono_ms() + b->timeout_ms;
	while (!r && b->done < b->queued) {
		if ((r = mrc__step_bulk_poll(b)))
			break;
		if (b->done < b->queued && mrc__mono_ms() > end)
			r = -ETIMEDOUT;
		else if (b->inflight)
			mrc_wait(b->tx, 100);
	}
	/* The peer's writes to us may still be landing: close after everyone drained. */
	*done = b->done;
	int w = mrc_coll_barrier(c);
	mrc_close(b->ctx);
	free(b);
	return r ? r : w;
}

/* GPU memory as a transfer source and target on the UDP datapath
 * (docs/gpu.md, "GPU memory"): a device region is shadowed by a pinned
 * libmrc region; puts stage device -> host in chunks pipelined with the
 * WRITE posts (gpu/stage.c), and data that landed in the shadow is copied
 * host -> device on request.  The copies run here, in the client, which
 * owns the CUDA context; mrcd never touches CUDA. */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "common/clock.h"
#include "mrc/gpu.h"
#include "mrc/mrc.h"
#include "gpu/stage.h"

/* wr_id of the staged WRITEs, so that a stray completion is recognised. */
#define GPU_WR_ID 0x6d72632d67707521ull   /* "mrc-gpu!" */

struct mrc_gpu_mr {
	struct mrc_mr *shadow;
	struct mrc__gpu_stage st;
	uint64_t len;
	int registered;
};

int mrc__gpu_reg_mr_with(struct mrc_ctx *ctx, void *devptr, uint64_t len, uint32_t access,
			 const struct mrc__gpu_copy_ops *ops, void *be, struct mrc_gpu_mr **out)
{
	struct mrc_gpu_mr *g = calloc(1, sizeof(*g));
	int r = g ? 0 : -ENOMEM;
	if (!r && (!devptr || !len))
		r = -EINVAL;
	/* The shadow is read by WRITE posts and written by copies back from
	 * the device; the caller's access adds what peers may do to it. */
	if (!r)
		r = mrc_alloc_mr(ctx, len, access | MRC_MR_LOCAL_READ | MRC_MR_LOCAL_WRITE, &g->shadow);
	if (!r) {
		g->st = (struct mrc__gpu_stage){ .ops = ops, .be = be,
			.shadow = mrc_mr_addr(g->shadow), .dev = devptr,
			.chunk = MRC__GPU_CHUNK_DEFAULT };
		g->len = len;
		r = ops->host_register(be, g->st.shadow, len);
		g->registered = !r;
	}
	if (r) {
		if (g && g->shadow)
			mrc_dereg_mr(g->shadow);
		free(g);
		ops->destroy(be);
		return r;
	}
	*out = g;
	return 0;
}

int mrc_gpu_reg_mr(struct mrc_ctx *ctx, void *devptr, uint64_t len, uint32_t access,
		   struct mrc_gpu_mr **out)
{
	const struct mrc__gpu_copy_ops *ops;
	void *be;
	int r = mrc__gpu_cuda_backend(&ops, &be);
	if (r)
		return r;
	return mrc__gpu_reg_mr_with(ctx, devptr, len, access, ops, be, out);
}

int mrc_gpu_dereg_mr(struct mrc_gpu_mr *g)
{
	int r = mrc_dereg_mr(g->shadow);
	if (r)
		return r;              /* -EBUSY: posted work still uses it */
	if (g->registered)
		g->st.ops->host_unregister(g->st.be, g->st.shadow);
	g->st.ops->destroy(g->st.be);
	free(g);
	return 0;
}

struct mrc_mr *mrc_gpu_mr_host(const struct mrc_gpu_mr *g)
{
	return g->shadow;
}

int mrc_gpu_mr_set_chunk(struct mrc_gpu_mr *g, uint64_t bytes)
{
	if (!bytes || bytes > (1ull << 30))
		return -EINVAL;
	g->st.chunk = bytes;
	return 0;
}

static int in_range(const struct mrc_gpu_mr *g, uint64_t off, uint64_t len)
{
	return off <= g->len && len <= g->len - off;
}

int mrc_gpu_mr_to_device(struct mrc_gpu_mr *g, uint64_t off, uint64_t len)
{
	return in_range(g, off, len) ? mrc__gpu_stage_copy(&g->st, 1, off, len) : -ERANGE;
}

int mrc_gpu_mr_from_device(struct mrc_gpu_mr *g, uint64_t off, uint64_t len)
{
	return in_range(g, off, len) ? mrc__gpu_stage_copy(&g->st, 0, off, len) : -ERANGE;
}

/* ---- the libmrc sink: WRITE posts on the caller's QP ------------------ */
struct qp_sink {
	struct mrc_qp *qp;
	uint32_t lkey, rkey;
	int64_t deadline_ms;       /* < 0: none */
};

static int qp_post(void *sk, uint64_t off, uint64_t len, uint64_t roff)
{
	struct qp_sink *s = sk;
	return mrc_post_write(s->qp, GPU_WR_ID, s->lkey, off, len, s->rkey, roff);
}

static int qp_reap(void *sk, int *err)
{
	struct qp_sink *s = sk;
	struct mrc_completion c[16];
	for (;;) {
		int n = mrc_poll_cq(s->qp, c, 16), ours = 0;
		if (n < 0)
			return n;
		for (int i = 0; i < n; i++) {
			/* The QP is the caller's: another work request's
			 * completion here breaks the documented contract. */
			if (c[i].wr_id != GPU_WR_ID && !*err)
				*err = -EPROTO;
			if (c[i].status && !*err)
				*err = c[i].status;
			ours++;
		}
		if (ours)
			return ours;
		int left = -1;
		if (s->deadline_ms >= 0) {
			int64_t l = s->deadline_ms - mrc__mono_ms();
			if (l <= 0)
				return -ETIMEDOUT;
			left = (int)l;
		}
		int r = mrc_wait(s->qp, left);
		if (r && r != -ETIMEDOUT)
			return r;
	}
}

int mrc_gpu_write(struct mrc_qp *qp, struct mrc_gpu_mr *src, uint64_t loff, uint64_t len,
		  uint32_t rkey, uint64_t roff, int timeout_ms)
{
	if (!in_range(src, loff, len))
		return -ERANGE;
	struct qp_sink s = { .qp = qp, .lkey = mrc_mr_key(src->shadow), .rkey = rkey,
		.deadline_ms = timeout_ms < 0 ? -1 : mrc__mono_ms() + timeout_ms };
	static const struct mrc__gpu_sink sink = { .post = qp_post, .reap = qp_reap };
	return mrc__gpu_stage_put(&src->st, &sink, &s, loff, len, roff);
}

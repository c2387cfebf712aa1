/* The communicator: configuration, bootstrap through rank 0's listener,
 * a full mesh of QPs connected out of band, and teardown (the progress
 * engine and the executor: run.c). */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "coll/coll_int.h"
#include "coll/devmem.h"

int64_t mrc__coll_now_ms(void)
{
	return mrc__mono_ms();
}

static int env_u32(const char *name, uint32_t *v)
{
	const char *s = getenv(name);
	if (!s || !*s)
		return 0;
	char *end;
	errno = 0;
	unsigned long x = strtoul(s, &end, 0);
	if (errno || *end || x > UINT32_MAX)
		return -EINVAL;
	*v = (uint32_t)x;
	return 1;
}

int mrc_coll_cfg_from_env(struct mrc_coll_cfg *cfg)
{
	*cfg = (struct mrc_coll_cfg){ .root_host = MRC_COLL_HOST_ANY, .sid = 7400 };
	static const char *const pairs[][2] = {
		{ "MRC_COLL_SIZE", "MRC_COLL_RANK" },
		{ "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK" },
		{ "PMI_SIZE", "PMI_RANK" },
		{ "SLURM_NTASKS", "SLURM_PROCID" },
	};
	int found = 0, r;
	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]) && !found; i++) {
		int a = env_u32(pairs[i][0], &cfg->nranks), b = env_u32(pairs[i][1], &cfg->rank);
		if (a < 0 || b < 0)
			return -EINVAL;
		found = a && b;
	}
	if (!found)
		return -ENOENT;
	uint32_t t = 0;
	if ((r = env_u32("MRC_COLL_ROOT_HOST", &cfg->root_host)) < 0 ||
	    (r = env_u32("MRC_COLL_SID", &cfg->sid)) < 0 ||
	    (r = env_u32("MRC_COLL_CHUNK", &cfg->chunk_bytes)) < 0 ||
	    (r = env_u32("MRC_COLL_WINDOW", &cfg->window)) < 0 ||
	    (r = env_u32("MRC_COLL_TIMEOUT_MS", &t)) < 0 ||
	    (r = env_u32("MRC_COLL_PLANES", &cfg->planes)) < 0 ||
	    (r = env_u32("MRC_COLL_HOSTS_PER_LEAF", &cfg->hosts_per_leaf)) < 0)
		return r;
	if (t > INT_MAX)
		return -EINVAL;
	const char *a = getenv("MRC_COLL_ALGO");
	if (a && *a) {
		static const char *const names[] = { "auto", "ring", "tree", "forest" };
		cfg->algo = -1;
		for (int i = 0; i < 4; i++)
			if (!strcmp(a, names[i]))
				cfg->algo = i;
		if (cfg->algo < 0)
			return -EINVAL;
	}
	cfg->timeout_ms = (int)t;
	cfg->sock = getenv("MRC_SOCKET");
	return cfg->rank < cfg->nranks ? 0 : -EINVAL;
}

uint32_t mrc_coll_rank(const struct mrc_coll *c) { return c->me; }
uint32_t mrc_coll_size(const struct mrc_coll *c) { return c->n; }

void *mrc__coll_scratch(struct mrc_coll *c, int slot, size_t bytes)
{
	if (bytes <= c->scr_cap[slot])
		return c->scr[slot];
	free(c->scr[slot]);
	c->scr[slot] = malloc(bytes);
	c->scr_cap[slot] = c->scr[slot] ? bytes : 0;
	return c->scr[slot];
}

int mrc_coll_error(struct mrc_coll *c)
{
	if (!c->err)
		mrc__coll_poll_peers(c);
	return c->err;
}

/* The staging regions (a window of chunks per peer and QP set; rx the
 * peers write into) and a QP per peer of each set. */
static int make_qps(struct mrc_coll *c)
{
	uint64_t region = (uint64_t)c->np * c->window * c->chunk;
	uint32_t sq = 16;
	while (sq < 2 * c->window + 8)
		sq *= 2;
	struct mrc_qp_cfg qc = { .sq_entries = sq, .cq_entries = 4 * sq };
	int r;
	if ((r = mrc_alloc_mr(c->ctx, region, MRC_MR_REMOTE_WRITE | MRC_MR_LOCAL_READ, &c->rx)) ||
	    (r = mrc_alloc_mr(c->ctx, region, MRC_MR_LOCAL_READ, &c->tx)))
		return r;
	c->rxb = mrc_mr_addr(c->rx);
	c->txb = mrc_mr_addr(c->tx);
	/* QP set 0 sprays over every plane; set 1 + p is pinned to plane p
	 * (the forest's trees of that plane). */
	for (uint32_t j = 0; j < c->np && !r; j++) {
		qc.plane_mask = j < c->n ? 0 : 1u << (j / c->n - 1);
		if (j % c->n != c->me)
			r = mrc_create_qp(c->ctx, &qc, &c->p[j].qp);
	}
	return r;
}

/* The comm's epoll set: the QPs' completion doorbell and the context's
 * socket (mrcd gone). */
static int make_epoll(struct mrc_coll *c)
{
	int r = 0;
	if ((c->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0)
		return -errno;
	/* Every QP of the context shares one completion doorbell. */
	for (uint32_t j = 0; j < c->np && !r; j++) {
		struct epoll_event ev = { .events = EPOLLIN, .data.u32 = j };
		if (j % c->n != c->me) {
			if (epoll_ctl(c->epfd, EPOLL_CTL_ADD, mrc_qp_fd(c->p[j].qp), &ev))
				r = -errno;
			break;
		}
	}
	struct epoll_event ev = { .events = EPOLLRDHUP, .data.u32 = UINT32_MAX };
	if (!r && epoll_ctl(c->epfd, EPOLL_CTL_ADD, mrc_ctx_fd(c->ctx), &ev))
		r = -errno;
	return r;
}

int mrc_coll_init(const struct mrc_coll_cfg *cfg, struct mrc_coll **out)
{
	if (!cfg || !out || cfg->nranks == 0 || cfg->rank >= cfg->nranks ||
	    cfg->window > MRC__COLL_MAXWIN || (cfg->chunk_bytes & 63) || cfg->algo < 0 ||
	    cfg->algo > MRC_COLL_ALGO_FOREST || cfg->planes > MRC_QP_MAX_PLANES)
		return -EINVAL;
	struct mrc_coll *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->n = cfg->nranks;
	c->me = cfg->rank;
	c->chunk = cfg->chunk_bytes ? cfg->chunk_bytes : 512u << 10;
	c->window = cfg->window ? cfg->window : 4;
	c->timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : 30000;
	c->ops = &mrc__coll_host_ops;
	c->sid = cfg->sid;
	/* MRC_COLL_SHM=0 keeps the ranks of a host on their QPs (through
	 * mrcd); unset or 1: shared memory between them. */
	const char *e = getenv("MRC_COLL_SHM");
	if (e && *e && strcmp(e, "0") && strcmp(e, "1")) {
		free(c);
		return -EINVAL;
	}
	c->shm_on = !(e && !strcmp(e, "0"));
	if (getrandom(&c->nonce, sizeof(c->nonce), GRND_NONBLOCK) != sizeof(c->nonce))
		c->nonce = (uint64_t)getpid() << 32 ^ (uint64_t)mrc__coll_now_ms() ^ (uintptr_t)c;
	mrc__coll_algo_init(c, cfg);
	c->epfd = -1;
	c->max_inflight = MRC_COLL_INFLIGHT_DEFAULT;
	int64_t end = mrc__coll_now_ms() + c->timeout_ms;
	c->p = calloc(c->np, sizeof(*c->p));
	c->leaf = calloc(c->n, sizeof(*c->leaf));
	int r = c->p && c->leaf ? mrc_open(cfg->sock, &c->ctx) : -ENOMEM;
	struct mrc_ctx_info info;
	if (r || (r = mrc_ctx_info(c->ctx, &info)))
		goto fail;
	c->host = info.host;
	if ((r = make_qps(c)))
		goto fail;
	if (c->n > 1 && (r = mrc__coll_boot(c, cfg, info.n_hosts, end)))
		goto fail;
	if ((r = make_epoll(c)))
		goto fail;
	*out = c;
	return 0;
fail:
	mrc_coll_destroy(c);
	return r;
}

void mrc_coll_destroy(struct mrc_coll *c)
{
	if (!c)
		return;
	/* Calls still in flight are complete with -ECANCELED (their peers
	 * told); their requests stay for the caller's test or wait. */
	mrc__coll_req_drop(c);
	/* Our last messages must be placed before our QPs go (bounded). */
	int64_t end = mrc__coll_now_ms() + c->timeout_ms;
	for (int busy = 1; busy && c->ctx && c->epfd >= 0 && mrc__coll_now_ms() < end;) {
		busy = 0;
		for (uint32_t j = 0; j < c->np; j++)
			if (j % c->n != c->me && !c->p[j].gone && c->p[j].wr_done < c->p[j].wr_posted)
				busy = 1;
		if (busy && mrc__coll_poll_peers(c) <= 0)
			mrc__coll_wait_peers(c, 10);
		if (c->err)
			break;
	}
	if (c->epfd >= 0)
		close(c->epfd);
	mrc__coll_dev_release(c);   /* unpins the regions before they go */
	for (size_t i = 0; i < sizeof(c->scr) / sizeof(c->scr[0]); i++)
		free(c->scr[i]);
	mrc__coll_stack_free(c);
	for (uint32_t j = 0; c->p && j < c->n; j++) {
		mrc__coll_ring_close(&c->p[j].stx);
		mrc__coll_ring_close(&c->p[j].srx);
	}
	if (c->ctx)
		mrc_close(c->ctx);   /* QPs and regions go with it */
	free(c->p);
	free(c->leaf);
	free(c);
}

/* libmrc: the context (opening, the notify page, closing); its requests
 * to mrcd go through call.c. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/fdpass.h"
#include "lib/internal.h"

/* The notify page (climsg.h HELLO fd 0): the daemon wrote its header;
 * check it, so a mismatched daemon gives a clean error instead of stray
 * stores, and that it holds a byte for every QP we may create. */
static int notify_map(struct mrc_ctx *ctx, int fd, uint64_t len, uint32_t max_qps)
{
	if (len < sizeof(struct mrc_notify) || len > (1u << 30))
		return -EBADMSG;
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return -errno;
	struct mrc_notify *n = m;
	if (n->magic != MRC_NOTIFY_MAGIC || n->version != MRC_RING_VERSION ||
	    n->slots > len - sizeof(*n) || n->slots < max_qps) {
		munmap(m, len);
		return -EPROTONOSUPPORT;
	}
	ctx->notify = n;
	ctx->notify_len = len;
	return 0;
}

MRC__API int mrc_open(const char *path, struct mrc_ctx **out)
{
	*out = NULL;
	if (!path)
		path = getenv(MRC_SOCK_ENV);
	if (!path || !*path)
		path = MRC_CLI_DEFAULT_SOCK;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	struct mrc_ctx *ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return -ENOMEM;
	pthread_mutex_init(&ctx->lock, NULL);
	/* Bounded: a spinning waiter takes a core from the daemon. */
	const char *spin = getenv("MRC_WAIT_SPIN_US");
	if (spin) {
		long us = strtol(spin, NULL, 10);
		ctx->wait_spin_ns = us > 0 ? (us < 1000 ? us : 1000) * 1000 : 0;
	}
	ctx->sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (ctx->sock < 0) {
		int r = -errno;
		free(ctx);
		return r;
	}
	if (connect(ctx->sock, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int r = -errno;
		close(ctx->sock);
		free(ctx);
		return r;
	}
	struct mrc_cli_hello h = { .ver_min = MRC_CLI_VERSION, .ver_max = MRC_CLI_VERSION };
	snprintf(h.name, sizeof(h.name), "%.*s", (int)sizeof(h.name) - 1,
		 program_invocation_short_name);
	struct mrc_cli_hello_rep rep;
	int fds[3] = { -1, -1, -1 };
	ctx->sq_bell = ctx->cq_bell = -1;
	int r = mrc__lib_call(ctx, MRC_CLI_HELLO, &h, sizeof(h), -1, &rep, sizeof(rep), fds, 3);
	if (r == 0 && rep.version != MRC_CLI_VERSION)
		r = -EPROTONOSUPPORT;
	if (r == 0)
		r = notify_map(ctx, fds[0], rep.notify_len, rep.max_qps);
	mrc__lib_close_fds(fds, 1);
	if (r) {
		mrc__lib_close_fds(fds + 1, 2);
		close(ctx->sock);
		pthread_mutex_destroy(&ctx->lock);
		free(ctx);
		return r;
	}
	ctx->sq_bell = fds[1];
	ctx->cq_bell = fds[2];
	pthread_mutex_init(&ctx->wlock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&ctx->wcond, &ca);
	pthread_condattr_destroy(&ca);
	ctx->info = (struct mrc_ctx_info){
		.host = rep.host, .n_hosts = rep.n_hosts, .client_id = rep.client_id,
		.max_qps = rep.max_qps, .max_mrs = rep.max_mrs,
		.max_ring_entries = rep.max_ring_entries, .max_mem = rep.max_mem,
	};
	*out = ctx;
	return 0;
}

MRC__API void mrc_close(struct mrc_ctx *ctx)
{
	if (!ctx)
		return;
	/* QPs before regions: the daemon refuses to drop a region that queued
	 * work still references. */
	while (ctx->qps)
		mrc_destroy_qp(ctx->qps);
	while (ctx->mrs)
		if (mrc_dereg_mr(ctx->mrs) == -EBUSY)
			mrc__lib_free_mr(ctx->mrs);
	munmap(ctx->notify, ctx->notify_len);
	close(ctx->sock);
	close(ctx->sq_bell);
	close(ctx->cq_bell);
	pthread_mutex_destroy(&ctx->lock);
	pthread_mutex_destroy(&ctx->wlock);
	pthread_cond_destroy(&ctx->wcond);
	free(ctx);
}

MRC__API int mrc_ctx_info(const struct mrc_ctx *ctx, struct mrc_ctx_info *info)
{
	*info = ctx->info;
	return 0;
}

MRC__API const char *mrc_last_error(const struct mrc_ctx *ctx)
{
	return ctx->last_error;
}

void mrc__lib_unlink_mr(struct mrc_mr *mr)
{
	pthread_mutex_lock(&mr->ctx->lock);
	for (struct mrc_mr **p = &mr->ctx->mrs; *p; p = &(*p)->next)
		if (*p == mr) {
			*p = mr->next;
			break;
		}
	pthread_mutex_unlock(&mr->ctx->lock);
}

void mrc__lib_unlink_qp(struct mrc_qp *qp)
{
	pthread_mutex_lock(&qp->ctx->lock);
	for (struct mrc_qp **p = &qp->ctx->qps; *p; p = &(*p)->next)
		if (*p == qp) {
			*p = qp->next;
			break;
		}
	pthread_mutex_unlock(&qp->ctx->lock);
}

MRC__API int mrc_ctx_fd(const struct mrc_ctx *ctx)
{
	return ctx->sock;
}

/* Read-only: the daemon writes both words from its own count and never
 * reads them back (mrc/ring.h struct mrc_notify). */
MRC__API int mrc_power_floor(const struct mrc_ctx *ctx, uint32_t *raises)
{
	if (!ctx || !ctx->notify)
		return -EINVAL;
	const struct mrc_notify *n = ctx->notify;
	if (raises)
		*raises = __atomic_load_n(&n->floor_raises, __ATOMIC_ACQUIRE);
	return __atomic_load_n(&n->power_floor, __ATOMIC_ACQUIRE) ? 1 : 0;
}

MRC__API const volatile uint32_t *mrc_power_floor_word(const struct mrc_ctx *ctx)
{
	return ctx && ctx->notify ? &ctx->notify->power_floor : NULL;
}

/* libmrc: the control channel to mrcd: one request, one reply, file
 * descriptors passed either way (mrc__lib_call, internal.h). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/fdpass.h"
#include "lib/internal.h"

void mrc__lib_close_fds(int *fds, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

static int send_msg(int sock, const void *buf, size_t len, int fd)
{
	return mrc__fdpass_send(sock, buf, len, &fd, fd >= 0, 0);
}

/* Receives one message and up to MRC_CLI_MAX_FDS fds (*nfd of them). */
static ssize_t recv_msg(int sock, void *buf, size_t cap, int *fds, unsigned *nfd)
{
	ssize_t n = mrc__fdpass_recv(sock, buf, cap, fds, MRC_CLI_MAX_FDS, nfd, 0);
	return n == 0 ? -ECONNRESET : n;
}

int mrc__lib_call(struct mrc_ctx *ctx, uint16_t type, const void *body, size_t len, int fd_in,
	      void *rep, size_t rep_len, int *fds_out, unsigned nfds)
{
	uint8_t buf[MRC_CLI_MSG_MAX];
	int r;
	pthread_mutex_lock(&ctx->lock);
	ctx->last_error[0] = 0;
	if (ctx->dead) {
		r = -EPIPE;
		goto out;
	}
	uint32_t id = ++ctx->next_req;
	r = mrc__cli_enc_req(buf, sizeof(buf), type, id, body, len);
	if (r < 0)
		goto out;
	r = send_msg(ctx->sock, buf, (size_t)r, fd_in);
	/* A daemon that refuses a connection answers its first request and
	 * closes at once, possibly before this request was sent: the answer
	 * may still be queued here, with the reason. */
	int send_err = r < 0 ? r : 0;
	if (r < 0 && r != -EPIPE && r != -ECONNRESET)
		goto dead;
	for (;;) {
		int fds[MRC_CLI_MAX_FDS];
		unsigned nfd;
		ssize_t n = recv_msg(ctx->sock, buf, sizeof(buf), fds, &nfd);
		if (n < 0) {
			mrc__lib_close_fds(fds, nfd);
			r = send_err ? send_err : (int)n;
			goto dead;
		}
		struct mrc_cli_msg m;
		const char *why;
		r = mrc__cli_dec_rep(buf, (size_t)n, &m, &why);
		if (r == 0 && m.hdr.req_id != id)
			r = 1;     /* a stale reply: skip it */
		if (r == 0 && (m.hdr.type & ~MRC_CLI_REPLY) != type)
			r = -EBADMSG, why = "reply of another type";
		if (r) {
			mrc__lib_close_fds(fds, nfd);
			if (r == 1)
				continue;
			snprintf(ctx->last_error, sizeof(ctx->last_error), "bad reply: %s", why);
			goto dead;
		}
		if (m.status < 0) {
			mrc__lib_close_fds(fds, nfd);
			snprintf(ctx->last_error, sizeof(ctx->last_error), "%.*s",
				 (int)m.reason_len, m.reason ? m.reason : "");
			r = m.status;
			if (send_err)
				goto dead;
			goto out;
		}
		if (m.body_len != rep_len || nfd != nfds) {
			mrc__lib_close_fds(fds, nfd);
			snprintf(ctx->last_error, sizeof(ctx->last_error),
				 "reply with unexpected size or fds");
			r = -EBADMSG;
			goto dead;
		}
		if (rep_len)
			memcpy(rep, m.body, rep_len);
		for (unsigned i = 0; i < nfd; i++)
			fds_out[i] = fds[i];
		r = 0;
		goto out;
	}
dead:
	/* The channel is out of step or gone: no later call can trust it. */
	__atomic_store_n(&ctx->dead, 1, __ATOMIC_RELAXED);
	if (r == -ECONNRESET || r == -EPIPE) {
		if (!ctx->last_error[0])
			snprintf(ctx->last_error, sizeof(ctx->last_error), "daemon closed the connection");
	}
out:
	pthread_mutex_unlock(&ctx->lock);
	return r;
}

/* mrcd control socket (clisock.h). */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "codec/climsg.h"
#include "common/fdpass.h"
#include "daemon/clients/clisock.h"

#define MAX_GROUPS 256

struct mrcd_clisock {
	struct mrcd *d;
	int fd;
	ev_io io;
	struct mrcd_accept_guard guard;
	char path[108];
	int has_gid;
	gid_t gid;
	mrcd_cli_conn_fn fn;
	void *ctx;
};

int mrcd_peer_in_group(int fd, gid_t pgid, gid_t gid)
{
	if (pgid == gid)
		return 1;
	gid_t small[MAX_GROUPS], *g = small;
	socklen_t l = sizeof(small);
	int in = 0;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, g, &l) < 0) {
		/* More groups than fit: the kernel said how many bytes. */
		if (errno != ERANGE || !(g = malloc(l)))
			return 0;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, g, &l) < 0)
			l = 0;
	}
	for (size_t i = 0; i < l / sizeof(gid_t) && !in; i++)
		in = g[i] == gid;
	if (g != small)
		free(g);
	return in;
}

/* Root, our own user (a daemon run by hand for tests), or a member of
 * the configured group by primary or supplementary group. */
static int peer_allowed(struct mrcd_clisock *s, int fd, struct ucred *cr)
{
	socklen_t l = sizeof(*cr);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, cr, &l) < 0)
		return 0;
	if (cr->uid == 0 || cr->uid == geteuid())
		return 1;
	return s->has_gid && mrcd_peer_in_group(fd, cr->gid, s->gid);
}

/* ---- accept without spinning at the descriptor limit ------------------ */

static void on_resume(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct mrcd_accept_guard *g = w->data;
	(void)revents;
	ev_io_start(loop, g->io);
}

void mrcd_accept_guard_init(struct mrcd_accept_guard *g, struct ev_loop *loop, ev_io *io,
			    const char *what)
{
	*g = (struct mrcd_accept_guard){ .loop = loop, .io = io, .what = what };
	ev_timer_init(&g->resume, on_resume, MRCD_ACCEPT_PAUSE_S, 0);
	g->resume.data = g;
}

void mrcd_accept_guard_stop(struct mrcd_accept_guard *g)
{
	if (g->loop)
		ev_timer_stop(g->loop, &g->resume);
}

static void guard_log(struct mrcd_accept_guard *g, int err, int paused)
{
	uint64_t now = mrcd_now();
	g->unlogged++;
	if (g->last_log_ns && now - g->last_log_ns < 1000000000ull)
		return;
	mrcd_log(MRCD_LOG_WARNING, "%s accept: %s%s (%llu failure%s since the last such line)",
		 g->what, strerror(err), paused ? ": accepting paused, retried every 100 ms" : "",
		 (unsigned long long)g->unlogged, g->unlogged == 1 ? "" : "s");
	g->unlogged = 0;
	g->last_log_ns = now;
}

int mrcd_accept(struct mrcd_accept_guard *g, int lfd)
{
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0)
			return fd;
		int err = errno;
		switch (err) {
		case EAGAIN:
		case EINTR:
			return -1;
		case ECONNABORTED:
		case EPROTO:
		case EPERM:
			continue;      /* that connection is gone: the next one */
		case EMFILE:
		case ENFILE:
		case ENOBUFS:
		case ENOMEM:
			/* The connection stays queued and the listener readable:
			 * stop watching it until descriptors may have come back. */
			ev_io_stop(g->loop, g->io);
			ev_timer_stop(g->loop, &g->resume);
			ev_timer_set(&g->resume, MRCD_ACCEPT_PAUSE_S, 0);
			ev_timer_start(g->loop, &g->resume);
			g->paused++;
			guard_log(g, err, 1);
			return -1;
		default:
			guard_log(g, err, 0);
			return -1;
		}
	}
}

static void on_listen(struct ev_loop *loop, ev_io *w, int revents)
{
	struct mrcd_clisock *s = w->data;
	(void)loop;
	(void)revents;
	for (int i = 0; i < 64; i++) {
		int fd = mrcd_accept(&s->guard, s->fd);
		if (fd < 0)
			return;
		struct ucred cr = { .pid = 0, .uid = (uid_t)-1, .gid = (gid_t)-1 };
		int ok = peer_allowed(s, fd, &cr);
		s->fn(s->ctx, fd, ok, cr.uid, cr.pid);
	}
}

static int resolve_group(const char *name, gid_t *gid)
{
	char *end;
	unsigned long v = strtoul(name, &end, 10);
	if (*name && !*end) {
		*gid = (gid_t)v;
		return 0;
	}
	struct group *g = getgrnam(name);
	if (!g)
		return -ENOENT;
	*gid = g->gr_gid;
	return 0;
}

/* A socket file with nobody behind it is left over from a crash. */
static int stale(const struct sockaddr_un *sa)
{
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	int r = connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) < 0 && errno == ECONNREFUSED;
	close(fd);
	return r;
}

int mrcd_clisock_open(struct mrcd *d, const char *path, unsigned mode, const char *group,
		      mrcd_cli_conn_fn fn, void *ctx, struct mrcd_clisock **out,
		      char *err, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "control socket path too long: %s", path);
		return -ENAMETOOLONG;
	}
	strcpy(sa.sun_path, path);
	struct mrcd_clisock *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->d = d;
	s->fn = fn;
	s->ctx = ctx;
	strcpy(s->path, path);
	int rc = 0;
	if (group && *group) {
		if (resolve_group(group, &s->gid)) {
			snprintf(err, errlen, "socket_group '%s': no such group", group);
			free(s);
			return -ENOENT;
		}
		s->has_gid = 1;
	}
	s->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "control socket: %s", strerror(errno));
		free(s);
		return rc;
	}
	/* Create the directory (/run/mrcd) if needed; its parent must exist. */
	char dir[sizeof(sa.sun_path)];
	strcpy(dir, path);
	char *slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = 0;
		if (mkdir(dir, 0755) < 0 && errno != EEXIST)
			mrcd_log(MRCD_LOG_WARNING, "mkdir %s: %s", dir, strerror(errno));
	}
	int b = bind(s->fd, (struct sockaddr *)&sa, sizeof(sa));
	if (b < 0 && errno == EADDRINUSE && stale(&sa)) {
		unlink(path);
		b = bind(s->fd, (struct sockaddr *)&sa, sizeof(sa));
	}
	if (b < 0) {
		rc = -errno;
		snprintf(err, errlen, "control socket %s: %s%s", path, strerror(errno),
			 errno == EADDRINUSE ? " (another mrcd is running on it)" : "");
		goto fail;
	}
	if (chmod(path, mode) < 0 || (s->has_gid && chown(path, (uid_t)-1, s->gid) < 0)) {
		rc = -errno;
		snprintf(err, errlen, "control socket %s: chmod/chown: %s", path, strerror(errno));
		unlink(path);
		goto fail;
	}
	if (listen(s->fd, 64) < 0) {
		rc = -errno;
		snprintf(err, errlen, "control socket %s: listen: %s", path, strerror(errno));
		unlink(path);
		goto fail;
	}
	ev_io_init(&s->io, on_listen, s->fd, EV_READ);
	s->io.data = s;
	mrcd_accept_guard_init(&s->guard, mrcd_loop(d), &s->io, "control socket");
	ev_io_start(mrcd_loop(d), &s->io);
	*out = s;
	return 0;
fail:
	close(s->fd);
	free(s);
	return rc;
}

uint64_t mrcd_clisock_paused(const struct mrcd_clisock *s)
{
	return s ? s->guard.paused : 0;
}

void mrcd_clisock_close(struct mrcd_clisock *s)
{
	if (!s)
		return;
	ev_io_stop(mrcd_loop(s->d), &s->io);
	mrcd_accept_guard_stop(&s->guard);
	close(s->fd);
	unlink(s->path);
	free(s);
}

ssize_t mrcd_cli_recv(int fd, void *buf, size_t cap, int *fds, unsigned *nfd)
{
	return mrc__fdpass_recv(fd, buf, cap, fds, MRC_CLI_MAX_FDS, nfd, MSG_DONTWAIT);
}

int mrcd_cli_send(int fd, const void *buf, size_t len, const int *fds, unsigned nfd)
{
	if (nfd > MRC_CLI_MAX_FDS)
		return -EINVAL;
	return mrc__fdpass_send(fd, buf, len, fds, nfd, MSG_DONTWAIT);
}

/* mrcd's client control socket: the listening Unix socket (path, mode,
 * group), peer credential checks, and message I/O with SCM_RIGHTS. */
#ifndef MRC_DAEMON_CLISOCK_H
#define MRC_DAEMON_CLISOCK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "daemon/core/mrcd.h"

struct mrcd_clisock;

/* A new connection: fd (non-blocking, close-on-exec) now belongs to the
 * callee.  allowed is 0 when the peer is neither root, the daemon's own
 * user, nor a member of the configured group (uid/pid for the log). */
typedef void (*mrcd_cli_conn_fn)(void *ctx, int fd, int allowed, uid_t uid, pid_t pid);

/* Whether the peer of a connected Unix socket has gid among its groups
 * (SO_PEERGROUPS: the supplementary groups the kernel recorded at
 * connect(), Linux >= 4.13), or as its primary group pgid.  No NSS lookup:
 * the daemon resolves group names once, at start. */
int mrcd_peer_in_group(int fd, gid_t pgid, gid_t gid);

/* accept() on a listening socket without spinning when the process is out
 * of descriptors: the listener is level-triggered, so a pending connection
 * that cannot be accepted (EMFILE, ENFILE, ENOBUFS, ENOMEM) would wake the
 * loop again at once.  The guard stops the listener's watcher and restarts
 * it after MRCD_ACCEPT_PAUSE_S, and logs at most one line a second with
 * the number of failures since the last line. */
#define MRCD_ACCEPT_PAUSE_S 0.1
struct mrcd_accept_guard {
	struct ev_loop *loop;
	ev_io *io;                 /* the listener's watcher */
	ev_timer resume;
	const char *what;          /* "control socket", "operator socket", ... */
	uint64_t paused;           /* times accept was paused (stats) */
	uint64_t unlogged;         /* failures since the last line */
	uint64_t last_log_ns;
};
void mrcd_accept_guard_init(struct mrcd_accept_guard *g, struct ev_loop *loop, ev_io *io,
			    const char *what);
void mrcd_accept_guard_stop(struct mrcd_accept_guard *g);
/* accept4(fd, NON_BLOCK | CLOEXEC): the new fd, or -1 when the caller
 * should return from its callback (nothing pending, or paused). */
int mrcd_accept(struct mrcd_accept_guard *g, int fd);

/* Creates the socket at path (a stale socket file is replaced; a live
 * daemon on it is -EADDRINUSE), chmod mode, chgrp group ("" : keep). */
int mrcd_clisock_open(struct mrcd *d, const char *path, unsigned mode, const char *group,
		      mrcd_cli_conn_fn fn, void *ctx, struct mrcd_clisock **out,
		      char *err, size_t errlen);
/* Times accept was paused at the descriptor limit. */
uint64_t mrcd_clisock_paused(const struct mrcd_clisock *s);
/* Stops listening and unlinks the socket file. */
void mrcd_clisock_close(struct mrcd_clisock *s);

/* One message and up to MRC_CLI_MAX_FDS fds (received close-on-exec;
 * *nfd of them, which the caller owns).  0 at EOF, -EAGAIN when nothing
 * is queued, -EBADMSG for a truncated message or fd list. */
ssize_t mrcd_cli_recv(int fd, void *buf, size_t cap, int *fds, unsigned *nfd);
/* Sends one message with nfd fds; never blocks (-EAGAIN: the client does
 * not read its replies). */
int mrcd_cli_send(int fd, const void *buf, size_t len, const int *fds, unsigned nfd);

#endif

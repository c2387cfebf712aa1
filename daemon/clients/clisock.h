/* mrcd's client control socket: the listening Unix socket (path, mode,
 * group), peer credential checks, and message I/O with SCM_RIGHTS. */
#ifndef MRC_DAEMON_CLISOCK_H
#define MRC_DAEMON_CLISOCK_H

#include <stddef.h>
#include <sys/types.h>

#include "daemon/core/mrcd.h"

struct mrcd_clisock;

/* A new connection: fd (non-blocking, close-on-exec) now belongs to the
 * callee.  allowed is 0 when the peer is neither root, the daemon's own
 * user, nor a member of the configured group (uid/pid for the log). */
typedef void (*mrcd_cli_conn_fn)(void *ctx, int fd, int allowed, uid_t uid, pid_t pid);

/* Creates the socket at path (a stale socket file is replaced; a live
 * daemon on it is -EADDRINUSE), chmod mode, chgrp group ("" : keep). */
int mrcd_clisock_open(struct mrcd *d, const char *path, unsigned mode, const char *group,
		      mrcd_cli_conn_fn fn, void *ctx, struct mrcd_clisock **out,
		      char *err, size_t errlen);
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

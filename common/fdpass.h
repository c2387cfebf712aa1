/* One datagram plus file descriptors (SCM_RIGHTS) over a Unix socket: the
 * send and receive halves mrcd's control socket and libmrc both use.
 * Internal (mrc__): compiled into libmrc and mrcd, exported by neither. */
#ifndef MRC_COMMON_FDPASS_H
#define MRC_COMMON_FDPASS_H

#include <stddef.h>
#include <sys/types.h>

#define MRC__FDPASS_MAX 16u        /* fds one call takes at the most */

/* Receives one message and up to max fds (close-on-exec; *nfd of them,
 * which the caller owns, also on error).  Every fd that arrived is taken,
 * whatever else is wrong, so none leaks: those beyond max are closed.
 * flags go to recvmsg (e.g. MSG_DONTWAIT); EINTR is retried.  Returns the
 * length (0 at EOF), -errno, or -EBADMSG for a truncated message or fd
 * list; -EINVAL when max > MRC__FDPASS_MAX. */
ssize_t mrc__fdpass_recv(int sock, void *buf, size_t cap, int *fds, unsigned max,
			 unsigned *nfd, int flags);
/* Sends one message with nfd fds (0: none); flags go to sendmsg with
 * MSG_NOSIGNAL; EINTR is retried.  0, -errno, -EIO for a short send,
 * -EINVAL when nfd > MRC__FDPASS_MAX. */
int mrc__fdpass_send(int sock, const void *buf, size_t len, const int *fds, unsigned nfd,
		     int flags);

#endif

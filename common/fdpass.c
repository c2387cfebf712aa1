/* SCM_RIGHTS message passing; see fdpass.h. */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/fdpass.h"

ssize_t mrc__fdpass_recv(int sock, void *buf, size_t cap, int *fds, unsigned max,
			 unsigned *nfd, int flags)
{
	struct iovec iov = { .iov_base = buf, .iov_len = cap };
	union { char b[CMSG_SPACE(MRC__FDPASS_MAX * sizeof(int))]; struct cmsghdr align; } cb;
	/* Room for max fds only, so the kernel reports more as MSG_CTRUNC. */
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = cb.b, .msg_controllen = CMSG_SPACE(max * sizeof(int)) };
	*nfd = 0;
	if (max > MRC__FDPASS_MAX)
		return -EINVAL;
	ssize_t n;
	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | flags);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int f;
			memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (*nfd < max)
				fds[(*nfd)++] = f;
			else
				close(f);
		}
	}
	if (n > 0 && (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)))
		return -EBADMSG;
	return n;
}

int mrc__fdpass_send(int sock, const void *buf, size_t len, const int *fds, unsigned nfd,
		     int flags)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	union { char b[CMSG_SPACE(MRC__FDPASS_MAX * sizeof(int))]; struct cmsghdr align; } cb;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	if (nfd) {
		if (nfd > MRC__FDPASS_MAX)
			return -EINVAL;
		memset(&cb, 0, sizeof(cb));
		mh.msg_control = cb.b;
		mh.msg_controllen = CMSG_SPACE(nfd * sizeof(int));
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(nfd * sizeof(int));
		memcpy(CMSG_DATA(c), fds, nfd * sizeof(int));
	}
	ssize_t n;
	do
		n = sendmsg(sock, &mh, MSG_NOSIGNAL | flags);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return n == (ssize_t)len ? 0 : -EIO;
}

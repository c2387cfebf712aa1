/* What the queues (fi/cq.c, fi/eq.c, fi/cntr.c) share: their eventfd
 * wait objects, the clock, the ops every fid lacks. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "fi/mrcfi.h"

int mrcfi_no_tostr(const struct fid *fid, char *buf, size_t len)
{
	return -FI_ENOSYS;
}

int mrcfi_no_ops_set(struct fid *fid, const char *name, uint64_t flags, void *ops, void *ctx)
{
	return -FI_ENOSYS;
}

void mrcfi_efd_ring(int fd)
{
	uint64_t one = 1;
	(void)!write(fd, &one, sizeof(one));
}

void mrcfi_efd_drain(int fd)
{
	uint64_t v;
	(void)!read(fd, &v, sizeof(v));
}

/* Waits on fd up to timeout_ms (< 0: forever) or the deadline. */
int mrcfi_efd_wait(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int r = poll(&p, 1, timeout_ms);
	return r < 0 ? -errno : r;
}

int64_t mrcfi_now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

uint64_t mrcfi_now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

const char *mrcfi_strerror(int prov_errno, char *buf, size_t len)
{
	const char *s = mrc_strerror(-prov_errno);
	if (buf && len)
		snprintf(buf, len, "%s", s);
	return buf && len ? buf : s;
}

int mrcfi_getwait(int efd, int command, void *arg)
{
	if (command != FI_GETWAIT)
		return -FI_ENOSYS;
	if (efd < 0)
		return -FI_ENODATA;
	*(int *)arg = efd;
	return 0;
}

/* One sleep of an sread: on efd until end (timeout < 0: no end).  0:
 * woken (the eventfd drained), -FI_EAGAIN: past the end, else -errno. */
int mrcfi_efd_sleep(int efd, int64_t end, int timeout)
{
	int left = -1;
	if (timeout >= 0) {
		int64_t l = end - mrcfi_now_ms();
		if (l <= 0)
			return -FI_EAGAIN;
		left = (int)l;
	}
	int w = mrcfi_efd_wait(efd, left);
	if (w < 0 && w != -EINTR)
		return w;
	mrcfi_efd_drain(efd);
	return 0;
}

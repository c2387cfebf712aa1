/* mrc-nccl-harness: the rendezvous between the ranks over a Unix socket
 * (harness.h), as NCCL's bootstrap relays the listen handles. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "tools/nccl-harness/harness.h"

static int rfd[MAXR];                  /* rank 0: to each rank; others: rfd[0] */

static void xfer(int fd, void *buf, size_t len, int wr)
{
	uint8_t *p = buf;
	while (len) {
		ssize_t n = wr ? send(fd, p, len, MSG_NOSIGNAL) : recv(fd, p, len, 0);
		if (n <= 0)
			nh_die("rendezvous %s: %s", wr ? "send" : "recv", n ? strerror(errno) : "closed");
		p += n;
		len -= (size_t)n;
	}
}

void nh_rdv_init(void)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", nh_rdv);
	if (nh_rank == 0) {
		int l = socket(AF_UNIX, SOCK_STREAM, 0);
		unlink(nh_rdv);
		if (l < 0 || bind(l, (void *)&a, sizeof(a)) || listen(l, MAXR))
			nh_die("rendezvous %s: %s", nh_rdv, strerror(errno));
		for (int i = 1; i < nh_nranks; i++) {
			struct pollfd p = { .fd = l, .events = POLLIN };
			if (poll(&p, 1, 60000) != 1)
				nh_die("rendezvous: only %d of %d ranks came", i, nh_nranks);
			int fd = accept(l, NULL, NULL), r = -1;
			if (fd < 0)
				nh_die("accept: %s", strerror(errno));
			xfer(fd, &r, sizeof(r), 0);
			if (r <= 0 || r >= nh_nranks || rfd[r])
				nh_die("rendezvous: bad rank %d", r);
			rfd[r] = fd;
		}
		close(l);
		unlink(nh_rdv);
		return;
	}
	int64_t end = ndrv_now_us() + 60 * 1000000ll;
	for (;;) {
		int fd = socket(AF_UNIX, SOCK_STREAM, 0);
		if (fd >= 0 && connect(fd, (void *)&a, sizeof(a)) == 0) {
			rfd[0] = fd;
			break;
		}
		close(fd);
		if (ndrv_now_us() > end)
			nh_die("rendezvous %s: rank 0 not there", nh_rdv);
		poll(NULL, 0, 20);      /* retry until rank 0 has bound */
	}
	xfer(rfd[0], &nh_rank, sizeof(nh_rank), 1);
}

void nh_allgather(const void *mine, void *all, size_t len)
{
	memcpy((uint8_t *)all + (size_t)nh_rank * len, mine, len);
	if (nh_rank) {
		xfer(rfd[0], (void *)mine, len, 1);
		xfer(rfd[0], all, len * (size_t)nh_nranks, 0);
		return;
	}
	for (int r = 1; r < nh_nranks; r++)
		xfer(rfd[r], (uint8_t *)all + (size_t)r * len, len, 0);
	for (int r = 1; r < nh_nranks; r++)
		xfer(rfd[r], all, len * (size_t)nh_nranks, 1);
}

void nh_barrier(void)
{
	uint8_t x = 1, all[MAXR];
	nh_allgather(&x, all, 1);
}

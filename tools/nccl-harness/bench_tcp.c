/* mrc-nccl-harness -T: the benchmark over loopback TCP; -M: the cost of
 * one bounce copy (harness.h). */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tools/nccl-harness/harness.h"

/* TCP transport: one loopback connection with TCP_NODELAY, what NCCL's
 * socket transport uses on one host; a send completes once written (as
 * there), a receive once all its bytes were read. */
static int tfd = -1;
static uint8_t *tbuf;
static size_t tq[2 * WIN], tgot;        /* posted receive sizes, bytes of the head */
static unsigned tq_head, tq_tail, tsent;
static int t_send(size_t sz, int slot)
{
	(void)slot;
	static uint8_t *src;
	if (!src && !(src = calloc(1, 4 << 20)))
		nh_die("out of memory");
	for (size_t off = 0; off < sz;) {
		ssize_t n = send(tfd, src + off, sz - off, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			nh_die("tcp send: %s", strerror(errno));
		off += (size_t)n;
	}
	tsent++;
	return 1;
}
static int t_recv(size_t sz, int slot)
{
	(void)slot;
	if (tq_tail - tq_head == 2 * WIN)
		return 0;
	tq[tq_tail++ % (2 * WIN)] = sz;
	return 1;
}
static int t_poll(int *sends, int *recvs)
{
	*sends = (int)tsent;
	tsent = 0;
	*recvs = 0;
	while (tq_head != tq_tail) {
		size_t want = tq[tq_head % (2 * WIN)];
		if (tgot < want) {
			ssize_t n = recv(tfd, tbuf, want - tgot, MSG_DONTWAIT);
			if (n < 0 && (errno == EAGAIN || errno == EINTR))
				break;
			if (n <= 0)
				nh_die("tcp recv: %s", n ? strerror(errno) : "closed");
			tgot += (size_t)n;
		}
		if (tgot < want)
			break;
		tgot = 0;
		tq_head++;
		(*recvs)++;
	}
	if (!*sends && !*recvs)
		sched_yield();
	return 0;
}

void nh_bench_tcp(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	uint16_t port = 0, ports[MAXR];
	int l = -1;
	if (!(tbuf = malloc(4 << 20)))
		nh_die("out of memory");
	if (nh_rank == 1) {
		l = socket(AF_INET, SOCK_STREAM, 0);
		if (l < 0 || bind(l, (void *)&a, sizeof(a)) || listen(l, 1) ||
		    getsockname(l, (void *)&a, &al))
			nh_die("tcp listen: %s", strerror(errno));
		port = a.sin_port;
	}
	nh_allgather(&port, ports, sizeof(port));
	if (nh_rank == 1) {
		tfd = accept(l, NULL, NULL);
		close(l);
	} else {
		a.sin_port = ports[1];
		tfd = socket(AF_INET, SOCK_STREAM, 0);
		if (tfd >= 0 && connect(tfd, (void *)&a, sizeof(a)))
			nh_die("tcp connect: %s", strerror(errno));
	}
	int one = 1;
	if (tfd < 0 || setsockopt(tfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)))
		nh_die("tcp: %s", strerror(errno));
	struct nh_bt t = { t_send, t_recv, t_poll };
	nh_run_bench(&t, "tcp");
	nh_barrier();
	close(tfd);
}

/* One bounce copy (the plugin makes one on each side of a message), with
 * the source and target of the size NCCL's buffers have. */
void nh_copy_cost(void)
{
	printf("| size | one copy us | copy GB/s |\n|---|---|---|\n");
	for (size_t b = 0; b < NBS; b++) {
		size_t sz = nh_bsizes[b];
		uint8_t *src = malloc(sz * WIN), *dst = malloc(sz * WIN);
		memset(src, 1, sz * WIN);
		memset(dst, 0, sz * WIN);
		uint64_t n = (512u << 20) / sz;
		if (n > 200000)
			n = 200000;
		double t[5];
		for (int rep = 0; rep < 5; rep++) {
			int64_t t0 = ndrv_now_us();
			for (uint64_t i = 0; i < n; i++)
				memcpy(dst + (i % WIN) * sz, src + (i % WIN) * sz, sz);
			t[rep] = (double)(ndrv_now_us() - t0) / (double)n;
		}
		qsort(t, 5, sizeof(double), nh_cmpd);
		printf("| %zu | %.3f | %.2f |\n", sz, t[2], (double)sz / t[2] / 1e3);
		if (dst[sz - 1] != 1)
			nh_die("copy");
		free(src);
		free(dst);
	}
}

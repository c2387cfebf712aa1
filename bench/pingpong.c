/* pingpong: the TCP and UDP peers of mrc-xfer --pingpong for the latency
 * benchmark (bench/fabric/latency.sh).  The client sends a message of
 * BYTES, the server echoes it, N times; the client prints one JSON line with
 * the same keys as mrc-xfer (rtt_us_min, rtt_us_p50, rtt_us_p99,
 * msgs_per_s).  IPv6 only.  A lost UDP datagram (no echo within 1 s) is
 * counted and sent again, so the run always ends.
 *
 *   pingpong -s [-u] [-p PORT] [-n N] [-b BYTES]        server (N exchanges)
 *   pingpong -c ADDR [-u] [-p PORT] [-n N] [-b BYTES]   client
 *   -P SRV6ADDR (both ends): UDP over the fabric's SRv6 uSID path that
 *   SRV6ADDR names, the same forwarding as mrc's packets (latency.sh's
 *   udp-srv6 contender), so mrc's own cost can be told from the fabric's.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#ifndef UDP_NO_CHECK6_TX
#define UDP_NO_CHECK6_TX 101   /* linux/udp.h */
#define UDP_NO_CHECK6_RX 102
#endif

#define MAXMSG 65536

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void die(const char *what)
{
	fprintf(stderr, "pingpong: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* Reads exactly n bytes from a stream socket. */
static void read_all(int fd, char *b, size_t n)
{
	while (n) {
		ssize_t r = read(fd, b, n);
		if (r <= 0)
			die(r ? "read" : "read: peer closed");
		b += r;
		n -= (size_t)r;
	}
}

static void write_all(int fd, const char *b, size_t n)
{
	while (n) {
		ssize_t r = write(fd, b, n);
		if (r <= 0)
			die("write");
		b += r;
		n -= (size_t)r;
	}
}

int main(int argc, char **argv)
{
	int server = 0, udp = 0, ch;
	const char *peer = NULL, *path = NULL;
	unsigned port = 7000;
	uint64_t iters = 10000;
	size_t size = 64;
	while ((ch = getopt(argc, argv, "sc:up:n:b:P:")) != -1) {
		switch (ch) {
		case 's': server = 1; break;
		case 'c': peer = optarg; break;
		case 'u': udp = 1; break;
		case 'p': port = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'n': iters = strtoull(optarg, NULL, 0); break;
		case 'b': size = strtoul(optarg, NULL, 0); break;
		case 'P': path = optarg; udp = 1; break;
		default: goto usage;
		}
	}
	if ((server ? peer != NULL : !(peer || path)) || !iters || !size || size > MAXMSG || port > 65535) {
usage:
		fprintf(stderr, "usage: pingpong -s|-c ADDR [-u] [-p PORT] [-n N] [-b BYTES] [-P SRV6ADDR]\n"
			"  -P: UDP over an SRv6 uSID path: send to SRV6ADDR (the server\n"
			"      replies to its own -P address), zero UDP checksums as mrc\n");
		return 2;
	}
	static char buf[MAXMSG];
	memset(buf, 0x5a, sizeof(buf));
	struct sockaddr_in6 sa = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port) };
	if (peer && inet_pton(AF_INET6, peer, &sa.sin6_addr) != 1) {
		fprintf(stderr, "pingpong: '%s' is not an IPv6 address\n", peer);
		return 2;
	}
	/* The uSID destination changes hop by hop, so the UDP checksum cannot
	 * hold (mrc sends zero checksums for the same reason); the reply comes
	 * from the host's own address, not the path's, so the client does not
	 * connect. */
	struct sockaddr_in6 via = sa;
	if (path && inet_pton(AF_INET6, path, &via.sin6_addr) != 1) {
		fprintf(stderr, "pingpong: '%s' is not an IPv6 address\n", path);
		return 2;
	}
	int fd = socket(AF_INET6, udp ? SOCK_DGRAM : SOCK_STREAM, 0), one = 1;
	if (fd < 0)
		die("socket");
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (path) {
		setsockopt(fd, IPPROTO_UDP, UDP_NO_CHECK6_TX, &one, sizeof(one));
		setsockopt(fd, IPPROTO_UDP, UDP_NO_CHECK6_RX, &one, sizeof(one));
	}
	if (server) {
		sa.sin6_addr = in6addr_any;
		if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)))
			die("bind");
		if (!udp) {
			if (listen(fd, 1))
				die("listen");
			int c = accept(fd, NULL, NULL);
			if (c < 0)
				die("accept");
			close(fd);
			fd = c;
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
			for (uint64_t i = 0; i < iters; i++) {
				read_all(fd, buf, size);
				write_all(fd, buf, size);
			}
			close(fd);
			return 0;
		}
		/* UDP: echo until the client's final zero-length datagram. */
		for (;;) {
			struct sockaddr_in6 from;
			socklen_t fl = sizeof(from);
			ssize_t r = recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl);
			if (r < 0)
				die("recvfrom");
			if (r == 0)
				break;
			if (path) {
				via.sin6_port = from.sin6_port;
				from = via;
			}
			if (sendto(fd, buf, (size_t)r, 0, (struct sockaddr *)&from, fl) < 0)
				die("sendto");
		}
		close(fd);
		return 0;
	}
	/* client: the server may still be starting; retry the connect 2 s. */
	for (int tries = 0; !path; tries++) {
		if (!connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
			break;
		if (tries == 200)
			die("connect");
		close(fd);
		usleep(10000);
		fd = socket(AF_INET6, udp ? SOCK_DGRAM : SOCK_STREAM, 0);
		if (fd < 0)
			die("socket");
	}
	if (udp) {
		struct timeval tv = { .tv_sec = 1 };
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	} else {
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	}
	uint64_t *rtt = calloc(iters, sizeof(*rtt)), lost = 0;
	if (!rtt)
		die("calloc");
	uint64_t t0 = now_ns();
	for (uint64_t i = 0; i < iters; i++) {
		uint64_t t = now_ns();
		if (udp) {
			for (;;) {
				if (sendto(fd, buf, size, 0, path ? (struct sockaddr *)&via : NULL,
					   path ? sizeof(via) : 0) < 0)
					die("send");
				ssize_t r = recv(fd, buf, sizeof(buf), 0);
				if (r == (ssize_t)size)
					break;
				if (r < 0 && errno != EAGAIN && errno != ECONNREFUSED)
					die("recv");
				lost++;
				if (lost > 1000) {
					fprintf(stderr, "pingpong: over 1000 datagrams lost\n");
					return 1;
				}
			}
		} else {
			write_all(fd, buf, size);
			read_all(fd, buf, size);
		}
		rtt[i] = now_ns() - t;
	}
	double total = (double)(now_ns() - t0) / 1e9;
	if (udp && sendto(fd, buf, 0, 0, path ? (struct sockaddr *)&via : NULL,
			  path ? sizeof(via) : 0) < 0)
		die("send");
	qsort(rtt, iters, sizeof(*rtt), cmp64);
	printf("{\"role\":\"client\",\"proto\":\"%s\",\"pingpong\":%llu,\"size\":%zu,"
	       "\"rtt_us_min\":%.1f,\"rtt_us_p50\":%.1f,\"rtt_us_p99\":%.1f,\"msgs_per_s\":%.0f,"
	       "\"lost\":%llu}\n",
	       udp ? "udp" : "tcp", (unsigned long long)iters, size, rtt[0] / 1e3,
	       rtt[iters / 2] / 1e3, rtt[iters * 99 / 100] / 1e3, 2.0 * (double)iters / total,
	       (unsigned long long)lost);
	free(rtt);
	close(fd);
	return 0;
}

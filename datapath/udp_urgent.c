/* The udp provider's urgent receive queue (udp.h, mrc_dp_cfg.urgent_dscp):
 * a plane's two sockets share its address and port in one SO_REUSEPORT
 * group, and a classic BPF program run by the kernel at socket lookup
 * puts each datagram in the socket its IPv6 traffic class names.  The
 * DSCP the sender already sets is all it reads: the wire does not change,
 * and a peer that knows nothing of it is steered the same way. */
#include <errno.h>
#include <linux/filter.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "datapath/udp.h"

#ifndef SO_ATTACH_REUSEPORT_CBPF
#define SO_ATTACH_REUSEPORT_CBPF 51   /* asm-generic/socket.h, kernel >= 4.5 */
#endif

/* The program returns the index in the group of the socket to deliver
 * to: 1 (the urgent socket, bound second) for the urgent DSCP, 0 (the
 * plane's first socket) for anything else.  The kernel runs it with the
 * data at the UDP payload, so the IPv6 header is read at SKF_NET_OFF: its
 * first 16 bits are version (4), traffic class (8: DSCP 6, ECN 2) and the
 * flow label's top 4. */
int mrc__dp_udp_steer(int fd, uint8_t dscp)
{
	struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_H | BPF_ABS, (uint32_t)SKF_NET_OFF),
		BPF_STMT(BPF_ALU | BPF_RSH | BPF_K, 6),
		BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0x3f),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, dscp & 0x3f, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, 1),
		BPF_STMT(BPF_RET | BPF_K, 0),
	};
	struct sock_fprog prog = { .len = sizeof(code) / sizeof(code[0]), .filter = code };
	if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &prog, sizeof(prog)))
		return -errno;
	return 0;
}

/* Whether the plane's address and port are free, as a socket without
 * SO_REUSEPORT sees them: the first socket of the group sets it before its
 * bind, which would otherwise join a group another socket of mrcd's uid
 * made (a second mrcd on the same port, a leaked socket) instead of
 * failing with EADDRINUSE as it did with one socket.  (The window between
 * this check and the bind is a race only with another process of mrcd's
 * uid.) */
int mrc__dp_udp_port_free(const struct mrc_dp_plane *p, uint16_t port)
{
	int fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0), one = 1, rc = 0;
	if (fd < 0)
		return -errno;
	struct sockaddr_in6 sa = { .sin6_family = AF_INET6, .sin6_port = htons(port), .sin6_addr = p->local };
	if (setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) ||
	    (p->ifname[0] && setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, p->ifname,
					(socklen_t)strlen(p->ifname))) ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)))
		rc = -errno;
	close(fd);
	return rc;
}

/* One descriptor for the loop that is readable when either socket is
 * (an epoll set is itself pollable), so the datapath's fd op and mrcd's
 * one watcher per plane stay as they are. */
int mrc__dp_udp_epoll(int fd, int ufd)
{
	int e = epoll_create1(EPOLL_CLOEXEC);
	if (e < 0)
		return -errno;
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };
	struct epoll_event uev = { .events = EPOLLIN, .data.fd = ufd };
	if (epoll_ctl(e, EPOLL_CTL_ADD, fd, &ev) || epoll_ctl(e, EPOLL_CTL_ADD, ufd, &uev)) {
		int rc = -errno;
		close(e);
		return rc;
	}
	return e;
}

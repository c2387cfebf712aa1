/* A plain UDP socket on loopback whose datagrams carry a given IPv6
 * traffic class, bound to a port (0: any); for the udp datapath's tests
 * (ECN marks, the urgent receive queue's DSCP).  Header only: cmocka
 * asserts in the caller. */
#ifndef MRC_TESTS_SUPPORT_TCLASS_SOCK_H
#define MRC_TESTS_SUPPORT_TCLASS_SOCK_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

static inline int tclass_sock(int tclass, uint16_t port)
{
	int fd = socket(AF_INET6, SOCK_DGRAM, 0);
	assert_true(fd >= 0);
	assert_int_equal(setsockopt(fd, IPPROTO_IPV6, IPV6_TCLASS, &tclass, sizeof(tclass)), 0);
	struct sockaddr_in6 sa = { .sin6_family = AF_INET6, .sin6_port = htons(port),
		.sin6_addr = IN6ADDR_LOOPBACK_INIT };
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

#endif

/* The af_xdp datapath's addresses: the plane NIC's MAC and its next hop's
 * (af_xdp.h).  AF_XDP bypasses the kernel's neighbour layer, so the
 * datapath asks the kernel's tables (libnl) for the one neighbour a plane
 * NIC has, its leaf, and prompts neighbour discovery the ordinary way (a
 * datagram through the kernel) when the kernel does not know it yet. */
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/neighbour.h>
#include <netlink/netlink.h>
#include <netlink/route/neighbour.h>
#include <netlink/route/route.h>

#include "datapath/af_xdp.h"

int mrc__xdp_nic_mac(const char *ifname, uint8_t mac[6])
{
	struct ifreq r;
	memset(&r, 0, sizeof(r));
	snprintf(r.ifr_name, sizeof(r.ifr_name), "%s", ifname);
	int fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int rc = ioctl(fd, SIOCGIFHWADDR, &r) ? -errno : 0;
	close(fd);
	if (!rc)
		memcpy(mac, r.ifr_hwaddr.sa_data, 6);
	return rc;
}

/* The IPv6 gateway of the first route through ifindex; 0 or -ENOENT. */
static int gateway_of(struct nl_sock *sk, int ifindex, struct in6_addr *gw)
{
	struct nl_cache *c;
	if (rtnl_route_alloc_cache(sk, AF_INET6, 0, &c))
		return -EIO;
	int rc = -ENOENT;
	for (struct nl_object *o = nl_cache_get_first(c); o && rc; o = nl_cache_get_next(o)) {
		struct rtnl_route *r = (struct rtnl_route *)o;
		for (int i = 0; i < rtnl_route_get_nnexthops(r) && rc; i++) {
			struct rtnl_nexthop *nh = rtnl_route_nexthop_n(r, i);
			struct nl_addr *g = rtnl_route_nh_get_gateway(nh);
			if (rtnl_route_nh_get_ifindex(nh) == ifindex && g &&
			    nl_addr_get_len(g) == sizeof(*gw)) {
				memcpy(gw, nl_addr_get_binary_addr(g), sizeof(*gw));
				rc = 0;
			}
		}
	}
	nl_cache_free(c);
	return rc;
}

static int usable(struct rtnl_neigh *n, int ifindex, uint8_t mac[6])
{
	struct nl_addr *ll = rtnl_neigh_get_lladdr(n);
	if (rtnl_neigh_get_ifindex(n) != ifindex || rtnl_neigh_get_family(n) != AF_INET6 ||
	    !(rtnl_neigh_get_state(n) & (NUD_REACHABLE | NUD_STALE | NUD_DELAY | NUD_PROBE |
					  NUD_PERMANENT | NUD_NOARP)) ||
	    !ll || nl_addr_get_len(ll) != 6)
		return 0;
	memcpy(mac, nl_addr_get_binary_addr(ll), 6);
	return 1;
}

/* The neighbour entry of gw (have_gw) or any router on ifindex. */
static int lookup(struct nl_sock *sk, int ifindex, const struct in6_addr *gw, int have_gw,
		  uint8_t mac[6])
{
	struct nl_cache *c;
	if (rtnl_neigh_alloc_cache(sk, &c))
		return -EIO;
	int rc = -EHOSTUNREACH;
	for (struct nl_object *o = nl_cache_get_first(c); o && rc; o = nl_cache_get_next(o)) {
		struct rtnl_neigh *n = (struct rtnl_neigh *)o;
		struct nl_addr *d = rtnl_neigh_get_dst(n);
		int match = have_gw ? d && nl_addr_get_len(d) == sizeof(*gw) &&
					      !memcmp(nl_addr_get_binary_addr(d), gw, sizeof(*gw))
				    : (rtnl_neigh_get_flags(n) & NTF_ROUTER) != 0;
		if (match && usable(n, ifindex, mac))
			rc = 0;
	}
	nl_cache_free(c);
	return rc;
}

/* A datagram to the gateway's discard port through the kernel: the kernel
 * resolves the neighbour to send it. */
static void prompt(int ifindex, const struct in6_addr *gw)
{
	int fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return;
	struct sockaddr_in6 to = { .sin6_family = AF_INET6, .sin6_port = htons(9),
		.sin6_addr = *gw, .sin6_scope_id = (uint32_t)ifindex };
	char ifn[IF_NAMESIZE];
	if (if_indextoname((unsigned)ifindex, ifn))
		(void)setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, ifn, (socklen_t)strlen(ifn));
	(void)sendto(fd, "", 0, 0, (struct sockaddr *)&to, sizeof(to));
	close(fd);
}

int mrc__xdp_nexthop_mac(int ifindex, uint8_t mac[6], int wait_ms)
{
	struct nl_sock *sk = nl_socket_alloc();
	if (!sk)
		return -ENOMEM;
	int rc = nl_connect(sk, NETLINK_ROUTE) ? -EIO : 0;
	struct in6_addr gw = IN6ADDR_ANY_INIT;
	int have_gw = !rc && !gateway_of(sk, ifindex, &gw);
	if (!rc)
		rc = lookup(sk, ifindex, &gw, have_gw, mac);
	/* ND answers in well under a millisecond on a link; poll in 5 ms
	 * steps up to the caller's bound. */
	for (int waited = 0; rc == -EHOSTUNREACH && have_gw && waited < wait_ms; waited += 5) {
		if (waited % 500 == 0)
			prompt(ifindex, &gw);
		poll(NULL, 0, 5);
		rc = lookup(sk, ifindex, &gw, have_gw, mac);
	}
	if (rc == -EHOSTUNREACH && have_gw && !wait_ms)
		prompt(ifindex, &gw);
	nl_socket_free(sk);
	return rc;
}

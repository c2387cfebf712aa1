/* A plane NIC's next hop MAC: see nexthop.h.  libnl-route reads the
 * tables; the kernel's own neighbour discovery resolves a missing entry. */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <netlink/netlink.h>
#include <netlink/route/neighbour.h>
#include <netlink/route/route.h>
#include <linux/neighbour.h>

#include "common/clock.h"
#include "datapath/nexthop.h"

struct gw_find {
	int ifindex;
	struct nl_addr *gw;       /* a reference, or NULL */
};

static void route_nh(struct rtnl_nexthop *nh, void *arg)
{
	struct gw_find *g = arg;
	struct nl_addr *a = rtnl_route_nh_get_gateway(nh);
	if (!g->gw && a && rtnl_route_nh_get_ifindex(nh) == g->ifindex)
		g->gw = nl_addr_clone(a);
}

static void route_cb(struct nl_object *obj, void *arg)
{
	struct rtnl_route *r = (struct rtnl_route *)obj;
	if (rtnl_route_get_family(r) == AF_INET6)
		rtnl_route_foreach_nexthop(r, route_nh, arg);
}

/* 0 and mac when the neighbour table has a usable entry for gw. */
static int neigh_lookup(struct nl_sock *sk, int ifindex, struct nl_addr *gw, uint8_t mac[6])
{
	struct nl_cache *nc = NULL;
	int rc = rtnl_neigh_alloc_cache(sk, &nc);
	if (rc < 0)
		return -EIO;
	rc = -ENOENT;
	struct rtnl_neigh *n = rtnl_neigh_get(nc, ifindex, gw);
	if (n) {
		struct nl_addr *ll = rtnl_neigh_get_lladdr(n);
		int st = rtnl_neigh_get_state(n);
		if (ll && nl_addr_get_len(ll) == 6 &&
		    !(st & (NUD_INCOMPLETE | NUD_FAILED | NUD_NOARP))) {
			memcpy(mac, nl_addr_get_binary_addr(ll), 6);
			rc = 0;
		}
		rtnl_neigh_put(n);
	}
	nl_cache_free(nc);
	return rc;
}

/* One datagram to gw's discard port: the kernel solicits its MAC. */
static void poke(const char *ifname, int ifindex, struct nl_addr *gw)
{
	int fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	struct sockaddr_in6 sa = { .sin6_family = AF_INET6, .sin6_port = htons(9),
		.sin6_scope_id = (uint32_t)ifindex };
	memcpy(&sa.sin6_addr, nl_addr_get_binary_addr(gw), 16);
	(void)setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, ifname, (socklen_t)strlen(ifname));
	(void)sendto(fd, "", 0, MSG_DONTWAIT, (struct sockaddr *)&sa, sizeof(sa));
	close(fd);
}

int mrc__dp_nexthop_mac(const char *ifname, unsigned timeout_ms, uint8_t mac[6],
		     char *why, size_t whylen)
{
	int ifindex = (int)if_nametoindex(ifname);
	if (!ifindex) {
		snprintf(why, whylen, "no NIC %s", ifname);
		return -ENODEV;
	}
	struct nl_sock *sk = nl_socket_alloc();
	if (!sk)
		return -ENOMEM;
	struct nl_cache *rc_cache = NULL;
	struct gw_find g = { .ifindex = ifindex };
	int rc = nl_connect(sk, NETLINK_ROUTE);
	if (!rc)
		rc = rtnl_route_alloc_cache(sk, AF_INET6, 0, &rc_cache);
	if (rc < 0) {
		snprintf(why, whylen, "%s: reading routes: %s", ifname, nl_geterror(rc));
		nl_socket_free(sk);
		return -EIO;
	}
	nl_cache_foreach(rc_cache, route_cb, &g);
	nl_cache_free(rc_cache);
	if (!g.gw || nl_addr_get_len(g.gw) != 16) {
		snprintf(why, whylen, "%s: no IPv6 route with a gateway through it: "
			 "name the next hop's MAC in datapath_args (dmacN=)", ifname);
		rc = -ENETUNREACH;
		goto out;
	}
	/* Poll the table for the kernel's answer (no sleep as synchronisation:
	 * a deadline), soliciting again every 200 ms. */
	uint64_t start = mrc__mono_ms(), last = 0;
	while ((rc = neigh_lookup(sk, ifindex, g.gw, mac)) == -ENOENT) {
		uint64_t t = mrc__mono_ms();
		if (t - start >= timeout_ms)
			break;
		if (!last || t - last >= 200) {
			poke(ifname, ifindex, g.gw);
			last = t;
		}
		struct timespec ts = { 0, 5000000 };
		nanosleep(&ts, NULL);
	}
	if (rc) {
		char a[INET6_ADDRSTRLEN];
		inet_ntop(AF_INET6, nl_addr_get_binary_addr(g.gw), a, sizeof(a));
		snprintf(why, whylen, "%s: next hop %s: %s", ifname, a,
			 rc == -ENOENT ? "no neighbour answer" : "reading neighbours failed");
		rc = rc == -ENOENT ? -ETIMEDOUT : rc;
	}
out:
	if (g.gw)
		nl_addr_put(g.gw);
	nl_socket_free(sk);
	return rc;
}

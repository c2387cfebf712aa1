/* rtnetlink programming for the SRv6 fabric: links (veth, ifb), addresses,
 * plain and multipath routes, local routes, seg6local End with the
 * NEXT-C-SID flavour and its counters, and the sysctls SRv6 needs.
 *
 * Built on libnl-3 / libnl-route-3.  libnl has no seg6local support, so
 * routes are built attribute by attribute with libnl's message API (and the
 * builders are public so tests can check each attribute without a kernel).
 *
 * IPv6 only: the fabric is an IPv6 fabric.  A struct mrc_nl is bound to the
 * network namespace it was opened in (mrc_nl_open_netns opens one inside
 * another namespace without moving the calling thread for longer than the
 * socket() call).  Not thread-safe; one socket per thread.
 *
 * Every function returns 0 or a negative errno: the kernel's own error for a
 * rejected request (-EEXIST, -ENODEV, -EINVAL, ...), with the kernel's
 * extended-ack text, when it sent one, in mrc_nl_errmsg().
 */
#ifndef MRC_SRV6_NL_H
#define MRC_SRV6_NL_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct nl_msg;
struct nl_sock;
struct nlmsghdr;
struct mrc_nl;

/* ---- socket ------------------------------------------------------------ */

int mrc_nl_open(struct mrc_nl **out);
/* Opens the socket inside the namespace netns_fd (an open /proc/PID/ns/net
 * or /run/netns/NAME), then returns the thread to its own namespace. */
int mrc_nl_open_netns(int netns_fd, struct mrc_nl **out);
void mrc_nl_close(struct mrc_nl *nl);
/* The kernel's extended-ack message for the last failed request, or "". */
const char *mrc_nl_errmsg(const struct mrc_nl *nl);
/* The underlying libnl socket, for requests this API lacks. */
struct nl_sock *mrc_nl_sock(struct mrc_nl *nl);

/* Moves the calling thread into netns_fd; *saved receives an fd of the
 * namespace it was in (pass it to mrc_nl_netns_leave, which closes it). */
int mrc_nl_netns_enter(int netns_fd, int *saved);
int mrc_nl_netns_leave(int saved);

/* ---- links ------------------------------------------------------------- */

/* -ENODEV if there is no such link; -EINVAL for a bad name. */
int mrc_nl_link_index(struct mrc_nl *nl, const char *name, int *ifindex);
/* A veth pair: `name` here, `peer` here too (peer_netns_fd < 0) or created
 * directly inside the namespace peer_netns_fd (saves a move). */
int mrc_nl_veth_add(struct mrc_nl *nl, const char *name, const char *peer,
		    int peer_netns_fd);
/* An ifb device: a non-loopback device to hang seg6local routes on
 * (seg6local on lo silently becomes a reject route; no dummy driver here). */
int mrc_nl_ifb_add(struct mrc_nl *nl, const char *name);
int mrc_nl_link_del(struct mrc_nl *nl, const char *name);
int mrc_nl_link_set_up(struct mrc_nl *nl, const char *name, bool up);
int mrc_nl_link_set_mtu(struct mrc_nl *nl, const char *name, unsigned mtu);
int mrc_nl_link_set_netns(struct mrc_nl *nl, const char *name, int netns_fd);

/* Message builders behind the calls above (caller nlmsg_free()s *out). */
int mrc_nl_build_veth_add(struct nl_msg **out, const char *name,
			  const char *peer, int peer_netns_fd);
int mrc_nl_build_ifb_add(struct nl_msg **out, const char *name);
/* Changes one link: up/down (up < 0: leave), mtu (0: leave), netns
 * (netns_fd < 0: leave).  ifindex > 0 or name selects the link. */
int mrc_nl_build_link_change(struct nl_msg **out, int ifindex, const char *name,
			     int up, unsigned mtu, int netns_fd);

/* ---- addresses --------------------------------------------------------- */

#define MRC_NL_ADDR_NODAD 0x1u     /* IFA_F_NODAD: usable at once */

int mrc_nl_addr_add(struct mrc_nl *nl, int ifindex, const struct in6_addr *a,
		    unsigned prefix_len, unsigned flags);
int mrc_nl_addr_del(struct mrc_nl *nl, int ifindex, const struct in6_addr *a,
		    unsigned prefix_len);
int mrc_nl_build_addr(struct nl_msg **out, int nlmsg_type, unsigned nlm_flags,
		      int ifindex, const struct in6_addr *a, unsigned prefix_len,
		      unsigned flags);

/* ---- routes ------------------------------------------------------------ */

#define MRC_NL_TABLE_MAIN 254u
#define MRC_NL_TABLE_LOCAL 255u
#define MRC_NL_MAX_NEXTHOPS 64

/* Request flags for the add calls. */
#define MRC_NL_REPLACE 0x1u        /* replace an existing route (else -EEXIST) */

struct mrc_nl_nexthop {
	int ifindex;               /* required */
	bool has_gw;
	struct in6_addr gw;
	uint16_t weight;           /* 1..256; 0 means 1 */
};

/* A plain route.  nnh == 1: one next hop; nnh > 1: a kernel ECMP route
 * (RTA_MULTIPATH).  type: RTN_UNICAST (0 means unicast), RTN_LOCAL,
 * RTN_BLACKHOLE, RTN_UNREACHABLE (these three with nnh 0 or 1). */
struct mrc_nl_route {
	struct in6_addr dst;
	uint8_t dst_len;
	uint8_t type;
	uint32_t table;            /* 0 means main; RTN_LOCAL defaults to local */
	uint32_t metric;           /* 0: kernel default */
	size_t nnh;
	struct mrc_nl_nexthop nh[MRC_NL_MAX_NEXTHOPS];
};

int mrc_nl_route_add(struct mrc_nl *nl, const struct mrc_nl_route *r,
		     unsigned flags);
/* Deletes the route dst/dst_len in table (0: main); -ESRCH if none. */
int mrc_nl_route_del(struct mrc_nl *nl, const struct in6_addr *dst,
		     unsigned dst_len, uint32_t table);
/* A host's own uSID prefix: `local` route in the local table via ifindex,
 * so packets whose last uSID is the host's are delivered to it. */
int mrc_nl_local_route_add(struct mrc_nl *nl, const struct in6_addr *dst,
			   unsigned dst_len, int ifindex);

/* seg6local route: `ip -6 route add SID/LEN encap seg6local action End
 * [flavors next-csid lblen L nflen N] [count] dev IF [table T]`. */
struct mrc_nl_seg6local {
	struct in6_addr sid;
	uint8_t sid_len;
	int ifindex;               /* required: not lo (see mrc_nl_ifb_add) */
	uint32_t table;            /* 0 means main */
	uint32_t action;           /* SEG6_LOCAL_ACTION_END (only one supported) */
	bool next_csid;            /* NEXT-C-SID flavour */
	uint8_t lblen;             /* locator block bits, e.g. 32 (next_csid) */
	uint8_t nflen;             /* node function bits, e.g. 16 (next_csid) */
	bool counters;             /* ask the kernel to count (SEG6_LOCAL_COUNTERS) */
};

struct mrc_nl_seg6local_counters {
	uint64_t packets;          /* processed correctly */
	uint64_t bytes;
	uint64_t errors;           /* dropped / failed */
};

/* A seg6local route as read back from the kernel. */
struct mrc_nl_seg6local_info {
	struct mrc_nl_seg6local route;
	bool has_counters;
	struct mrc_nl_seg6local_counters cnt;
};

/* Validates (action End only, lblen/nflen multiples of 8 with
 * lblen + nflen <= 128 when next_csid, sid_len <= 128, ifindex > 0) and adds. */
int mrc_nl_seg6local_add(struct mrc_nl *nl, const struct mrc_nl_seg6local *s,
			 unsigned flags);
/* Counters of the seg6local route sid/sid_len in table (0: main).
 * -ENOENT: no such seg6local route; -ENODATA: added without counters. */
int mrc_nl_seg6local_counters_get(struct mrc_nl *nl, const struct in6_addr *sid,
				  unsigned sid_len, uint32_t table,
				  struct mrc_nl_seg6local_counters *out);
/* Calls cb for every seg6local route of table (0: every table); a non-zero
 * return from cb stops the walk and is returned. */
typedef int (*mrc_nl_seg6local_cb)(const struct mrc_nl_seg6local_info *info,
				   void *arg);
int mrc_nl_seg6local_dump(struct mrc_nl *nl, uint32_t table,
			  mrc_nl_seg6local_cb cb, void *arg);

/* Builders and parser behind the route calls (no kernel needed). */
int mrc_nl_build_route(struct nl_msg **out, int nlmsg_type, unsigned nlm_flags,
		       const struct mrc_nl_route *r);
int mrc_nl_build_seg6local(struct nl_msg **out, int nlmsg_type,
			   unsigned nlm_flags, const struct mrc_nl_seg6local *s);
/* Parses an RTM_NEWROUTE message.  -ENOENT if it is not a seg6local route,
 * -EBADMSG if malformed. */
int mrc_nl_parse_seg6local(const struct nlmsghdr *nh,
			   struct mrc_nl_seg6local_info *out);

/* ---- sysctls (current namespace, via /proc/sys) ------------------------ */

/* key is relative to /proc/sys, e.g. "net/ipv6/conf/all/seg6_enabled";
 * only keys under net/ without ".." are accepted (-EINVAL). */
int mrc_nl_sysctl_set(const char *key, const char *value);
int mrc_nl_sysctl_get(const char *key, char *buf, size_t len);
/* Namespace-wide SRv6 settings, to apply before links exist so new links
 * inherit them from "default": accept_dad=0 (links are usable at once),
 * forwarding (switches), seg6_enabled (nodes that receive an SRH). */
int mrc_nl_sysctl_srv6_ns(bool forwarding, bool seg6_enabled);
/* Per-interface: accept_dad=0 and seg6_enabled. */
int mrc_nl_sysctl_srv6_if(const char *ifname, bool seg6_enabled);

#ifdef __cplusplus
}
#endif
#endif

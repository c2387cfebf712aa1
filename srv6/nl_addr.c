/* IPv6 addresses: RTM_NEWADDR / RTM_DELADDR built by hand (IFA_FLAGS is a
 * 32-bit attribute that libnl's rtnl_addr would also need to be told). */
#include <errno.h>
#include <string.h>

#include <linux/if_addr.h>
#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>

#include "srv6/nl.h"
#include "srv6/nl_internal.h"

int mrc_nl_build_addr(struct nl_msg **out, int nlmsg_type, unsigned nlm_flags,
		      int ifindex, const struct in6_addr *a, unsigned prefix_len,
		      unsigned flags)
{
	struct ifaddrmsg ifa = {
		.ifa_family = AF_INET6,
		.ifa_prefixlen = (uint8_t)prefix_len,
		.ifa_index = (uint32_t)ifindex,
	};
	uint32_t ifa_flags = 0;
	struct nl_msg *msg;

	if (!out || !a || ifindex <= 0 || prefix_len > 128 ||
	    (flags & ~MRC_NL_ADDR_NODAD) ||
	    (nlmsg_type != RTM_NEWADDR && nlmsg_type != RTM_DELADDR))
		return -EINVAL;
	if (flags & MRC_NL_ADDR_NODAD)
		ifa_flags |= IFA_F_NODAD;   /* no DAD: usable at once, never tentative */
	ifa.ifa_flags = (uint8_t)ifa_flags;
	msg = mrc__nl_msg(nlmsg_type, nlm_flags, &ifa, sizeof(ifa));
	if (!msg)
		return -ENOMEM;
	if (nla_put(msg, IFA_LOCAL, sizeof(*a), a) < 0 ||
	    nla_put(msg, IFA_ADDRESS, sizeof(*a), a) < 0 ||
	    (nlmsg_type == RTM_NEWADDR && nla_put_u32(msg, IFA_FLAGS, ifa_flags) < 0)) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	*out = msg;
	return 0;
}

static int addr_req(struct mrc_nl *nl, int type, unsigned nflags, int ifindex,
		    const struct in6_addr *a, unsigned plen, unsigned flags)
{
	struct nl_msg *msg = NULL;
	int rc = mrc_nl_build_addr(&msg, type, nflags, ifindex, a, plen, flags);

	if (rc)
		return rc;
	rc = mrc__nl_talk(nl, msg, NULL, NULL);
	nlmsg_free(msg);
	return rc;
}

int mrc_nl_addr_add(struct mrc_nl *nl, int ifindex, const struct in6_addr *a,
		    unsigned prefix_len, unsigned flags)
{
	return addr_req(nl, RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL, ifindex, a,
			prefix_len, flags);
}

int mrc_nl_addr_del(struct mrc_nl *nl, int ifindex, const struct in6_addr *a,
		    unsigned prefix_len)
{
	return addr_req(nl, RTM_DELADDR, 0, ifindex, a, prefix_len, 0);
}

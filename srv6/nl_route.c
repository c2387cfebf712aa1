/* IPv6 routes: plain, multipath (kernel ECMP) and local, built attribute by
 * attribute so they share one code path with the seg6local routes of
 * nl_seg6local.c. */
#include <errno.h>
#include <string.h>

#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>

#include "srv6/nl.h"
#include "srv6/nl_internal.h"

/* The rtmsg and the attributes every route message carries. */
struct nl_msg *mrc__nl_route_msg(int type, unsigned flags, const struct in6_addr *dst,
				 unsigned dst_len, uint32_t table, uint8_t rtn)
{
	bool del = type == RTM_DELROUTE;
	struct rtmsg rtm = {
		.rtm_family = AF_INET6,
		.rtm_dst_len = (uint8_t)dst_len,
		/* Tables above 255 only fit RTA_TABLE; it is always sent. */
		.rtm_table = table < 256 ? (uint8_t)table : RT_TABLE_UNSPEC,
		/* A delete matches on every non-zero field: leave them zero. */
		.rtm_protocol = del ? RTPROT_UNSPEC : RTPROT_STATIC,
		.rtm_scope = del ? RT_SCOPE_NOWHERE :
			     rtn == RTN_LOCAL ? RT_SCOPE_HOST : RT_SCOPE_UNIVERSE,
		.rtm_type = del ? RTN_UNSPEC : rtn,
	};
	struct nl_msg *msg = mrc__nl_msg(type, flags, &rtm, sizeof(rtm));

	if (!msg)
		return NULL;
	if (nla_put(msg, RTA_DST, sizeof(*dst), dst) < 0 ||
	    nla_put_u32(msg, RTA_TABLE, table) < 0) {
		nlmsg_free(msg);
		return NULL;
	}
	return msg;
}

static int put_multipath(struct nl_msg *msg, const struct mrc_nl_route *r)
{
	struct nlattr *mp = mrc__nl_nla_nest(msg, RTA_MULTIPATH);

	if (!mp)
		return -ENOMEM;
	for (size_t i = 0; i < r->nnh; i++) {
		const struct mrc_nl_nexthop *nh = &r->nh[i];
		struct rtnexthop *rtnh = nlmsg_reserve(msg, sizeof(*rtnh), NLMSG_ALIGNTO);

		if (!rtnh)
			return -ENOMEM;
		rtnh->rtnh_flags = 0;
		rtnh->rtnh_hops = (uint8_t)(nh->weight ? nh->weight - 1 : 0);
		rtnh->rtnh_ifindex = nh->ifindex;
		if (nh->has_gw && nla_put(msg, RTA_GATEWAY, sizeof(nh->gw), &nh->gw) < 0)
			return -ENOMEM;
		/* libnl never reallocates a message, so rtnh is still valid. */
		rtnh->rtnh_len = (unsigned short)((char *)nlmsg_tail(nlmsg_hdr(msg)) - (char *)rtnh);
	}
	nla_nest_end(msg, mp);
	return 0;
}

static int check_route(int type, const struct mrc_nl_route *r)
{
	uint8_t t = r->type ? r->type : RTN_UNICAST;

	if (r->dst_len > 128 || r->nnh > MRC_NL_MAX_NEXTHOPS)
		return -EINVAL;
	if (t != RTN_UNICAST && t != RTN_LOCAL && t != RTN_BLACKHOLE &&
	    t != RTN_UNREACHABLE)
		return -EINVAL;
	if (type == RTM_NEWROUTE && t == RTN_UNICAST && r->nnh == 0)
		return -EINVAL;
	if (t != RTN_UNICAST && r->nnh > 1)
		return -EINVAL;
	for (size_t i = 0; i < r->nnh; i++)
		if (r->nh[i].ifindex <= 0 || r->nh[i].weight > 256)
			return -EINVAL;
	return 0;
}

int mrc_nl_build_route(struct nl_msg **out, int nlmsg_type, unsigned nlm_flags,
		       const struct mrc_nl_route *r)
{
	uint8_t t;
	uint32_t table;
	struct nl_msg *msg;
	int rc;

	if (!out || !r || (nlmsg_type != RTM_NEWROUTE && nlmsg_type != RTM_DELROUTE))
		return -EINVAL;
	rc = check_route(nlmsg_type, r);
	if (rc)
		return rc;
	t = r->type ? r->type : RTN_UNICAST;
	table = r->table ? r->table : t == RTN_LOCAL ? MRC_NL_TABLE_LOCAL : MRC_NL_TABLE_MAIN;
	msg = mrc__nl_route_msg(nlmsg_type, nlm_flags, &r->dst, r->dst_len, table, t);
	if (!msg)
		return -ENOMEM;
	rc = 0;
	if (r->metric && nla_put_u32(msg, RTA_PRIORITY, r->metric) < 0)
		rc = -ENOMEM;
	if (!rc && r->nnh == 1) {
		if (nla_put_u32(msg, RTA_OIF, (uint32_t)r->nh[0].ifindex) < 0 ||
		    (r->nh[0].has_gw &&
		     nla_put(msg, RTA_GATEWAY, sizeof(r->nh[0].gw), &r->nh[0].gw) < 0))
			rc = -ENOMEM;
	} else if (!rc && r->nnh > 1) {
		rc = put_multipath(msg, r);
	}
	if (rc) {
		nlmsg_free(msg);
		return rc;
	}
	*out = msg;
	return 0;
}

int mrc__nl_send_route(struct mrc_nl *nl, struct nl_msg *msg, int rc)
{
	if (rc)
		return rc;
	rc = mrc__nl_talk(nl, msg, NULL, NULL);
	nlmsg_free(msg);
	return rc;
}

static unsigned add_flags(unsigned flags)
{
	return NLM_F_CREATE | (flags & MRC_NL_REPLACE ? NLM_F_REPLACE : NLM_F_EXCL);
}

int mrc_nl_route_add(struct mrc_nl *nl, const struct mrc_nl_route *r,
		     unsigned flags)
{
	struct nl_msg *msg = NULL;
	int rc;

	if (flags & ~MRC_NL_REPLACE)
		return -EINVAL;
	rc = mrc_nl_build_route(&msg, RTM_NEWROUTE, add_flags(flags), r);
	return mrc__nl_send_route(nl, msg, rc);
}

int mrc_nl_route_del(struct mrc_nl *nl, const struct in6_addr *dst,
		     unsigned dst_len, uint32_t table)
{
	struct mrc_nl_route r;
	struct nl_msg *msg = NULL;
	int rc;

	if (!dst)
		return -EINVAL;
	memset(&r, 0, sizeof(r));
	r.dst = *dst;
	r.dst_len = (uint8_t)(dst_len <= 128 ? dst_len : 255);
	r.table = table;
	rc = mrc_nl_build_route(&msg, RTM_DELROUTE, 0, &r);
	return mrc__nl_send_route(nl, msg, rc);
}

int mrc_nl_local_route_add(struct mrc_nl *nl, const struct in6_addr *dst,
			   unsigned dst_len, int ifindex)
{
	struct mrc_nl_route r;

	if (!dst || dst_len > 128 || ifindex <= 0)
		return -EINVAL;
	memset(&r, 0, sizeof(r));
	r.dst = *dst;
	r.dst_len = (uint8_t)dst_len;
	r.type = RTN_LOCAL;
	r.table = MRC_NL_TABLE_LOCAL;
	r.nnh = 1;
	r.nh[0].ifindex = ifindex;
	return mrc_nl_route_add(nl, &r, 0);
}

/* seg6local End routes with the NEXT-C-SID flavour, and their counters.
 *
 * libnl has no seg6local support, so the lightweight-tunnel attributes are
 * built by hand, exactly as iproute2 does for
 *   ip -6 route add SID/LEN encap seg6local action End \
 *      flavors next-csid lblen L nflen N count dev IF
 *   RTA_ENCAP_TYPE = LWTUNNEL_ENCAP_SEG6_LOCAL
 *   RTA_ENCAP (nested)
 *     SEG6_LOCAL_ACTION   u32  SEG6_LOCAL_ACTION_END
 *     SEG6_LOCAL_COUNTERS nested: PACKETS, BYTES, ERRORS u64, all 0 (the
 *                         kernel refuses the request unless all three are there)
 *     SEG6_LOCAL_FLAVORS  nested
 *       SEG6_LOCAL_FLV_OPERATION      u32 bitmap, BIT(SEG6_LOCAL_FLV_OP_NEXT_CSID)
 *       SEG6_LOCAL_FLV_LCBLOCK_BITS   u8  locator block length
 *       SEG6_LOCAL_FLV_LCNODE_FN_BITS u8  node function length
 * The kernel parses the nests strictly, so NLA_F_NESTED is set on each. */
#include <errno.h>
#include <string.h>

#include <linux/lwtunnel.h>
#include <linux/rtnetlink.h>
#include <linux/seg6_local.h>
#include <netlink/attr.h>
#include <netlink/msg.h>

#include "srv6/nl.h"
#include "srv6/nl_internal.h"

static int check(const struct mrc_nl_seg6local *s)
{
	if (!s || s->sid_len > 128 || s->ifindex <= 0 ||
	    s->action != SEG6_LOCAL_ACTION_END)
		return -EINVAL;
	/* The kernel's own limits for NEXT-C-SID (seg6_chk_next_csid_cfg). */
	if (s->next_csid && (!s->lblen || !s->nflen || s->lblen % 8 || s->nflen % 8 ||
			     s->lblen + s->nflen > 128))
		return -EINVAL;
	return 0;
}

int mrc_nl_build_seg6local(struct nl_msg **out, int nlmsg_type,
			   unsigned nlm_flags, const struct mrc_nl_seg6local *s)
{
	struct nlattr *enc, *flv, *cnt;
	struct nl_msg *msg;

	if (!out || nlmsg_type != RTM_NEWROUTE || check(s))
		return -EINVAL;
	msg = mrc__nl_route_msg(nlmsg_type, nlm_flags, &s->sid, s->sid_len,
				s->table ? s->table : MRC_NL_TABLE_MAIN, RTN_UNICAST);
	if (!msg)
		return -ENOMEM;
	if (nla_put_u32(msg, RTA_OIF, (uint32_t)s->ifindex) < 0 ||
	    nla_put_u16(msg, RTA_ENCAP_TYPE, LWTUNNEL_ENCAP_SEG6_LOCAL) < 0)
		goto nomem;
	enc = mrc__nl_nla_nest(msg, RTA_ENCAP);
	if (!enc || nla_put_u32(msg, SEG6_LOCAL_ACTION, s->action) < 0)
		goto nomem;
	if (s->counters) {
		cnt = mrc__nl_nla_nest(msg, SEG6_LOCAL_COUNTERS);
		if (!cnt || nla_put_u64(msg, SEG6_LOCAL_CNT_PACKETS, 0) < 0 ||
		    nla_put_u64(msg, SEG6_LOCAL_CNT_BYTES, 0) < 0 ||
		    nla_put_u64(msg, SEG6_LOCAL_CNT_ERRORS, 0) < 0)
			goto nomem;
		nla_nest_end(msg, cnt);
	}
	if (s->next_csid) {
		flv = mrc__nl_nla_nest(msg, SEG6_LOCAL_FLAVORS);
		if (!flv ||
		    nla_put_u32(msg, SEG6_LOCAL_FLV_OPERATION, 1u << SEG6_LOCAL_FLV_OP_NEXT_CSID) < 0 ||
		    nla_put_u8(msg, SEG6_LOCAL_FLV_LCBLOCK_BITS, s->lblen) < 0 ||
		    nla_put_u8(msg, SEG6_LOCAL_FLV_LCNODE_FN_BITS, s->nflen) < 0)
			goto nomem;
		nla_nest_end(msg, flv);
	}
	nla_nest_end(msg, enc);
	*out = msg;
	return 0;
nomem:
	nlmsg_free(msg);
	return -ENOMEM;
}

int mrc_nl_seg6local_add(struct mrc_nl *nl, const struct mrc_nl_seg6local *s,
			 unsigned flags)
{
	struct nl_msg *msg = NULL;
	int rc;

	if (flags & ~MRC_NL_REPLACE)
		return -EINVAL;
	rc = mrc_nl_build_seg6local(&msg, RTM_NEWROUTE,
				    NLM_F_CREATE | (flags & MRC_NL_REPLACE ? NLM_F_REPLACE : NLM_F_EXCL),
				    s);
	return mrc__nl_send_route(nl, msg, rc);
}

/* ---- parsing -------------------------------------------------------------- */

static bool len_ok(const struct nlattr *a, int want)
{
	return a && nla_len(a) >= want;
}

static int parse_counters(const struct nlattr *a, struct mrc_nl_seg6local_info *out)
{
	struct nlattr *tb[SEG6_LOCAL_CNT_MAX + 1];

	if (nla_parse_nested(tb, SEG6_LOCAL_CNT_MAX, (struct nlattr *)a, NULL) < 0)
		return -EBADMSG;
	if (!len_ok(tb[SEG6_LOCAL_CNT_PACKETS], 8) || !len_ok(tb[SEG6_LOCAL_CNT_BYTES], 8) ||
	    !len_ok(tb[SEG6_LOCAL_CNT_ERRORS], 8))
		return -EBADMSG;
	out->has_counters = true;
	out->cnt.packets = nla_get_u64(tb[SEG6_LOCAL_CNT_PACKETS]);
	out->cnt.bytes = nla_get_u64(tb[SEG6_LOCAL_CNT_BYTES]);
	out->cnt.errors = nla_get_u64(tb[SEG6_LOCAL_CNT_ERRORS]);
	return 0;
}

static int parse_flavors(const struct nlattr *a, struct mrc_nl_seg6local *r)
{
	struct nlattr *tb[SEG6_LOCAL_FLV_MAX + 1];
	uint32_t ops;

	if (nla_parse_nested(tb, SEG6_LOCAL_FLV_MAX, (struct nlattr *)a, NULL) < 0 ||
	    !len_ok(tb[SEG6_LOCAL_FLV_OPERATION], 4))
		return -EBADMSG;
	ops = nla_get_u32(tb[SEG6_LOCAL_FLV_OPERATION]);
	if (!(ops & (1u << SEG6_LOCAL_FLV_OP_NEXT_CSID)))
		return 0;
	if (!len_ok(tb[SEG6_LOCAL_FLV_LCBLOCK_BITS], 1) ||
	    !len_ok(tb[SEG6_LOCAL_FLV_LCNODE_FN_BITS], 1))
		return -EBADMSG;
	r->next_csid = true;
	r->lblen = nla_get_u8(tb[SEG6_LOCAL_FLV_LCBLOCK_BITS]);
	r->nflen = nla_get_u8(tb[SEG6_LOCAL_FLV_LCNODE_FN_BITS]);
	return 0;
}

int mrc_nl_parse_seg6local(const struct nlmsghdr *nh,
			   struct mrc_nl_seg6local_info *out)
{
	struct nlattr *tb[RTA_MAX + 1], *enc[SEG6_LOCAL_MAX + 1];
	const struct rtmsg *rtm;
	int rc;

	if (!nh || !out)
		return -EINVAL;
	if (nh->nlmsg_type != RTM_NEWROUTE)
		return -ENOENT;
	if (!nlmsg_valid_hdr(nh, sizeof(*rtm)))
		return -EBADMSG;
	rtm = nlmsg_data(nh);
	if (rtm->rtm_family != AF_INET6)
		return -ENOENT;
	if (nlmsg_parse((struct nlmsghdr *)nh, sizeof(*rtm), tb, RTA_MAX, NULL) < 0)
		return -EBADMSG;
	if (!len_ok(tb[RTA_ENCAP_TYPE], 2) ||
	    nla_get_u16(tb[RTA_ENCAP_TYPE]) != LWTUNNEL_ENCAP_SEG6_LOCAL)
		return -ENOENT;
	if (!tb[RTA_ENCAP] || rtm->rtm_dst_len > 128)
		return -EBADMSG;
	memset(out, 0, sizeof(*out));
	out->route.sid_len = rtm->rtm_dst_len;
	if (tb[RTA_DST]) {
		if (!len_ok(tb[RTA_DST], 16))
			return -EBADMSG;
		memcpy(&out->route.sid, nla_data(tb[RTA_DST]), 16);
	}
	out->route.table = rtm->rtm_table;
	if (len_ok(tb[RTA_TABLE], 4))
		out->route.table = nla_get_u32(tb[RTA_TABLE]);
	if (len_ok(tb[RTA_OIF], 4))
		out->route.ifindex = (int)nla_get_u32(tb[RTA_OIF]);
	if (nla_parse_nested(enc, SEG6_LOCAL_MAX, tb[RTA_ENCAP], NULL) < 0 ||
	    !len_ok(enc[SEG6_LOCAL_ACTION], 4))
		return -EBADMSG;
	out->route.action = nla_get_u32(enc[SEG6_LOCAL_ACTION]);
	if (enc[SEG6_LOCAL_COUNTERS]) {
		out->route.counters = true;
		if ((rc = parse_counters(enc[SEG6_LOCAL_COUNTERS], out)))
			return rc;
	}
	if (enc[SEG6_LOCAL_FLAVORS] && (rc = parse_flavors(enc[SEG6_LOCAL_FLAVORS], &out->route)))
		return rc;
	return 0;
}

/* ---- dump ----------------------------------------------------------------- */

struct walk {
	uint32_t table;
	mrc_nl_seg6local_cb cb;
	void *arg;
};

static int on_route(const struct nlmsghdr *nh, void *arg)
{
	struct walk *w = arg;
	struct mrc_nl_seg6local_info info;

	if (mrc_nl_parse_seg6local(nh, &info))
		return 0;   /* not seg6local (or not understood): not ours */
	if (w->table && info.route.table != w->table)
		return 0;
	return w->cb(&info, w->arg);
}

int mrc_nl_seg6local_dump(struct mrc_nl *nl, uint32_t table,
			  mrc_nl_seg6local_cb cb, void *arg)
{
	struct rtmsg rtm = { .rtm_family = AF_INET6 };
	struct walk w = { .table = table, .cb = cb, .arg = arg };
	struct nl_msg *msg;
	int rc;

	if (!nl || !cb)
		return -EINVAL;
	msg = mrc__nl_msg(RTM_GETROUTE, NLM_F_DUMP, &rtm, sizeof(rtm));
	if (!msg)
		return -ENOMEM;
	rc = mrc__nl_talk(nl, msg, on_route, &w);
	nlmsg_free(msg);
	return rc;
}

struct find {
	const struct in6_addr *sid;
	unsigned sid_len;
	bool found, counted;
	struct mrc_nl_seg6local_counters cnt;
};

/* Records the route; the walk goes on so the dump is read to its end and
 * nothing stale is left on the socket. */
static int on_find(const struct mrc_nl_seg6local_info *info, void *arg)
{
	struct find *f = arg;

	if (info->route.sid_len != f->sid_len ||
	    memcmp(&info->route.sid, f->sid, sizeof(*f->sid)))
		return 0;
	f->found = true;
	f->counted = info->has_counters;
	f->cnt = info->cnt;
	return 0;
}

int mrc_nl_seg6local_counters_get(struct mrc_nl *nl, const struct in6_addr *sid,
				  unsigned sid_len, uint32_t table,
				  struct mrc_nl_seg6local_counters *out)
{
	struct find f = { .sid = sid, .sid_len = sid_len };
	int rc;

	if (!sid || !out || sid_len > 128)
		return -EINVAL;
	rc = mrc_nl_seg6local_dump(nl, table ? table : MRC_NL_TABLE_MAIN, on_find, &f);
	if (rc < 0)
		return rc;
	if (!f.found)
		return -ENOENT;
	if (!f.counted)
		return -ENODATA;
	*out = f.cnt;
	return 0;
}

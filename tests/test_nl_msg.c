/* Netlink messages built by srv6/nl*.c, parsed back attribute by attribute
 * with libnl's parser (no kernel needed). */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/lwtunnel.h>
#include <linux/rtnetlink.h>
#include <linux/seg6_local.h>
#include <linux/veth.h>
#include <netlink/attr.h>
#include <netlink/msg.h>

#include "srv6/nl.h"

static unsigned seed;

static struct in6_addr rand_addr(void)
{
	struct in6_addr a;

	for (int i = 0; i < 16; i++)
		a.s6_addr[i] = (uint8_t)rand();
	return a;
}

/* Parses the attributes after a fixed header of hdrlen bytes. */
static struct nlmsghdr *parse(struct nl_msg *msg, size_t hdrlen, struct nlattr **tb, int max)
{
	struct nlmsghdr *nh = nlmsg_hdr(msg);

	assert_int_equal(nlmsg_parse(nh, (int)hdrlen, tb, max, NULL), 0);
	return nh;
}

static void assert_nested(const struct nlattr *a)
{
	assert_non_null(a);
	assert_true(a->nla_type & NLA_F_NESTED);
}

static void test_seg6local_attrs(void **st)
{
	for (int iter = 0; iter < 200; iter++) {
		struct mrc_nl_seg6local s = {
			.sid = rand_addr(),
			.sid_len = (uint8_t)(rand() % 129),
			.ifindex = 1 + rand() % 100000,
			.table = rand() % 3 ? 0 : (uint32_t)rand(),
			.action = SEG6_LOCAL_ACTION_END,
			.next_csid = rand() % 4 != 0,
			.counters = rand() % 2,
		};
		struct nlattr *tb[RTA_MAX + 1], *enc[SEG6_LOCAL_MAX + 1], *flv[SEG6_LOCAL_FLV_MAX + 1];
		struct nl_msg *msg = NULL;
		struct nlmsghdr *nh;
		struct rtmsg *rtm;
		uint32_t table = s.table ? s.table : 254;

		if (s.next_csid) {
			s.lblen = (uint8_t)(16 * (1 + rand() % 4));
			s.nflen = 16;
		}
		if (mrc_nl_build_seg6local(&msg, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL, &s))
			fail_msg("seed %u iter %d: build failed", seed, iter);
		nh = parse(msg, sizeof(*rtm), tb, RTA_MAX);
		rtm = nlmsg_data(nh);
		assert_int_equal(nh->nlmsg_type, RTM_NEWROUTE);
		assert_int_equal(nh->nlmsg_flags & (NLM_F_CREATE | NLM_F_EXCL), NLM_F_CREATE | NLM_F_EXCL);
		assert_int_equal(rtm->rtm_family, AF_INET6);
		assert_int_equal(rtm->rtm_dst_len, s.sid_len);
		assert_int_equal(rtm->rtm_type, RTN_UNICAST);
		assert_int_equal(rtm->rtm_table, table < 256 ? table : RT_TABLE_UNSPEC);
		assert_int_equal(nla_len(tb[RTA_DST]), 16);
		assert_memory_equal(nla_data(tb[RTA_DST]), &s.sid, 16);
		assert_int_equal(nla_get_u32(tb[RTA_TABLE]), table);
		assert_int_equal(nla_get_u32(tb[RTA_OIF]), s.ifindex);
		assert_int_equal(nla_get_u16(tb[RTA_ENCAP_TYPE]), LWTUNNEL_ENCAP_SEG6_LOCAL);
		assert_nested(tb[RTA_ENCAP]);
		assert_int_equal(nla_parse_nested(enc, SEG6_LOCAL_MAX, tb[RTA_ENCAP], NULL), 0);
		assert_int_equal(nla_get_u32(enc[SEG6_LOCAL_ACTION]), SEG6_LOCAL_ACTION_END);
		if (s.counters) {
			struct nlattr *cnt[SEG6_LOCAL_CNT_MAX + 1];

			/* The kernel wants all three counters (as zeros) in a request. */
			assert_nested(enc[SEG6_LOCAL_COUNTERS]);
			assert_int_equal(nla_parse_nested(cnt, SEG6_LOCAL_CNT_MAX, enc[SEG6_LOCAL_COUNTERS], NULL), 0);
			for (int c = SEG6_LOCAL_CNT_PACKETS; c <= SEG6_LOCAL_CNT_ERRORS; c++) {
				assert_int_equal(nla_len(cnt[c]), 8);
				assert_int_equal(nla_get_u64(cnt[c]), 0);
			}
		} else {
			assert_null(enc[SEG6_LOCAL_COUNTERS]);
		}
		if (s.next_csid) {
			assert_nested(enc[SEG6_LOCAL_FLAVORS]);
			assert_int_equal(nla_parse_nested(flv, SEG6_LOCAL_FLV_MAX, enc[SEG6_LOCAL_FLAVORS], NULL), 0);
			assert_int_equal(nla_get_u32(flv[SEG6_LOCAL_FLV_OPERATION]),
					 1u << SEG6_LOCAL_FLV_OP_NEXT_CSID);
			assert_int_equal(nla_len(flv[SEG6_LOCAL_FLV_LCBLOCK_BITS]), 1);
			assert_int_equal(nla_get_u8(flv[SEG6_LOCAL_FLV_LCBLOCK_BITS]), s.lblen);
			assert_int_equal(nla_get_u8(flv[SEG6_LOCAL_FLV_LCNODE_FN_BITS]), s.nflen);
		} else {
			assert_null(enc[SEG6_LOCAL_FLAVORS]);
		}
		/* And the library's own parser reads back what it built. */
		{
			struct mrc_nl_seg6local_info info;
			struct mrc_nl_seg6local want = s;

			want.table = table;
			assert_int_equal(mrc_nl_parse_seg6local(nh, &info), 0);
			assert_memory_equal(&info.route, &want, sizeof(want));
			assert_int_equal(info.has_counters, s.counters);
			assert_int_equal(info.cnt.packets + info.cnt.bytes + info.cnt.errors, 0);
		}
		nlmsg_free(msg);
	}
}

static void test_seg6local_invalid(void **st)
{
	const struct mrc_nl_seg6local good = {
		.sid_len = 48, .ifindex = 3, .action = SEG6_LOCAL_ACTION_END,
		.next_csid = true, .lblen = 32, .nflen = 16, .counters = true,
	};
	struct mrc_nl_seg6local s;
	struct nl_msg *msg = NULL;

	assert_int_equal(mrc_nl_build_seg6local(&msg, RTM_NEWROUTE, 0, &good), 0);
	nlmsg_free(msg);
#define BAD(field, v) do { s = good; s.field = v; \
	assert_int_equal(mrc_nl_build_seg6local(&msg, RTM_NEWROUTE, 0, &s), -EINVAL); } while (0)
	BAD(sid_len, 129);
	BAD(ifindex, 0);
	BAD(action, SEG6_LOCAL_ACTION_END_X);
	BAD(lblen, 0);
	BAD(lblen, 12);
	BAD(nflen, 4);
	BAD(lblen, 120);
#undef BAD
	assert_int_equal(mrc_nl_build_seg6local(&msg, RTM_DELROUTE, 0, &good), -EINVAL);
}

/* A kernel-style answer (counters with values) is parsed. */
static void test_seg6local_counters_parse(void **st)
{
	struct rtmsg rtm = { .rtm_family = AF_INET6, .rtm_dst_len = 48, .rtm_table = 254,
			     .rtm_type = RTN_UNICAST };
	uint64_t p = ((uint64_t)rand() << 32) | (unsigned)rand(), b = (uint64_t)rand(), e = (uint64_t)rand();
	struct in6_addr sid = rand_addr();
	struct mrc_nl_seg6local_info info;
	struct nlattr *enc, *cnt;
	struct nl_msg *msg = nlmsg_alloc_simple(RTM_NEWROUTE, 0);

	assert_non_null(msg);
	assert_int_equal(nlmsg_append(msg, &rtm, sizeof(rtm), NLMSG_ALIGNTO), 0);
	nla_put(msg, RTA_DST, 16, &sid);
	nla_put_u32(msg, RTA_TABLE, 254);
	nla_put_u32(msg, RTA_OIF, 7);
	nla_put_u16(msg, RTA_ENCAP_TYPE, LWTUNNEL_ENCAP_SEG6_LOCAL);
	enc = nla_nest_start(msg, RTA_ENCAP);
	nla_put_u32(msg, SEG6_LOCAL_ACTION, SEG6_LOCAL_ACTION_END);
	cnt = nla_nest_start(msg, SEG6_LOCAL_COUNTERS);
	nla_put_u64(msg, SEG6_LOCAL_CNT_PACKETS, p);
	nla_put_u64(msg, SEG6_LOCAL_CNT_BYTES, b);
	nla_put_u64(msg, SEG6_LOCAL_CNT_ERRORS, e);
	nla_nest_end(msg, cnt);
	nla_nest_end(msg, enc);
	assert_int_equal(mrc_nl_parse_seg6local(nlmsg_hdr(msg), &info), 0);
	assert_true(info.has_counters);
	assert_true(info.route.counters);
	assert_false(info.route.next_csid);
	assert_int_equal(info.cnt.packets, p);
	assert_int_equal(info.cnt.bytes, b);
	assert_int_equal(info.cnt.errors, e);
	assert_int_equal(info.route.ifindex, 7);
	assert_memory_equal(&info.route.sid, &sid, 16);
	nlmsg_free(msg);

	/* Not seg6local: -ENOENT; not a route: -ENOENT. */
	msg = nlmsg_alloc_simple(RTM_NEWROUTE, 0);
	nlmsg_append(msg, &rtm, sizeof(rtm), NLMSG_ALIGNTO);
	nla_put(msg, RTA_DST, 16, &sid);
	assert_int_equal(mrc_nl_parse_seg6local(nlmsg_hdr(msg), &info), -ENOENT);
	nlmsg_hdr(msg)->nlmsg_type = RTM_NEWLINK;
	assert_int_equal(mrc_nl_parse_seg6local(nlmsg_hdr(msg), &info), -ENOENT);
	nlmsg_free(msg);
}

static void test_route_single_and_multipath(void **st)
{
	for (int iter = 0; iter < 100; iter++) {
		struct mrc_nl_route r;
		struct nlattr *tb[RTA_MAX + 1];
		struct nl_msg *msg = NULL;
		struct nlmsghdr *nh;
		struct rtmsg *rtm;

		memset(&r, 0, sizeof(r));
		r.dst = rand_addr();
		r.dst_len = (uint8_t)(rand() % 129);
		r.metric = rand() % 2 ? (uint32_t)rand() : 0;
		r.nnh = 1 + (size_t)rand() % (iter % 2 ? MRC_NL_MAX_NEXTHOPS : 1);
		for (size_t i = 0; i < r.nnh; i++) {
			r.nh[i].ifindex = 1 + rand() % 1000;
			r.nh[i].has_gw = rand() % 2;
			r.nh[i].gw = rand_addr();
			r.nh[i].weight = (uint16_t)(rand() % 257);
		}
		assert_int_equal(mrc_nl_build_route(&msg, RTM_NEWROUTE, NLM_F_CREATE, &r), 0);
		nh = parse(msg, sizeof(*rtm), tb, RTA_MAX);
		rtm = nlmsg_data(nh);
		assert_int_equal(rtm->rtm_family, AF_INET6);
		assert_int_equal(rtm->rtm_dst_len, r.dst_len);
		assert_int_equal(rtm->rtm_type, RTN_UNICAST);
		assert_int_equal(rtm->rtm_scope, RT_SCOPE_UNIVERSE);
		assert_int_equal(rtm->rtm_protocol, RTPROT_STATIC);
		assert_int_equal(rtm->rtm_table, RT_TABLE_MAIN);
		assert_int_equal(nla_get_u32(tb[RTA_TABLE]), RT_TABLE_MAIN);
		assert_memory_equal(nla_data(tb[RTA_DST]), &r.dst, 16);
		if (r.metric)
			assert_int_equal(nla_get_u32(tb[RTA_PRIORITY]), r.metric);
		else
			assert_null(tb[RTA_PRIORITY]);
		if (r.nnh == 1) {
			assert_null(tb[RTA_MULTIPATH]);
			assert_int_equal(nla_get_u32(tb[RTA_OIF]), r.nh[0].ifindex);
			if (r.nh[0].has_gw)
				assert_memory_equal(nla_data(tb[RTA_GATEWAY]), &r.nh[0].gw, 16);
			else
				assert_null(tb[RTA_GATEWAY]);
		} else {
			/* Walk the rtnexthop list as the kernel does. */
			const char *p = nla_data(tb[RTA_MULTIPATH]);
			int rem = nla_len(tb[RTA_MULTIPATH]);
			size_t i = 0;

			assert_nested(tb[RTA_MULTIPATH]);
			assert_null(tb[RTA_OIF]);
			while (rem >= (int)sizeof(struct rtnexthop)) {
				const struct rtnexthop *nhp = (const void *)p;
				struct nlattr *ntb[RTA_MAX + 1];
				unsigned w = r.nh[i].weight ? r.nh[i].weight : 1;

				assert_true(i < r.nnh);
				assert_true(nhp->rtnh_len <= rem);
				assert_int_equal(nhp->rtnh_ifindex, r.nh[i].ifindex);
				assert_int_equal(nhp->rtnh_hops, w - 1);
				assert_int_equal(nla_parse(ntb, RTA_MAX, (struct nlattr *)RTNH_DATA(nhp),
							   nhp->rtnh_len - (int)sizeof(*nhp), NULL), 0);
				if (r.nh[i].has_gw)
					assert_memory_equal(nla_data(ntb[RTA_GATEWAY]), &r.nh[i].gw, 16);
				else
					assert_null(ntb[RTA_GATEWAY]);
				rem -= RTNH_ALIGN(nhp->rtnh_len);
				p += RTNH_ALIGN(nhp->rtnh_len);
				i++;
			}
			assert_int_equal(i, r.nnh);
			assert_int_equal(rem, 0);
		}
		nlmsg_free(msg);
	}
}

static void test_route_local_del_invalid(void **st)
{
	struct mrc_nl_route r;
	struct nlattr *tb[RTA_MAX + 1];
	struct nl_msg *msg = NULL;
	struct rtmsg *rtm;

	memset(&r, 0, sizeof(r));
	r.dst = rand_addr();
	r.dst_len = 48;
	r.type = RTN_LOCAL;
	r.nnh = 1;
	r.nh[0].ifindex = 5;
	assert_int_equal(mrc_nl_build_route(&msg, RTM_NEWROUTE, NLM_F_CREATE, &r), 0);
	rtm = nlmsg_data(parse(msg, sizeof(*rtm), tb, RTA_MAX));
	assert_int_equal(rtm->rtm_type, RTN_LOCAL);
	assert_int_equal(rtm->rtm_scope, RT_SCOPE_HOST);
	assert_int_equal(nla_get_u32(tb[RTA_TABLE]), RT_TABLE_LOCAL);
	assert_int_equal(nla_get_u32(tb[RTA_OIF]), 5);
	nlmsg_free(msg);

	/* A delete leaves protocol/type zero so it matches any route. */
	r.type = 0;
	r.nnh = 0;
	r.table = 1000;
	assert_int_equal(mrc_nl_build_route(&msg, RTM_DELROUTE, 0, &r), 0);
	rtm = nlmsg_data(parse(msg, sizeof(*rtm), tb, RTA_MAX));
	assert_int_equal(rtm->rtm_protocol, 0);
	assert_int_equal(rtm->rtm_type, 0);
	assert_int_equal(rtm->rtm_scope, RT_SCOPE_NOWHERE);
	assert_int_equal(rtm->rtm_table, RT_TABLE_UNSPEC);
	assert_int_equal(nla_get_u32(tb[RTA_TABLE]), 1000);
	nlmsg_free(msg);

	memset(&r, 0, sizeof(r));
	assert_int_equal(mrc_nl_build_route(&msg, RTM_NEWROUTE, 0, &r), -EINVAL);   /* no next hop */
	r.nnh = 1;
	assert_int_equal(mrc_nl_build_route(&msg, RTM_NEWROUTE, 0, &r), -EINVAL);   /* ifindex 0 */
	r.nh[0].ifindex = 1;
	r.nh[0].weight = 257;
	assert_int_equal(mrc_nl_build_route(&msg, RTM_NEWROUTE, 0, &r), -EINVAL);
	r.nh[0].weight = 0;
	r.dst_len = 129;
	assert_int_equal(mrc_nl_build_route(&msg, RTM_NEWROUTE, 0, &r), -EINVAL);
	r.dst_len = 0;
	r.type = RTN_LOCAL;
	r.nnh = 2;
	r.nh[1].ifindex = 1;
	assert_int_equal(mrc_nl_build_route(&msg, RTM_NEWROUTE, 0, &r), -EINVAL);
	r.type = RTN_MULTICAST;
	r.nnh = 1;
	assert_int_equal(mrc_nl_build_route(&msg, RTM_NEWROUTE, 0, &r), -EINVAL);
}

static void test_addr(void **st)
{
	struct in6_addr a = rand_addr();
	struct nlattr *tb[IFA_MAX + 1];
	struct nl_msg *msg = NULL;
	struct ifaddrmsg *ifa;
	struct nlmsghdr *nh;

	assert_int_equal(mrc_nl_build_addr(&msg, RTM_NEWADDR, NLM_F_CREATE, 9, &a, 64,
					   MRC_NL_ADDR_NODAD), 0);
	nh = parse(msg, sizeof(*ifa), tb, IFA_MAX);
	ifa = nlmsg_data(nh);
	assert_int_equal(nh->nlmsg_type, RTM_NEWADDR);
	assert_int_equal(ifa->ifa_family, AF_INET6);
	assert_int_equal(ifa->ifa_prefixlen, 64);
	assert_int_equal(ifa->ifa_index, 9);
	assert_int_equal(ifa->ifa_flags, IFA_F_NODAD);
	assert_memory_equal(nla_data(tb[IFA_LOCAL]), &a, 16);
	assert_memory_equal(nla_data(tb[IFA_ADDRESS]), &a, 16);
	assert_int_equal(nla_get_u32(tb[IFA_FLAGS]), IFA_F_NODAD);
	nlmsg_free(msg);

	assert_int_equal(mrc_nl_build_addr(&msg, RTM_NEWADDR, 0, 9, &a, 128, 0), 0);
	parse(msg, sizeof(*ifa), tb, IFA_MAX);
	assert_int_equal(nla_get_u32(tb[IFA_FLAGS]), 0);
	nlmsg_free(msg);
	assert_int_equal(mrc_nl_build_addr(&msg, RTM_NEWADDR, 0, 9, &a, 129, 0), -EINVAL);
	assert_int_equal(mrc_nl_build_addr(&msg, RTM_NEWADDR, 0, 0, &a, 64, 0), -EINVAL);
	assert_int_equal(mrc_nl_build_addr(&msg, RTM_NEWADDR, 0, 9, &a, 64, 0x80), -EINVAL);
	assert_int_equal(mrc_nl_build_addr(&msg, RTM_NEWROUTE, 0, 9, &a, 64, 0), -EINVAL);
}

static const char *info_kind(struct nlattr *linkinfo, struct nlattr **data)
{
	struct nlattr *li[IFLA_INFO_MAX + 1];

	assert_int_equal(nla_parse_nested(li, IFLA_INFO_MAX, linkinfo, NULL), 0);
	*data = li[IFLA_INFO_DATA];
	return nla_get_string(li[IFLA_INFO_KIND]);
}

static void test_links(void **st)
{
	struct nlattr *tb[IFLA_MAX + 1], *data, *vd[VETH_INFO_MAX + 1], *ptb[IFLA_MAX + 1];
	struct nl_msg *msg = NULL;
	struct nlmsghdr *nh;
	struct ifinfomsg *ifi;

	assert_int_equal(mrc_nl_build_veth_add(&msg, "mrcSa", "mrcSb", 42), 0);
	nh = parse(msg, sizeof(*ifi), tb, IFLA_MAX);
	assert_int_equal(nh->nlmsg_type, RTM_NEWLINK);
	assert_int_equal(nh->nlmsg_flags & (NLM_F_CREATE | NLM_F_EXCL), NLM_F_CREATE | NLM_F_EXCL);
	assert_string_equal(nla_get_string(tb[IFLA_IFNAME]), "mrcSa");
	assert_null(tb[IFLA_NET_NS_FD]);
	assert_string_equal(info_kind(tb[IFLA_LINKINFO], &data), "veth");
	assert_non_null(data);
	assert_int_equal(nla_parse_nested(vd, VETH_INFO_MAX, data, NULL), 0);
	assert_non_null(vd[VETH_INFO_PEER]);
	/* The peer is an ifinfomsg followed by its own attributes. */
	assert_true(nla_len(vd[VETH_INFO_PEER]) >= (int)sizeof(struct ifinfomsg));
	assert_int_equal(nla_parse(ptb, IFLA_MAX,
				   (struct nlattr *)((char *)nla_data(vd[VETH_INFO_PEER]) + sizeof(struct ifinfomsg)),
				   nla_len(vd[VETH_INFO_PEER]) - (int)sizeof(struct ifinfomsg), NULL), 0);
	assert_string_equal(nla_get_string(ptb[IFLA_IFNAME]), "mrcSb");
	assert_int_equal(nla_get_u32(ptb[IFLA_NET_NS_FD]), 42);
	nlmsg_free(msg);

	assert_int_equal(mrc_nl_build_ifb_add(&msg, "sr0"), 0);
	parse(msg, sizeof(*ifi), tb, IFLA_MAX);
	assert_string_equal(nla_get_string(tb[IFLA_IFNAME]), "sr0");
	assert_string_equal(info_kind(tb[IFLA_LINKINFO], &data), "ifb");
	nlmsg_free(msg);

	assert_int_equal(mrc_nl_build_link_change(&msg, 0, "mrcSa", 1, 9000, 7), 0);
	nh = parse(msg, sizeof(*ifi), tb, IFLA_MAX);
	ifi = nlmsg_data(nh);
	assert_int_equal(ifi->ifi_index, 0);
	assert_int_equal(ifi->ifi_change, IFF_UP);
	assert_int_equal(ifi->ifi_flags, IFF_UP);
	assert_string_equal(nla_get_string(tb[IFLA_IFNAME]), "mrcSa");
	assert_int_equal(nla_get_u32(tb[IFLA_MTU]), 9000);
	assert_int_equal(nla_get_u32(tb[IFLA_NET_NS_FD]), 7);
	nlmsg_free(msg);

	assert_int_equal(mrc_nl_build_link_change(&msg, 12, NULL, 0, 0, -1), 0);
	nh = parse(msg, sizeof(*ifi), tb, IFLA_MAX);
	ifi = nlmsg_data(nh);
	assert_int_equal(ifi->ifi_index, 12);
	assert_int_equal(ifi->ifi_change, IFF_UP);
	assert_int_equal(ifi->ifi_flags, 0);
	assert_null(tb[IFLA_IFNAME]);
	assert_null(tb[IFLA_MTU]);
	assert_null(tb[IFLA_NET_NS_FD]);
	nlmsg_free(msg);

	/* Names the kernel would refuse (or that would escape /proc/sys). */
	assert_int_equal(mrc_nl_build_veth_add(&msg, "a-name-longer-than15", "b", -1), -EINVAL);
	assert_int_equal(mrc_nl_build_veth_add(&msg, "a/b", "b", -1), -EINVAL);
	assert_int_equal(mrc_nl_build_veth_add(&msg, "..", "b", -1), -EINVAL);
	assert_int_equal(mrc_nl_build_ifb_add(&msg, ""), -EINVAL);
	assert_int_equal(mrc_nl_build_ifb_add(&msg, "a b"), -EINVAL);
	assert_int_equal(mrc_nl_build_link_change(&msg, 0, "x", -1, 0, -1), -EINVAL);
	assert_int_equal(mrc_nl_sysctl_set("kernel/hostname", "x"), -EINVAL);
	assert_int_equal(mrc_nl_sysctl_set("net/../kernel/hostname", "x"), -EINVAL);
	assert_int_equal(mrc_nl_sysctl_srv6_if("../x", true), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_seg6local_attrs),
		cmocka_unit_test(test_seg6local_invalid),
		cmocka_unit_test(test_seg6local_counters_parse),
		cmocka_unit_test(test_route_single_and_multipath),
		cmocka_unit_test(test_route_local_del_invalid),
		cmocka_unit_test(test_addr),
		cmocka_unit_test(test_links),
	};
	const char *s = getenv("MRC_TEST_SEED");
	int rc;

	seed = s ? (unsigned)strtoul(s, NULL, 0) : (unsigned)time(NULL);
	srand(seed);
	rc = cmocka_run_group_tests_name("nl_msg", tests, NULL, NULL);
	if (rc)
		fprintf(stderr, "nl_msg: failed with MRC_TEST_SEED=%u\n", seed);
	return rc;
}

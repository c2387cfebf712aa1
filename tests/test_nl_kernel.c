/* srv6/nl against the real kernel, in two private (anonymous) network
 * namespaces: they vanish with the process, so nothing is left behind even
 * when a test fails.  Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN); skipped
 * with a message otherwise.
 *
 *   namespace A ("switch")                namespace B ("host")
 *   sr0 (ifb): fcbb:bb00:1100::/48 End    w1 fc00:2::2/64
 *              next-csid 32/16 count      local fcbb:bb00:2200::/48
 *   w0 fc00:2::1/64  <----- veth ----->   fcbb::/16 via fc00:2::1
 *   fcbb:bb00:2200::/48 via fc00:2::2
 *
 * B sends UDP to fcbb:bb00:1100:2200::; A's End shifts it to
 * fcbb:bb00:2200:: and sends it back; B receives it.  A's counters must
 * show exactly the packets sent. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/udp.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/support/skip.h"

#include <linux/seg6_local.h>

#include "srv6/nl.h"
#include "srv6/usid.h"

#ifndef UDP_NO_CHECK6_TX
#define UDP_NO_CHECK6_TX 101
#define UDP_NO_CHECK6_RX 102
#endif

static unsigned seed;
static int ns_a = -1, ns_b = -1;   /* fds of the two namespaces */
static struct mrc_nl *nla, *nlb;

static struct in6_addr A6(const char *s)
{
	struct in6_addr a;

	assert_int_equal(inet_pton(AF_INET6, s, &a), 1);
	return a;
}

static int setup(void **st)
{
	if (geteuid() != 0) {
		fprintf(stderr, "nl_kernel: SKIPPED: needs root (network namespaces)\n");
		return 0;
	}
	/* A is this process's new namespace; B another, reached by fd. */
	if (unshare(CLONE_NEWNET) < 0)
		return -1;
	ns_a = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (unshare(CLONE_NEWNET) < 0)
		return -1;
	ns_b = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (ns_a < 0 || ns_b < 0 || setns(ns_a, CLONE_NEWNET) < 0)
		return -1;
	if (mrc_nl_open(&nla) || mrc_nl_open_netns(ns_b, &nlb))
		return -1;
	return 0;
}

static int teardown(void **st)
{
	mrc_nl_close(nla);
	mrc_nl_close(nlb);
	if (ns_a >= 0)
		close(ns_a);
	if (ns_b >= 0)
		close(ns_b);
	return 0;
}

#define NEED_ROOT() do { if (geteuid() != 0) MRC_SKIP("needs root (network namespaces)"); } while (0)

static void ok(int rc, struct mrc_nl *nl, const char *what)
{
	if (rc)
		fail_msg("%s: %s (kernel: %s)", what, strerror(-rc), mrc_nl_errmsg(nl));
}

static unsigned get_mtu(const char *name)
{
	struct ifreq ifr;
	int fd = socket(AF_INET6, SOCK_DGRAM, 0);

	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	assert_int_equal(ioctl(fd, SIOCGIFMTU, &ifr), 0);
	close(fd);
	return (unsigned)ifr.ifr_mtu;
}

/* Sysctls in both namespaces, before any link exists there. */
static void test_sysctls(void **st)
{
	char v[16];
	int saved;

	NEED_ROOT();
	ok(mrc_nl_sysctl_srv6_ns(true, false), nla, "sysctls A");
	assert_int_equal(mrc_nl_sysctl_get("net/ipv6/conf/default/accept_dad", v, sizeof(v)), 0);
	assert_string_equal(v, "0");
	assert_int_equal(mrc_nl_sysctl_get("net/ipv6/conf/all/forwarding", v, sizeof(v)), 0);
	assert_string_equal(v, "1");
	assert_int_equal(mrc_nl_sysctl_get("net/ipv6/conf/all/seg6_enabled", v, sizeof(v)), 0);
	assert_string_equal(v, "0");
	ok(mrc_nl_netns_enter(ns_b, &saved), NULL, "enter B");
	ok(mrc_nl_sysctl_srv6_ns(false, true), NULL, "sysctls B");
	assert_int_equal(mrc_nl_sysctl_get("net/ipv6/conf/all/forwarding", v, sizeof(v)), 0);
	assert_string_equal(v, "0");
	assert_int_equal(mrc_nl_sysctl_get("net/ipv6/conf/default/seg6_enabled", v, sizeof(v)), 0);
	assert_string_equal(v, "1");
	ok(mrc_nl_netns_leave(saved), NULL, "leave B");
	/* Back in A: its value is untouched by B's. */
	assert_int_equal(mrc_nl_sysctl_get("net/ipv6/conf/all/forwarding", v, sizeof(v)), 0);
	assert_string_equal(v, "1");
	assert_int_equal(mrc_nl_sysctl_set("net/ipv6/conf/nosuchif/forwarding", "1"), -ENOENT);
}

static void test_links(void **st)
{
	int i0, i1, ib, idx;

	NEED_ROOT();
	ok(mrc_nl_ifb_add(nla, "sr0"), nla, "ifb");
	assert_int_equal(mrc_nl_ifb_add(nla, "sr0"), -EEXIST);
	ok(mrc_nl_link_set_up(nla, "sr0", true), nla, "sr0 up");
	/* w1 is born in B: never visible in A. */
	ok(mrc_nl_veth_add(nla, "w0", "w1", ns_b), nla, "veth w0/w1");
	assert_int_equal(mrc_nl_link_index(nla, "w1", &idx), -ENODEV);
	ok(mrc_nl_link_index(nlb, "w1", &ib), nlb, "w1 in B");
	/* A veth made here and moved. */
	ok(mrc_nl_veth_add(nla, "v0", "v1", -1), nla, "veth v0/v1");
	ok(mrc_nl_link_index(nla, "v1", &i1), nla, "v1");
	ok(mrc_nl_link_set_netns(nla, "v1", ns_b), nla, "v1 to B");
	assert_int_equal(mrc_nl_link_index(nla, "v1", &idx), -ENODEV);
	ok(mrc_nl_link_index(nlb, "v1", &idx), nlb, "v1 in B");
	ok(mrc_nl_link_set_mtu(nla, "w0", 9000), nla, "mtu");
	assert_int_equal(get_mtu("w0"), 9000);
	assert_int_equal(mrc_nl_link_set_mtu(nla, "w0", 10), -EINVAL);
	ok(mrc_nl_link_set_up(nla, "w0", true), nla, "w0 up");
	ok(mrc_nl_link_set_up(nlb, "w1", true), nlb, "w1 up");
	ok(mrc_nl_link_set_mtu(nlb, "w1", 9000), nlb, "w1 mtu");
	ok(mrc_nl_link_index(nla, "w0", &i0), nla, "w0");
	assert_int_equal((int)if_nametoindex("w0"), i0);
	/* Deleting one end removes the pair. */
	ok(mrc_nl_link_del(nlb, "v1"), nlb, "del v1");
	assert_int_equal(mrc_nl_link_index(nla, "v0", &idx), -ENODEV);
	assert_int_equal(mrc_nl_link_del(nla, "v0"), -ENODEV);
}

static void test_addrs_routes(void **st)
{
	struct in6_addr a = A6("fc00:2::1"), b = A6("fc00:2::2");
	struct mrc_nl_route r;
	struct sockaddr_in6 sa = { .sin6_family = AF_INET6 };
	int w0, w1, sr0, fd;

	NEED_ROOT();
	ok(mrc_nl_link_index(nla, "w0", &w0), nla, "w0");
	ok(mrc_nl_link_index(nla, "sr0", &sr0), nla, "sr0");
	ok(mrc_nl_link_index(nlb, "w1", &w1), nlb, "w1");
	ok(mrc_nl_addr_add(nla, w0, &a, 64, MRC_NL_ADDR_NODAD), nla, "addr A");
	assert_int_equal(mrc_nl_addr_add(nla, w0, &a, 64, MRC_NL_ADDR_NODAD), -EEXIST);
	ok(mrc_nl_addr_add(nlb, w1, &b, 64, MRC_NL_ADDR_NODAD), nlb, "addr B");
	/* NODAD: bindable at once (a tentative address is not). */
	fd = socket(AF_INET6, SOCK_DGRAM, 0);
	sa.sin6_addr = a;
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(fd);

	/* A plain route, a duplicate, a delete, a second delete. */
	memset(&r, 0, sizeof(r));
	r.dst = A6("2001:db8:1::");
	r.dst_len = 64;
	r.nnh = 1;
	r.nh[0].ifindex = w0;
	r.nh[0].has_gw = true;
	r.nh[0].gw = b;
	ok(mrc_nl_route_add(nla, &r, 0), nla, "route");
	assert_int_equal(mrc_nl_route_add(nla, &r, 0), -EEXIST);
	ok(mrc_nl_route_add(nla, &r, MRC_NL_REPLACE), nla, "route replace");
	ok(mrc_nl_route_del(nla, &r.dst, 64, 0), nla, "route del");
	assert_int_equal(mrc_nl_route_del(nla, &r.dst, 64, 0), -ESRCH);

	/* Kernel ECMP over two next hops (w0 and sr0), in another table. */
	r.dst = A6("2001:db8:2::");
	r.table = 100;
	r.nnh = 2;
	r.nh[1].ifindex = sr0;
	r.nh[1].has_gw = true;
	r.nh[1].gw = A6("fe80::2");
	r.nh[1].weight = 3;
	ok(mrc_nl_route_add(nla, &r, 0), nla, "multipath route");
	ok(mrc_nl_route_del(nla, &r.dst, 64, 100), nla, "multipath del");

	/* The path of the packet test. */
	r.dst = A6("fcbb:bb00:2200::");
	r.dst_len = 48;
	r.table = 0;
	r.nnh = 1;
	ok(mrc_nl_route_add(nla, &r, 0), nla, "route to B's uSID");
	r.dst = A6("fcbb::");
	r.dst_len = 16;
	r.nh[0].ifindex = w1;
	r.nh[0].gw = a;
	ok(mrc_nl_route_add(nlb, &r, 0), nlb, "B's uSID block route");
	a = A6("fcbb:bb00:2200::");
	ok(mrc_nl_local_route_add(nlb, &a, 48, w1), nlb, "B's local uSID route");
}

struct seen {
	bool found;
	struct mrc_nl_seg6local_info info;
};

static int find_cb(const struct mrc_nl_seg6local_info *info, void *arg)
{
	struct seen *s = arg;

	if (info->route.sid_len == 48 && info->route.sid.s6_addr[4] == 0x11) {
		s->found = true;
		s->info = *info;
	}
	return 0;
}

static void test_seg6local_and_counters(void **st)
{
	struct mrc_usid_block blk;
	struct mrc_nl_seg6local s = {
		.action = SEG6_LOCAL_ACTION_END, .next_csid = true,
		.lblen = 32, .nflen = 16, .counters = true,
	};
	struct mrc_nl_seg6local_counters c;
	struct seen seen = { false };
	uint16_t path[] = { 0x1100, 0x2200 };
	struct sockaddr_in6 to = { .sin6_family = AF_INET6, .sin6_port = htons(4791) };
	struct sockaddr_in6 me = { .sin6_family = AF_INET6, .sin6_port = htons(4791) };
	unsigned plen, npkts = 1 + (unsigned)rand() % 5, got = 0;
	int one = 1, tx, rx, saved;
	char buf[256];

	NEED_ROOT();
	mrc_usid_block_default(&blk);
	assert_int_equal(mrc_usid_node_prefix(&blk, 0x1100, &s.sid, &plen, NULL), 0);
	s.sid_len = (uint8_t)plen;
	ok(mrc_nl_link_index(nla, "sr0", &s.ifindex), nla, "sr0");
	ok(mrc_nl_seg6local_add(nla, &s, 0), nla, "seg6local End next-csid");
	assert_int_equal(mrc_nl_seg6local_add(nla, &s, 0), -EEXIST);
	ok(mrc_nl_seg6local_counters_get(nla, &s.sid, 48, 0, &c), nla, "counters");
	assert_int_equal(c.packets, 0);
	assert_int_equal(c.errors, 0);
	ok(mrc_nl_seg6local_dump(nla, 0, find_cb, &seen), nla, "dump");
	assert_true(seen.found);
	assert_true(seen.info.route.next_csid);
	assert_int_equal(seen.info.route.lblen, 32);
	assert_int_equal(seen.info.route.nflen, 16);
	assert_int_equal(seen.info.route.action, SEG6_LOCAL_ACTION_END);
	assert_int_equal(seen.info.route.ifindex, s.ifindex);
	assert_int_equal(seen.info.route.table, MRC_NL_TABLE_MAIN);
	assert_true(seen.info.has_counters);

	/* Without counters: -ENODATA; absent: -ENOENT. */
	{
		struct mrc_nl_seg6local s2 = s;

		s2.counters = false;
		s2.sid = A6("fcbb:bb00:1101::");
		ok(mrc_nl_seg6local_add(nla, &s2, 0), nla, "seg6local no count");
		assert_int_equal(mrc_nl_seg6local_counters_get(nla, &s2.sid, 48, 0, &c), -ENODATA);
		s2.sid = A6("fcbb:bb00:1102::");
		assert_int_equal(mrc_nl_seg6local_counters_get(nla, &s2.sid, 48, 0, &c), -ENOENT);
	}

	/* Sockets in B (they stay in B after the thread leaves). */
	ok(mrc_nl_netns_enter(ns_b, &saved), NULL, "enter B");
	tx = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	rx = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	ok(mrc_nl_netns_leave(saved), NULL, "leave B");
	assert_true(tx >= 0 && rx >= 0);
	/* The destination changes on the way: no UDP checksum (see DESIGN). */
	assert_int_equal(setsockopt(tx, SOL_UDP, UDP_NO_CHECK6_TX, &one, sizeof(one)), 0);
	assert_int_equal(setsockopt(rx, SOL_UDP, UDP_NO_CHECK6_RX, &one, sizeof(one)), 0);
	assert_int_equal(bind(rx, (struct sockaddr *)&me, sizeof(me)), 0);
	assert_int_equal(mrc_usid_encode(&blk, path, 2, &to.sin6_addr, NULL), 0);
	for (unsigned i = 0; i < npkts; i++)
		assert_int_equal(sendto(tx, "mrc", 3, 0, (struct sockaddr *)&to, sizeof(to)), 3);
	/* Wait for each packet on the socket, bounded. */
	while (got < npkts) {
		struct pollfd p = { .fd = rx, .events = POLLIN };
		struct sockaddr_in6 from;
		socklen_t fl = sizeof(from);

		if (poll(&p, 1, 5000) != 1)
			fail_msg("seed %u: %u of %u packets came back in 5 s", seed, got, npkts);
		while (recvfrom(rx, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl) == 3)
			got++;
	}
	assert_int_equal(got, npkts);
	ok(mrc_nl_seg6local_counters_get(nla, &s.sid, 48, 0, &c), nla, "counters after");
	assert_int_equal(c.packets, npkts);
	assert_int_equal(c.errors, 0);
	/* Bytes: the whole IPv6 packet, 40 + 8 + 3 each. */
	assert_int_equal(c.bytes, npkts * (40 + 8 + 3));
	close(tx);
	close(rx);
	ok(mrc_nl_route_del(nla, &s.sid, 48, 0), nla, "del seg6local");
	assert_int_equal(mrc_nl_seg6local_counters_get(nla, &s.sid, 48, 0, &c), -ENOENT);
}

static void test_errmsg(void **st)
{
	NEED_ROOT();
	/* The kernel explains a refused MTU through the extended ack. */
	assert_int_equal(mrc_nl_link_set_mtu(nla, "w0", 10), -EINVAL);
	if (!strcasestr(mrc_nl_errmsg(nla), "mtu"))
		fail_msg("extended-ack message \"%s\" does not name the MTU", mrc_nl_errmsg(nla));
	/* A success clears it. */
	ok(mrc_nl_link_set_mtu(nla, "w0", 1500), nla, "mtu 1500");
	assert_string_equal(mrc_nl_errmsg(nla), "");
}

int main(void)
{
	/* Order matters: each builds on the state the previous one left. */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sysctls),
		cmocka_unit_test(test_links),
		cmocka_unit_test(test_addrs_routes),
		cmocka_unit_test(test_seg6local_and_counters),
		cmocka_unit_test(test_errmsg),
	};
	const char *s = getenv("MRC_TEST_SEED");
	int rc;

	seed = s ? (unsigned)strtoul(s, NULL, 0) : (unsigned)time(NULL);
	srand(seed);
	rc = cmocka_run_group_tests_name("nl_kernel", tests, setup, teardown);
	if (rc)
		fprintf(stderr, "nl_kernel: failed with MRC_TEST_SEED=%u\n", seed);
	return rc;
}

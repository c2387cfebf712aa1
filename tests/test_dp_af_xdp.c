/* The af_xdp datapath without a NIC: the Ethernet/IPv6/UDP frame it builds
 * in UMEM parses back to what was built (addresses, port, ECN, lengths);
 * the parser refuses every truncation and inconsistent length and other
 * protocols and ports; open refuses loopback use, a missing interface and
 * bad datapath_args with a precise reason.  The real sockets are tested on
 * the emulated fabric (tests/root/xfer.sh with MRC_DATAPATH=af_xdp). */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "datapath/af_xdp.h"
#include "datapath/datapath.h"
#include "tests/support/skip.h"

#define PORT 4791

static const struct mrc__xdp_addrs A = {
	.src_mac = { 0x02, 0, 0, 0, 0, 0x01 }, .dst_mac = { 0x02, 0, 0, 0, 0, 0x02 },
	.sport = PORT,
};

static size_t build(uint8_t *f, const char *dst, uint16_t dport, size_t plen)
{
	struct mrc__xdp_addrs a = A;
	struct in6_addr d;
	inet_pton(AF_INET6, "fcbb:bb00:8000::", &a.src);
	inet_pton(AF_INET6, dst, &d);
	assert_int_equal(mrc__xdp_hdr_build(f, &a, &d, dport, plen), 0);
	for (size_t i = 0; i < plen; i++)
		f[MRC__XDP_HDR_LEN + i] = (uint8_t)(i * 7);
	return MRC__XDP_HDR_LEN + plen;
}

static void roundtrip(void **state)
{
	(void)state;
	static uint8_t f[MRC__XDP_HDR_LEN + 9000];
	const size_t sizes[] = { 0, 1, 100, 4152, 9000 };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = build(f, "fcbb:bb00:1000:2001:1003:8007::", PORT, sizes[i]);
		assert_memory_equal(f, A.dst_mac, 6);      /* Ethernet dst: the next hop */
		assert_memory_equal(f + 6, A.src_mac, 6);
		assert_int_equal(f[14] >> 4, 6);
		/* traffic class ECT(0), hop limit 64, UDP checksum zero */
		assert_int_equal(((f[14] & 0xf) << 4 | f[15] >> 4), 0x02);
		assert_int_equal(f[14 + 7], 64);
		assert_int_equal(f[60] | f[61], 0);
		struct mrc__xdp_pkt p;
		assert_int_equal(mrc__xdp_parse(f, n, PORT, &p), 0);
		assert_int_equal(p.off, MRC__XDP_HDR_LEN);
		assert_int_equal(p.len, sizes[i]);
		assert_int_equal(p.sport, PORT);
		assert_int_equal(p.ecn_ce, 0);
		struct in6_addr s;
		inet_pton(AF_INET6, "fcbb:bb00:8000::", &s);
		assert_memory_equal(&p.src, &s, 16);
		/* Ethernet padding after the datagram is not payload. */
		assert_int_equal(mrc__xdp_parse(f, n + 4 > sizeof(f) ? n : n + 4, PORT, &p), 0);
		assert_int_equal(p.len, sizes[i]);
	}
	/* a switch's CE mark is reported */
	size_t n = build(f, "fcbb:bb00:8007::", PORT, 10);
	f[15] |= 0x30;
	struct mrc__xdp_pkt p;
	assert_int_equal(mrc__xdp_parse(f, n, PORT, &p), 0);
	assert_int_equal(p.ecn_ce, 1);
	/* the destination address is the one given (the uSID path) */
	struct in6_addr d;
	inet_pton(AF_INET6, "fcbb:bb00:8007::", &d);
	assert_memory_equal(f + 14 + 24, &d, 16);
	assert_int_equal(mrc__xdp_hdr_build(f, &A, &d, PORT, 0x10000), -EMSGSIZE);
}

static void refuses(void **state)
{
	(void)state;
	uint8_t f[MRC__XDP_HDR_LEN + 64], g[sizeof(f)];
	size_t n = build(f, "fcbb:bb00:8007::", PORT, 64);
	struct mrc__xdp_pkt p;
	/* every truncation */
	for (size_t l = 0; l < MRC__XDP_HDR_LEN + 64; l++)
		assert_true(mrc__xdp_parse(f, l, PORT, &p) < 0);
	/* another port, another protocol, another ethertype */
	assert_int_equal(mrc__xdp_parse(f, n, PORT + 1, &p), -EPROTO);
	memcpy(g, f, n);
	g[14 + 6] = 6;
	assert_int_equal(mrc__xdp_parse(g, n, PORT, &p), -EPROTO);
	memcpy(g, f, n);
	g[12] = 0x08, g[13] = 0x00;
	assert_int_equal(mrc__xdp_parse(g, n, PORT, &p), -EPROTO);
	assert_int_equal(mrc__xdp_parse(g, 20, PORT, &p), -EPROTO);
	/* IP version 4 in an IPv6 ethertype */
	memcpy(g, f, n);
	g[14] = 0x45;
	assert_int_equal(mrc__xdp_parse(g, n, PORT, &p), -EBADMSG);
	/* IPv6 payload length longer than the frame, shorter than UDP, zero */
	const uint16_t bad_ip[] = { 64 + 8 + 1, 7, 0 };
	for (size_t i = 0; i < 3; i++) {
		memcpy(g, f, n);
		g[18] = (uint8_t)(bad_ip[i] >> 8), g[19] = (uint8_t)bad_ip[i];
		assert_int_equal(mrc__xdp_parse(g, n, PORT, &p), -EBADMSG);
	}
	/* UDP length beyond the IPv6 payload, below its header */
	const uint16_t bad_udp[] = { 64 + 8 + 1, 7, 0 };
	for (size_t i = 0; i < 3; i++) {
		memcpy(g, f, n);
		g[58] = (uint8_t)(bad_udp[i] >> 8), g[59] = (uint8_t)bad_udp[i];
		assert_int_equal(mrc__xdp_parse(g, n, PORT, &p), -EBADMSG);
	}
	/* a shorter UDP length inside a longer IPv6 payload: the UDP length wins */
	memcpy(g, f, n);
	g[59] = 8 + 10;
	assert_int_equal(mrc__xdp_parse(g, n, PORT, &p), 0);
	assert_int_equal(p.len, 10);
}

static int built_in(void)
{
	char why[256] = "";
	struct mrc_dp_plane pl = { .ifname = "" };
	struct mrc_dp_cfg c = { .planes = &pl, .nplanes = 1, .port = PORT };
	struct mrc_dp *dp;
	mrc_dp_open(&dp, "af_xdp", &c, why, sizeof(why));
	return !strstr(why, "not built in");
}

static void open_errors(void **state)
{
	(void)state;
	if (!built_in())
		MRC_SKIP("af_xdp not built in (libxdp-dev, libbpf-dev or clang missing)");
	char why[256] = "";
	struct mrc_dp *dp = NULL;
	struct mrc_dp_plane pl = { .ifname = "" };
	struct mrc_dp_cfg c = { .planes = &pl, .nplanes = 1, .port = PORT };
	assert_int_equal(mrc_dp_open(&dp, "af_xdp", &c, why, sizeof(why)), -EOPNOTSUPP);
	assert_non_null(strstr(why, "no loopback mode"));
	snprintf(pl.ifname, sizeof(pl.ifname), "mrcnosuch0");
	assert_int_equal(mrc_dp_open(&dp, "af_xdp", &c, why, sizeof(why)), -ENODEV);
	assert_non_null(strstr(why, "mrcnosuch0"));
	const char *bad[] = { "xdp_mode=turbo", "bind=fast", "queue=x", "queue=99999", "nokey",
			      "xdp_mode=skb,color=red" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		c.args = bad[i];
		why[0] = 0;
		assert_int_equal(mrc_dp_open(&dp, "af_xdp", &c, why, sizeof(why)), -EINVAL);
		assert_non_null(strstr(why, "datapath_args"));
	}
	/* good args get as far as the interface */
	c.args = "xdp_mode=skb,bind=copy,queue=0";
	assert_int_equal(mrc_dp_open(&dp, "af_xdp", &c, why, sizeof(why)), -ENODEV);
}

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(roundtrip),
		cmocka_unit_test(refuses),
		cmocka_unit_test(open_errors),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}

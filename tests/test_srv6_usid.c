/* uSID blocks, containers, the NEXT-C-SID shift, and multi-container paths. */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "srv6/usid.h"

static unsigned seed;

static struct in6_addr A(const char *s)
{
	struct in6_addr a;

	assert_int_equal(inet_pton(AF_INET6, s, &a), 1);
	return a;
}

static void assert_addr(const struct in6_addr *got, const char *want)
{
	char s[INET6_ADDRSTRLEN];

	inet_ntop(AF_INET6, got, s, sizeof(s));
	assert_string_equal(s, want);
}

/* Independent model of a container: the block's words then the uSIDs. */
static struct in6_addr model_container(const struct mrc_usid_block *b,
				       const uint16_t *u, size_t n)
{
	struct in6_addr a = b->prefix;
	unsigned w = b->bits / 16;

	for (size_t i = 0; i < n; i++) {
		a.s6_addr[2 * (w + i)] = (uint8_t)(u[i] >> 8);
		a.s6_addr[2 * (w + i) + 1] = (uint8_t)u[i];
	}
	return a;
}

static uint16_t rand_usid(void)
{
	uint16_t u;

	do
		u = (uint16_t)rand();
	while (u == 0);
	return u;
}

static void test_block_default(void **st)
{
	struct mrc_usid_block b, p;
	char buf[MRC_USID_BLOCK_STRLEN];

	mrc_usid_block_default(&b);
	assert_int_equal(mrc_usid_block_check(&b, NULL), 0);
	assert_int_equal(mrc_usid_block_parse(&p, MRC_USID_BLOCK_DEFAULT, NULL), 0);
	assert_memory_equal(&b, &p, sizeof(b));
	assert_int_equal(mrc_usid_block_format(&b, buf, sizeof(buf)), 0);
	assert_string_equal(buf, MRC_USID_BLOCK_DEFAULT);
	assert_int_equal(mrc_usid_block_capacity(&b), (128 - 32) / 16);
	assert_int_equal(mrc_usid_block_format(&b, buf, strlen(MRC_USID_BLOCK_DEFAULT)), -ENOSPC);
}

static void test_block_lengths(void **st)
{
	static const char *ok[] = { "fcbb::/16", "fcbb:bb00::/32", "fcbb:bb00:1::/48",
				    "2001:db8:0:1::/64", "fc00:0:0:1::/64" };
	struct mrc_usid_block b;
	char buf[MRC_USID_BLOCK_STRLEN];

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		struct mrc_srv6_err e = { "" };

		assert_int_equal(mrc_usid_block_parse(&b, ok[i], &e), 0);
		assert_int_equal(mrc_usid_block_capacity(&b), (128u - b.bits) / 16);
		assert_int_equal(mrc_usid_block_format(&b, buf, sizeof(buf)), 0);
		assert_string_equal(buf, ok[i]);
	}
}

static void test_block_errors(void **st)
{
	static const struct { const char *s, *why; } bad[] = {
		{ "fcbb:bb00::", "missing /LENGTH" },
		{ "fcbb:bb00::/24", "must be 16, 32, 48 or 64" },
		{ "fcbb:bb00::/80", "must be 16, 32, 48 or 64" },
		{ "fcbb:bb00::/0", "leading zero" },
		{ "fcbb:bb00::/032", "leading zero" },
		{ "fcbb:bb00::/+32", "without sign" },
		{ "fcbb:bb00::/32 ", "bad length" },
		{ "fcbb:bb00::/3x", "bad length" },
		{ "fcbb:bb00::/99999999999999", "bad length" },
		{ " fcbb:bb00::/32", "not an IPv6 address" },
		{ "fcbb:bb00:1::/32", "bits set after its length /32" },
		{ "fcbb:bb01::/16", "bits set after its length /16" },
		{ "::/32", "unspecified" },
		{ "/32", "bad address part" },
		{ "10.0.0.0/16", "not an IPv6 address" },
		{ "fcbb:bb00::%eth0/32", "not an IPv6 address" },
	};
	struct mrc_usid_block b;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct mrc_srv6_err e = { "" };

		assert_int_equal(mrc_usid_block_parse(&b, bad[i].s, &e), -EINVAL);
		if (!strstr(e.msg, bad[i].why))
			fail_msg("\"%s\": message \"%s\" lacks \"%s\"", bad[i].s, e.msg, bad[i].why);
	}
	/* A hand-built block is checked too. */
	mrc_usid_block_default(&b);
	b.usid_bits = 32;
	assert_int_equal(mrc_usid_block_check(&b, NULL), -EINVAL);
	assert_int_equal(mrc_usid_block_capacity(&b), 0);
}

/* RFC 9800 style example: fcbb:bb00 block, path 0x1100 0x2200 0x3300. */
static void test_encode_example(void **st)
{
	struct mrc_usid_block b;
	uint16_t u[] = { 0x1100, 0x2200, 0x3300 };
	struct in6_addr a, p;
	unsigned plen;

	mrc_usid_block_default(&b);
	assert_int_equal(mrc_usid_encode(&b, u, 3, &a, NULL), 0);
	assert_addr(&a, "fcbb:bb00:1100:2200:3300::");
	assert_int_equal(mrc_usid_node_prefix(&b, 0x1100, &p, &plen, NULL), 0);
	assert_addr(&p, "fcbb:bb00:1100::");
	assert_int_equal(plen, 48);
	assert_int_equal(mrc_usid_node_prefix(&b, 0, &p, &plen, NULL), -EINVAL);
}

static void test_encode_errors(void **st)
{
	struct mrc_usid_block b;
	uint16_t u[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	struct in6_addr a;
	struct mrc_srv6_err e = { "" };

	mrc_usid_block_default(&b);
	assert_int_equal(mrc_usid_encode(&b, u, 0, &a, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "empty"));
	assert_int_equal(mrc_usid_encode(&b, u, 7, &a, &e), -E2BIG);
	assert_non_null(strstr(e.msg, "at most 6"));
	u[2] = 0;
	assert_int_equal(mrc_usid_encode(&b, u, 4, &a, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "uSID 2 is 0x0000"));
	assert_int_equal(mrc_usid_encode(NULL, u, 1, &a, &e), -EINVAL);
}

static void test_decode_errors(void **st)
{
	static const struct { const char *a; int rc; const char *why; } bad[] = {
		{ "fcbb:bb01:1100::", -EINVAL, "not in the uSID block" },
		{ "fcbb:bb00::", -EINVAL, "holds no uSID" },
		{ "fcbb:bb00::1", -EINVAL, "holds no uSID" },
		{ "fcbb:bb00:1100:0:2200::", -EINVAL, "after End-of-Carrier" },
		{ "fcbb:bb00:1100::1", -EINVAL, "after End-of-Carrier" },
	};
	struct mrc_usid_block b;
	uint16_t u[8];
	size_t n;

	mrc_usid_block_default(&b);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct mrc_srv6_err e = { "" };
		struct in6_addr a = A(bad[i].a);

		assert_int_equal(mrc_usid_decode(&b, &a, u, 8, &n, &e), bad[i].rc);
		if (!strstr(e.msg, bad[i].why))
			fail_msg("%s: message \"%s\" lacks \"%s\"", bad[i].a, e.msg, bad[i].why);
		assert_int_equal(mrc_usid_shift(&b, &a), -EINVAL);
	}
	{
		struct in6_addr a = A("fcbb:bb00:1:2:3::");
		struct mrc_srv6_err e = { "" };

		assert_int_equal(mrc_usid_decode(&b, &a, u, 2, &n, &e), -ENOSPC);
	}
}

/* Round trip and shift over random lists under every block length. */
static void test_roundtrip_shift_random(void **st)
{
	static const char *blocks[] = { "fcbb::/16", "fcbb:bb00::/32", "fcbb:bb00:7::/48",
					"2001:db8:0:9::/64" };

	for (int iter = 0; iter < 2000; iter++) {
		struct mrc_usid_block b;
		uint16_t u[8], d[8];
		struct in6_addr a, m;
		size_t n, cap, got;
		uint16_t act;

		assert_int_equal(mrc_usid_block_parse(&b, blocks[rand() % 4], NULL), 0);
		cap = mrc_usid_block_capacity(&b);
		n = 1 + (size_t)rand() % cap;
		for (size_t i = 0; i < n; i++)
			u[i] = rand_usid();
		assert_int_equal(mrc_usid_encode(&b, u, n, &a, NULL), 0);
		m = model_container(&b, u, n);
		if (memcmp(&a, &m, sizeof(a)))
			fail_msg("seed %u iter %d: encode differs from model", seed, iter);
		assert_int_equal(mrc_usid_decode(&b, &a, d, 8, &got, NULL), 0);
		assert_int_equal(got, n);
		assert_memory_equal(d, u, n * sizeof(u[0]));
		/* Each hop sees its own uSID active, then shifts it away. */
		for (size_t hop = 0; hop < n; hop++) {
			assert_int_equal(mrc_usid_active(&b, &a, &act), 0);
			if (act != u[hop])
				fail_msg("seed %u iter %d hop %zu: active %04x want %04x",
					 seed, iter, hop, act, u[hop]);
			m = model_container(&b, u + hop, n - hop);
			assert_memory_equal(&a, &m, sizeof(a));
			assert_int_equal(mrc_usid_shift(&b, &a), hop + 1 < n ? 1 : 0);
		}
		/* A spent container is left unchanged. */
		m = model_container(&b, u + n - 1, 1);
		assert_memory_equal(&a, &m, sizeof(a));
	}
}

static void test_path_one_container(void **st)
{
	struct mrc_usid_block b;
	uint16_t u[] = { 0x1, 0x2, 0x3, 0x4 }, d[8];
	struct mrc_srv6_encap p;
	size_t n;

	mrc_usid_block_default(&b);
	assert_int_equal(mrc_srv6_encode(&b, u, 4, IPPROTO_UDP, &p, NULL), 0);
	assert_false(p.has_srh);
	assert_addr(&p.dst, "fcbb:bb00:1:2:3:4::");
	assert_int_equal(mrc_srv6_decode(&b, &p.dst, NULL, d, 8, &n, NULL), 0);
	assert_int_equal(n, 4);
	assert_memory_equal(d, u, sizeof(u));
}

/* Long random paths: pack, walk hop by hop with advance, unpack. */
static void test_path_multi_random(void **st)
{
	static uint16_t u[MRC_SRV6_ENCAP_MAX_USIDS], d[MRC_SRV6_ENCAP_MAX_USIDS];
	static struct mrc_srv6_encap p;
	struct mrc_usid_block b;
	struct mrc_srv6_err e;

	mrc_usid_block_default(&b);
	for (int iter = 0; iter < 300; iter++) {
		size_t n = 1 + (size_t)rand() % (iter < 10 ? MRC_SRV6_ENCAP_MAX_USIDS / 7 * 6 : 40);
		size_t cap = mrc_usid_block_capacity(&b), k = (n + cap - 1) / cap, got;
		uint16_t act;

		for (size_t i = 0; i < n; i++)
			u[i] = rand_usid();
		assert_int_equal(mrc_srv6_encode(&b, u, n, IPPROTO_UDP, &p, &e), 0);
		assert_int_equal(p.has_srh, k > 1);
		if (p.has_srh) {
			assert_int_equal(p.srh.nsegs, k);
			assert_int_equal(p.srh.segments_left, k - 1);
			assert_int_equal(p.srh.nexthdr, IPPROTO_UDP);
			assert_memory_equal(&p.dst, &p.srh.segs[k - 1], sizeof(p.dst));
		}
		assert_int_equal(mrc_srv6_decode(&b, &p.dst, p.has_srh ? &p.srh : NULL,
						      d, n, &got, &e), 0);
		assert_int_equal(got, n);
		assert_memory_equal(d, u, n * sizeof(u[0]));
		for (size_t hop = 0; hop < n; hop++) {
			int rc;

			assert_int_equal(mrc_usid_active(&b, &p.dst, &act), 0);
			if (act != u[hop])
				fail_msg("seed %u iter %d hop %zu/%zu: active %04x want %04x",
					 seed, iter, hop, n, act, u[hop]);
			/* What is left ahead always decodes to the rest of the list. */
			assert_int_equal(mrc_srv6_decode(&b, &p.dst, p.has_srh ? &p.srh : NULL,
							      d, n, &got, &e), 0);
			assert_int_equal(got, n - hop);
			assert_memory_equal(d, u + hop, got * sizeof(u[0]));
			rc = mrc_srv6_advance(&b, &p.dst, p.has_srh ? &p.srh : NULL);
			assert_int_equal(rc, hop + 1 < n ? 1 : 0);
		}
	}
}

static void test_path_errors(void **st)
{
	static struct mrc_srv6_encap p;
	static uint16_t u[MRC_SRV6_ENCAP_MAX_USIDS + 1];
	struct mrc_usid_block b;
	struct mrc_srv6_err e = { "" };
	uint16_t d[4];
	size_t n;

	mrc_usid_block_default(&b);
	for (size_t i = 0; i < sizeof(u) / sizeof(u[0]); i++)
		u[i] = (uint16_t)(i + 1);
	/* /32 holds 6 per container: 127 * 6 fit, one more does not. */
	assert_int_equal(mrc_srv6_encode(&b, u, MRC_SRH_MAX_SEGS * 6, 17, &p, &e), 0);
	assert_int_equal(mrc_srv6_encode(&b, u, MRC_SRH_MAX_SEGS * 6 + 1, 17, &p, &e), -E2BIG);
	assert_non_null(strstr(e.msg, "at most 127"));
	assert_int_equal(mrc_srv6_encode(&b, u, 0, 17, &p, &e), -EINVAL);
	u[8] = 0;
	assert_int_equal(mrc_srv6_encode(&b, u, 12, 17, &p, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "uSID 2 is 0x0000"));
	u[8] = 9;
	/* Room for fewer than the path holds. */
	assert_int_equal(mrc_srv6_encode(&b, u, 12, 17, &p, &e), 0);
	assert_int_equal(mrc_srv6_decode(&b, &p.dst, &p.srh, d, 4, &n, &e), -ENOSPC);
	/* A corrupt SRH segment is named in the message. */
	p.srh.segs[0].s6_addr[1] ^= 1;
	assert_int_equal(mrc_srv6_decode(&b, &p.dst, &p.srh, u, 12, &n, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "SRH segment 0"));
	p.srh.segments_left = 2;
	assert_int_equal(mrc_srv6_decode(&b, &p.dst, &p.srh, u, 12, &n, &e), -EINVAL);
	assert_int_equal(mrc_srv6_advance(&b, &p.dst, &p.srh), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_block_default),
		cmocka_unit_test(test_block_lengths),
		cmocka_unit_test(test_block_errors),
		cmocka_unit_test(test_encode_example),
		cmocka_unit_test(test_encode_errors),
		cmocka_unit_test(test_decode_errors),
		cmocka_unit_test(test_roundtrip_shift_random),
		cmocka_unit_test(test_path_one_container),
		cmocka_unit_test(test_path_multi_random),
		cmocka_unit_test(test_path_errors),
	};
	const char *s = getenv("MRC_TEST_SEED");
	int rc;

	seed = s ? (unsigned)strtoul(s, NULL, 0) : (unsigned)time(NULL);
	srand(seed);
	rc = cmocka_run_group_tests_name("srv6_usid", tests, NULL, NULL);
	if (rc)
		fprintf(stderr, "srv6_usid: failed with MRC_TEST_SEED=%u\n", seed);
	return rc;
}

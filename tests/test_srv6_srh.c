/* SRH (RFC 8754) encoder and strict decoder. */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/ipv6.h>
#include <linux/seg6.h>
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

static void fill_random(struct mrc_srh *h, unsigned nsegs)
{
	memset(h, 0, sizeof(*h));
	h->nexthdr = (uint8_t)rand();
	h->flags = (uint8_t)rand();
	h->tag = (uint16_t)rand();
	h->nsegs = (uint8_t)nsegs;
	h->segments_left = (uint8_t)(rand() % nsegs);
	for (unsigned i = 0; i < nsegs; i++)
		for (int j = 0; j < 16; j++)
			h->segs[i].s6_addr[j] = (uint8_t)rand();
}

/* Encoding checked against the kernel's own struct ipv6_sr_hdr layout. */
static void test_encode_matches_kernel_layout(void **st)
{
	static uint8_t buf[MRC_SRH_MAX_LEN];
	struct mrc_srh h;

	for (int iter = 0; iter < 500; iter++) {
		unsigned nsegs = 1 + (unsigned)rand() % MRC_SRH_MAX_SEGS;
		const struct ipv6_sr_hdr *k = (const void *)buf;
		size_t len = 0;

		fill_random(&h, nsegs);
		assert_int_equal(mrc_srh_encode(&h, buf, sizeof(buf), &len, NULL), 0);
		if (len != 8 + 16u * nsegs)
			fail_msg("seed %u: len %zu for %u segments", seed, len, nsegs);
		assert_int_equal(mrc_srh_wire_len(nsegs), len);
		assert_int_equal(k->nexthdr, h.nexthdr);
		assert_int_equal((k->hdrlen + 1) * 8, len);
		assert_int_equal(k->type, IPV6_SRCRT_TYPE_4);
		assert_int_equal(k->segments_left, h.segments_left);
		assert_int_equal(k->first_segment, nsegs - 1);
		assert_int_equal(k->flags, h.flags);
		assert_int_equal(ntohs(k->tag), h.tag);
		assert_memory_equal(k->segments, h.segs, 16u * nsegs);
	}
}

static void test_roundtrip_random(void **st)
{
	static uint8_t buf[MRC_SRH_MAX_LEN];
	static struct mrc_srh h, d;

	for (int iter = 0; iter < 500; iter++) {
		unsigned nsegs = 1 + (unsigned)rand() % MRC_SRH_MAX_SEGS;
		size_t len, used;
		struct mrc_srv6_err e = { "" };

		fill_random(&h, nsegs);
		assert_int_equal(mrc_srh_encode(&h, buf, sizeof(buf), &len, NULL), 0);
		if (mrc_srh_decode(buf, len, &d, &used, &e))
			fail_msg("seed %u: decode failed: %s", seed, e.msg);
		assert_int_equal(used, len);
		assert_memory_equal(&h, &d, sizeof(h));
		/* Trailing bytes (the payload) are not part of the header. */
		assert_int_equal(mrc_srh_decode(buf, sizeof(buf), &d, &used, &e), 0);
		assert_int_equal(used, len);
		/* Any truncation is refused. */
		size_t cut = (size_t)rand() % len;
		assert_int_equal(mrc_srh_decode(buf, cut, &d, &used, &e), -EBADMSG);
	}
}

static void test_encode_errors(void **st)
{
	static struct mrc_srh h;
	uint8_t buf[64];
	size_t len;
	struct mrc_srv6_err e = { "" };

	fill_random(&h, 2);
	h.segments_left = 2;
	assert_int_equal(mrc_srh_encode(&h, buf, sizeof(buf), &len, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "segments_left 2"));
	h.segments_left = 1;
	h.nsegs = 0;
	assert_int_equal(mrc_srh_encode(&h, buf, sizeof(buf), &len, &e), -EINVAL);
	h.nsegs = MRC_SRH_MAX_SEGS + 1;
	assert_int_equal(mrc_srh_encode(&h, buf, sizeof(buf), &len, &e), -EINVAL);
	h.nsegs = 4;
	assert_int_equal(mrc_srh_encode(&h, buf, sizeof(buf), &len, &e), -ENOSPC);
	assert_non_null(strstr(e.msg, "needs 72"));
	h.nsegs = 2;
	h.tlv_len = 8;
	assert_int_equal(mrc_srh_encode(&h, buf, sizeof(buf), &len, &e), -EINVAL);
}

/* A valid 2-segment header of hdrlen 4 + extra 8-octet units of TLV area. */
static size_t base(uint8_t *b, unsigned extra_units)
{
	memset(b, 0, 128);
	b[0] = IPPROTO_UDP;
	b[1] = (uint8_t)(4 + extra_units);
	b[2] = 4;
	b[3] = 1;
	b[4] = 1;
	return 40 + 8u * extra_units;
}

/* Hand-built malformed headers, each with the reason it must give. */
static void test_decode_errors(void **st)
{
	static const struct {
		unsigned extra;          /* TLV units */
		int off1, val1, off2, val2; /* bytes to set (-1: none) */
		long lendelta;           /* buffer length change */
		const char *why;
	} c[] = {
		{ 0, -1, 0, -1, 0, -33, "shorter than the 8-byte" },
		{ 0, 2, 0, -1, 0, 0, "routing type 0" },
		{ 0, 2, 2, -1, 0, 0, "routing type 2" },
		{ 0, 1, 5, -1, 0, 0, "only 40 present" },
		{ 0, -1, 0, -1, 0, -1, "only 39 present" },
		{ 0, 4, 2, -1, 0, 0, "Last Entry 2: 3 segments need 56" },
		{ 0, 1, 3, -1, 0, -8, "Last Entry 1: 2 segments need 40 bytes, header has 32" },
		{ 0, 3, 2, -1, 0, 0, "Segments Left 2 exceeds Last Entry 1" },
		{ 1, 40, 4, 41, 7, 0, "length 7 runs past" },       /* PadN too long */
		{ 1, 40, 0, 41, 0, 0, NULL },                        /* Pad1s: fine */
		{ 1, 40, 4, 41, 6, 0, NULL },                        /* PadN exact: fine */
		{ 1, 40, 0, 47, 9, 0, "TLV at byte 47: truncated" }, /* lone type byte */
		{ 1, 40, 5, 41, 0, 0, NULL },                        /* empty TLV then pads */
		{ 1, 40, 5, 41, 255, 0, "TLV type 5 at byte 40" },
	};
	uint8_t b[128];
	struct mrc_srh h;
	size_t used;

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct mrc_srv6_err e = { "" };
		size_t len = base(b, c[i].extra);
		int rc;

		if (c[i].off1 >= 0)
			b[c[i].off1] = (uint8_t)c[i].val1;
		if (c[i].off2 >= 0)
			b[c[i].off2] = (uint8_t)c[i].val2;
		rc = mrc_srh_decode(b, (size_t)((long)len + c[i].lendelta), &h, &used, &e);
		if (!c[i].why) {
			if (rc)
				fail_msg("case %zu: refused: %s", i, e.msg);
			assert_int_equal(used, len);
			assert_int_equal(h.tlv_len, 8 * c[i].extra);
			continue;
		}
		if (rc != -EBADMSG || !strstr(e.msg, c[i].why))
			fail_msg("case %zu: rc %d message \"%s\", want \"%s\"", i, rc, e.msg, c[i].why);
	}
	assert_int_equal(mrc_srh_decode(NULL, 8, &h, &used, NULL), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_encode_matches_kernel_layout),
		cmocka_unit_test(test_roundtrip_random),
		cmocka_unit_test(test_encode_errors),
		cmocka_unit_test(test_decode_errors),
	};
	const char *s = getenv("MRC_TEST_SEED");
	int rc;

	seed = s ? (unsigned)strtoul(s, NULL, 0) : (unsigned)time(NULL);
	srand(seed);
	rc = cmocka_run_group_tests_name("srv6_srh", tests, NULL, NULL);
	if (rc)
		fprintf(stderr, "srv6_srh: failed with MRC_TEST_SEED=%u\n", seed);
	return rc;
}

/* libFuzzer target for the srv6 decoders: SRH wire parser, uSID container
 * decoding/shift, block prefix parser, path decode/advance, and the
 * netlink parsers of seg6local routes and link messages.
 *
 * Input layout: byte 0 selects the block length (16..64), the rest is an
 * SRH candidate; its first 16 bytes double as a destination address. */
#include <errno.h>
#include <linux/netlink.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "srv6/linkmon.h"
#include "srv6/nl.h"
#include "srv6/usid.h"

static void check_container(const struct mrc_usid_block *b, struct in6_addr a)
{
	uint16_t u[8], u2[8];
	size_t n = 0, n2 = 0;
	struct in6_addr back;

	if (mrc_usid_decode(b, &a, u, 8, &n, NULL) == 0) {
		/* What decodes re-encodes to the same address. */
		if (n == 0 || mrc_usid_encode(b, u, n, &back, NULL) ||
		    memcmp(&back, &a, sizeof(a)))
			abort();
		for (size_t hop = 0; hop < n; hop++) {
			int rc = mrc_usid_shift(b, &a);

			if (rc != (hop + 1 < n ? 1 : 0))
				abort();
		}
		if (mrc_usid_decode(b, &a, u2, 8, &n2, NULL) || n2 != 1 || u2[0] != u[n - 1])
			abort();
	} else if (mrc_usid_shift(b, &a) != -EINVAL) {
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct mrc_srh h, h2;
	static uint8_t out[MRC_SRH_MAX_LEN];
	static uint16_t usids[MRC_SRV6_ENCAP_MAX_USIDS];
	struct mrc_usid_block b;
	struct mrc_srv6_err err;
	struct in6_addr a;
	size_t used, n, outlen;
	char str[80];

	if (size < 1)
		return 0;
	mrc_usid_block_default(&b);
	b.bits = (uint8_t)(16 * (1 + data[0] % 4));
	if (b.bits == 16)   /* fcbb::/16: no block bit after the length */
		b.prefix.s6_addr[2] = b.prefix.s6_addr[3] = 0;
	data++;
	size--;

	/* Block prefix text parser on a bounded string. */
	n = size < sizeof(str) - 1 ? size : sizeof(str) - 1;
	memcpy(str, data, n);
	str[n] = '\0';
	{
		struct mrc_usid_block pb;

		if (mrc_usid_block_parse(&pb, str, &err) == 0 &&
		    mrc_usid_block_format(&pb, str, sizeof(str)) != 0)
			abort();
	}

	if (size >= 16) {
		memcpy(&a, data, 16);
		check_container(&b, a);
	}

	if (mrc_srh_decode(data, size, &h, &used, &err) == 0) {
		if (used > size || used < mrc_srh_wire_len(h.nsegs))
			abort();
		/* Re-encoding (without TLVs) and decoding gives the same header. */
		h.tlv_len = 0;
		if (mrc_srh_encode(&h, out, sizeof(out), &outlen, &err) ||
		    mrc_srh_decode(out, outlen, &h2, &used, &err) ||
		    memcmp(&h, &h2, sizeof(h)))
			abort();
		a = h.segs[h.segments_left];
		if (mrc_srv6_decode(&b, &a, &h, usids, MRC_SRV6_ENCAP_MAX_USIDS, &n, &err) == 0) {
			size_t hops = 0;
			int rc;

			while ((rc = mrc_srv6_advance(&b, &a, &h)) == 1)
				hops++;
			if (rc != 0 || hops + 1 != n)
				abort();
		}
	}

	/* Netlink parsers on the raw bytes as one message. */
	if (size >= NLMSG_HDRLEN && size < 65536) {
		uint8_t *copy = malloc(size);
		struct nlmsghdr *nh = (struct nlmsghdr *)copy;
		struct mrc_nl_seg6local_info info;
		struct mrc_linkmon_event ev;

		memcpy(copy, data, size);
		if (nh->nlmsg_len > size)
			nh->nlmsg_len = (uint32_t)size;
		(void)mrc_nl_parse_seg6local(nh, &info);
		(void)mrc_linkmon_parse(nh, &ev);
		free(copy);
	}
	return 0;
}

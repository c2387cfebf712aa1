/* uSID containers: block handling, pack/unpack, and the NEXT-C-SID shift.
 * Block and uSID lengths are multiples of 16 bits, so an address is handled
 * as eight big-endian 16-bit words: the block is words [0, bw), the uSIDs
 * are words [bw, 8). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "srv6/usid.h"
#include "srv6/usid_internal.h"

void mrc__srv6_set_err(struct mrc_srv6_err *err, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
}

uint16_t mrc__usid_a6_word(const struct in6_addr *a, unsigned i)
{
	return (uint16_t)(a->s6_addr[2 * i] << 8 | a->s6_addr[2 * i + 1]);
}

void mrc__usid_a6_set_word(struct in6_addr *a, unsigned i, uint16_t v)
{
	a->s6_addr[2 * i] = (uint8_t)(v >> 8);
	a->s6_addr[2 * i + 1] = (uint8_t)v;
}

void mrc_usid_block_default(struct mrc_usid_block *b)
{
	memset(b, 0, sizeof(*b));
	b->prefix.s6_addr[0] = 0xfc;
	b->prefix.s6_addr[1] = 0xbb;
	b->prefix.s6_addr[2] = 0xbb;
	b->bits = MRC_USID_BLOCK_BITS_DEFAULT;
	b->usid_bits = MRC_USID_BITS;
}

static int check_block(const struct in6_addr *prefix, unsigned bits,
		       unsigned usid_bits, struct mrc_srv6_err *err)
{
	static const struct in6_addr zero;

	if (bits < MRC_USID_BLOCK_BITS_MIN || bits > MRC_USID_BLOCK_BITS_MAX ||
	    bits % MRC_USID_BITS) {
		mrc__srv6_set_err(err, "block length %u: must be 16, 32, 48 or 64 bits", bits);
		return -EINVAL;
	}
	if (usid_bits != MRC_USID_BITS) {
		mrc__srv6_set_err(err, "uSID length %u: only 16-bit uSIDs are supported", usid_bits);
		return -EINVAL;
	}
	for (unsigned i = bits / 16; i < 8; i++) {
		if (mrc__usid_a6_word(prefix, i)) {
			mrc__srv6_set_err(err, "block has bits set after its length /%u", bits);
			return -EINVAL;
		}
	}
	if (!memcmp(prefix, &zero, sizeof(zero))) {
		mrc__srv6_set_err(err, "block is the unspecified address ::");
		return -EINVAL;
	}
	return 0;
}

int mrc_usid_block_check(const struct mrc_usid_block *b, struct mrc_srv6_err *err)
{
	if (!b) {
		mrc__srv6_set_err(err, "no block");
		return -EINVAL;
	}
	return check_block(&b->prefix, b->bits, b->usid_bits, err);
}

int mrc_usid_block_init(struct mrc_usid_block *b, const struct in6_addr *prefix,
			unsigned bits, struct mrc_srv6_err *err)
{
	int rc;

	if (!b || !prefix) {
		mrc__srv6_set_err(err, "no block or prefix");
		return -EINVAL;
	}
	rc = check_block(prefix, bits, MRC_USID_BITS, err);
	if (rc)
		return rc;
	memset(b, 0, sizeof(*b));
	b->prefix = *prefix;
	b->bits = (uint8_t)bits;
	b->usid_bits = MRC_USID_BITS;
	return 0;
}

int mrc_usid_block_parse(struct mrc_usid_block *b, const char *s,
			 struct mrc_srv6_err *err)
{
	char addr[INET6_ADDRSTRLEN];
	struct in6_addr a;
	const char *slash, *p;
	size_t alen;
	unsigned bits = 0;

	if (!b || !s) {
		mrc__srv6_set_err(err, "no block string");
		return -EINVAL;
	}
	slash = strchr(s, '/');
	if (!slash) {
		mrc__srv6_set_err(err, "block \"%.60s\": missing /LENGTH", s);
		return -EINVAL;
	}
	alen = (size_t)(slash - s);
	if (alen == 0 || alen >= sizeof(addr)) {
		mrc__srv6_set_err(err, "block \"%.60s\": bad address part", s);
		return -EINVAL;
	}
	memcpy(addr, s, alen);
	addr[alen] = '\0';
	/* inet_pton rejects spaces, zone ids and embedded garbage. */
	if (inet_pton(AF_INET6, addr, &a) != 1) {
		mrc__srv6_set_err(err, "block \"%.60s\": \"%s\" is not an IPv6 address", s, addr);
		return -EINVAL;
	}
	p = slash + 1;
	if (*p < '1' || *p > '9') {
		mrc__srv6_set_err(err, "block \"%.60s\": length must be a decimal number without sign or leading zero", s);
		return -EINVAL;
	}
	for (; *p; p++) {
		if (*p < '0' || *p > '9' || bits > 128) {
			mrc__srv6_set_err(err, "block \"%.60s\": bad length", s);
			return -EINVAL;
		}
		bits = bits * 10 + (unsigned)(*p - '0');
	}
	return mrc_usid_block_init(b, &a, bits, err);
}

int mrc_usid_block_format(const struct mrc_usid_block *b, char *buf, size_t len)
{
	char addr[INET6_ADDRSTRLEN];
	int n;

	if (!buf || mrc_usid_block_check(b, NULL))
		return -EINVAL;
	if (!inet_ntop(AF_INET6, &b->prefix, addr, sizeof(addr)))
		return -EINVAL;
	n = snprintf(buf, len, "%s/%u", addr, b->bits);
	if (n < 0 || (size_t)n >= len)
		return -ENOSPC;
	return 0;
}

unsigned mrc_usid_block_capacity(const struct mrc_usid_block *b)
{
	if (mrc_usid_block_check(b, NULL))
		return 0;
	return (128u - b->bits) / b->usid_bits;
}

int mrc_usid_node_prefix(const struct mrc_usid_block *b, uint16_t usid,
			 struct in6_addr *prefix, unsigned *prefix_len,
			 struct mrc_srv6_err *err)
{
	int rc = mrc_usid_block_check(b, err);

	if (rc)
		return rc;
	if (!prefix || !prefix_len) {
		mrc__srv6_set_err(err, "no output");
		return -EINVAL;
	}
	if (usid == MRC_USID_EOC) {
		mrc__srv6_set_err(err, "uSID 0x0000 is End-of-Carrier, not a node");
		return -EINVAL;
	}
	*prefix = b->prefix;
	mrc__usid_a6_set_word(prefix, b->bits / 16, usid);
	*prefix_len = b->bits + MRC_USID_BITS;
	return 0;
}

int mrc_usid_encode(const struct mrc_usid_block *b, const uint16_t *usids,
		    size_t n, struct in6_addr *out, struct mrc_srv6_err *err)
{
	unsigned bw, cap;
	int rc = mrc_usid_block_check(b, err);

	if (rc)
		return rc;
	if (!out || (n && !usids)) {
		mrc__srv6_set_err(err, "no input or output");
		return -EINVAL;
	}
	if (n == 0) {
		mrc__srv6_set_err(err, "empty uSID list");
		return -EINVAL;
	}
	cap = mrc_usid_block_capacity(b);
	if (n > cap) {
		mrc__srv6_set_err(err, "%zu uSIDs do not fit one container (at most %u under a /%u block)",
			      n, cap, b->bits);
		return -E2BIG;
	}
	for (size_t i = 0; i < n; i++) {
		if (usids[i] == MRC_USID_EOC) {
			mrc__srv6_set_err(err, "uSID %zu is 0x0000 (reserved End-of-Carrier)", i);
			return -EINVAL;
		}
	}
	bw = b->bits / 16;
	*out = b->prefix;
	for (size_t i = 0; i < n; i++)
		mrc__usid_a6_set_word(out, bw + (unsigned)i, usids[i]);
	return 0;
}

/* Shared by decode/active/shift: the address must carry this block. */
static int in_block(const struct mrc_usid_block *b, const struct in6_addr *a,
		    struct mrc_srv6_err *err)
{
	char s[INET6_ADDRSTRLEN] = "?";

	for (unsigned i = 0; i < b->bits / 16u; i++) {
		if (mrc__usid_a6_word(a, i) != mrc__usid_a6_word(&b->prefix, i)) {
			inet_ntop(AF_INET6, a, s, sizeof(s));
			mrc__srv6_set_err(err, "address %s is not in the uSID block /%u", s, b->bits);
			return -EINVAL;
		}
	}
	return 0;
}

int mrc_usid_decode(const struct mrc_usid_block *b, const struct in6_addr *a,
		    uint16_t *usids, size_t max, size_t *n,
		    struct mrc_srv6_err *err)
{
	unsigned bw, count = 0;
	int rc = mrc_usid_block_check(b, err);

	if (rc)
		return rc;
	if (!a || !n || (max && !usids)) {
		mrc__srv6_set_err(err, "no input or output");
		return -EINVAL;
	}
	rc = in_block(b, a, err);
	if (rc)
		return rc;
	bw = b->bits / 16;
	while (bw + count < 8 && mrc__usid_a6_word(a, bw + count) != MRC_USID_EOC)
		count++;
	if (count == 0) {
		mrc__srv6_set_err(err, "container holds no uSID (End-of-Carrier right after the block)");
		return -EINVAL;
	}
	for (unsigned i = bw + count; i < 8; i++) {
		if (mrc__usid_a6_word(a, i)) {
			mrc__srv6_set_err(err, "container word %u is 0x%04x after End-of-Carrier at word %u",
				      i, mrc__usid_a6_word(a, i), bw + count);
			return -EINVAL;
		}
	}
	if (count > max) {
		mrc__srv6_set_err(err, "container holds %u uSIDs, room for %zu", count, max);
		return -ENOSPC;
	}
	for (unsigned i = 0; i < count; i++)
		usids[i] = mrc__usid_a6_word(a, bw + i);
	*n = count;
	return 0;
}

int mrc_usid_active(const struct mrc_usid_block *b, const struct in6_addr *a,
		    uint16_t *usid)
{
	uint16_t u;

	if (!a || !usid || mrc_usid_block_check(b, NULL) || in_block(b, a, NULL))
		return -EINVAL;
	u = mrc__usid_a6_word(a, b->bits / 16u);
	if (u == MRC_USID_EOC)
		return -EINVAL;
	*usid = u;
	return 0;
}

int mrc_usid_shift(const struct mrc_usid_block *b, struct in6_addr *a)
{
	uint16_t u[8];
	size_t n;
	unsigned bw;

	/* Strict: a malformed container (gap after End-of-Carrier) is refused,
	 * where the kernel would shift it blindly. */
	if (!a || mrc_usid_decode(b, a, u, 8, &n, NULL))
		return -EINVAL;
	/* RFC 9800 4.1.1: an all-zero argument means this container is spent. */
	if (n == 1)
		return 0;
	bw = b->bits / 16;
	for (unsigned i = bw; i < 7; i++)
		mrc__usid_a6_set_word(a, i, mrc__usid_a6_word(a, i + 1));
	mrc__usid_a6_set_word(a, 7, 0);
	return 1;
}

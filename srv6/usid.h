/* uSID containers (RFC 9800 NEXT-C-SID) and multi-container SRv6 paths.
 *
 * A uSID container is one IPv6 address: a locator block (default
 * fcbb:bb00::/32) followed by up to (128 - block_bits) / 16 16-bit uSIDs,
 * the active one first, padded with the End-of-Carrier value 0x0000.  A
 * switch whose uSID is active shifts the rest left by 16 bits (NEXT-C-SID
 * "End" with lblen = block bits, nflen = 16) and forwards on the result.
 * A path with more uSIDs than one container holds uses an SRH (srh.h) whose
 * segment list carries the further containers.
 *
 * All functions return 0 (or a documented non-negative value) on success and
 * a negative errno on failure; where an err argument is given (it may be
 * NULL) it receives a one-line reason naming the field and the value.
 */
#ifndef MRC_SRV6_USID_H
#define MRC_SRV6_USID_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "srv6/srh.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MRC_USID_BITS 16
#define MRC_USID_EOC 0x0000u            /* End-of-Carrier: reserved, never a node */
#define MRC_USID_BLOCK_DEFAULT "fcbb:bb00::/32"
#define MRC_USID_BLOCK_BITS_DEFAULT 32
#define MRC_USID_BLOCK_BITS_MIN 16
#define MRC_USID_BLOCK_BITS_MAX 64
/* Most uSIDs one container can hold (with the shortest, 16-bit block). */
#define MRC_USID_MAX_PER_CONTAINER ((128 - MRC_USID_BLOCK_BITS_MIN) / MRC_USID_BITS)
/* Longest block prefix string, "xxxx:...:xxxx/64" plus NUL. */
#define MRC_USID_BLOCK_STRLEN (INET6_ADDRSTRLEN + 4)
/* Longest multi-container path: MRC_SRH_MAX_SEGS containers of up to 7
 * uSIDs each.  Real fabric paths are far shorter. */
#define MRC_SRV6_ENCAP_MAX_USIDS (MRC_SRH_MAX_SEGS * MRC_USID_MAX_PER_CONTAINER)

/* One-line error reason, filled on failure when a pointer is passed. */
#define MRC_SRV6_ERRLEN 160
struct mrc_srv6_err {
	char msg[MRC_SRV6_ERRLEN];
};

/* The locator block every uSID of the fabric lives under. */
struct mrc_usid_block {
	struct in6_addr prefix;   /* block bits; all bits after them are zero */
	uint8_t bits;             /* 16, 32, 48 or 64 */
	uint8_t usid_bits;        /* always MRC_USID_BITS (16) for now */
};

/* fcbb:bb00::/32, 16-bit uSIDs. */
void mrc_usid_block_default(struct mrc_usid_block *b);

/* Builds a block from an address and a length, validating both: bits must be
 * 16..64 in steps of 16, and no bit after the block may be set.
 * -EINVAL on any violation. */
int mrc_usid_block_init(struct mrc_usid_block *b, const struct in6_addr *prefix,
			unsigned bits, struct mrc_srv6_err *err);

/* Parses "ADDR/LEN" (e.g. "fcbb:bb00::/32") strictly: no spaces, a decimal
 * LEN of 16, 32, 48 or 64 without sign or leading zeros, no bit set after
 * LEN, not the unspecified address.  -EINVAL with the reason otherwise. */
int mrc_usid_block_parse(struct mrc_usid_block *b, const char *s,
			 struct mrc_srv6_err *err);

/* Writes "ADDR/LEN" (canonical RFC 5952 text) into buf.
 * -ENOSPC if len is too small (MRC_USID_BLOCK_STRLEN always suffices),
 * -EINVAL if b is not a valid block. */
int mrc_usid_block_format(const struct mrc_usid_block *b, char *buf, size_t len);

/* How many uSIDs one container holds under this block (6 for /32). */
unsigned mrc_usid_block_capacity(const struct mrc_usid_block *b);

/* Validates a block built by hand (same rules as mrc_usid_block_init). */
int mrc_usid_block_check(const struct mrc_usid_block *b, struct mrc_srv6_err *err);

/* The SID prefix a node owning `usid` matches on: block + usid, length
 * block bits + 16 (fcbb:bb00:1100::/48 for uSID 0x1100 under /32).
 * -EINVAL for uSID 0 (End-of-Carrier) or an invalid block. */
int mrc_usid_node_prefix(const struct mrc_usid_block *b, uint16_t usid,
			 struct in6_addr *prefix, unsigned *prefix_len,
			 struct mrc_srv6_err *err);

/* Packs n uSIDs (1..capacity, none of them 0) into one container.
 * -EINVAL for n == 0 or a zero uSID, -E2BIG when n exceeds the capacity. */
int mrc_usid_encode(const struct mrc_usid_block *b, const uint16_t *usids,
		    size_t n, struct in6_addr *out, struct mrc_srv6_err *err);

/* Unpacks a container: the address must lie in the block, hold at least one
 * uSID, and be zero after its first End-of-Carrier (a gap would be a
 * malformed container).  Stores up to max uSIDs and their count in *n.
 * -EINVAL: not in the block / empty / non-zero after EOC;
 * -ENOSPC: more uSIDs than max. */
int mrc_usid_decode(const struct mrc_usid_block *b, const struct in6_addr *a,
		    uint16_t *usids, size_t max, size_t *n,
		    struct mrc_srv6_err *err);

/* The active uSID (the one right after the block).  -EINVAL if the address
 * is not in the block or its active uSID is End-of-Carrier. */
int mrc_usid_active(const struct mrc_usid_block *b, const struct in6_addr *a,
		    uint16_t *usid);

/* What a NEXT-C-SID End node does to the destination address: if any uSID
 * follows the active one, shift the argument left by 16 bits (zero-fill) so
 * the next uSID becomes active, and return 1.  If none follows, leave the
 * address unchanged and return 0 (the container is spent: the node moves to
 * the next SRH segment, or is the final destination).
 * -EINVAL if the address is not a container of this block. */
int mrc_usid_shift(const struct mrc_usid_block *b, struct in6_addr *a);

/* A full path: the destination address plus, for paths longer than one
 * container, an SRH whose segment list holds every container (RFC 8754
 * order: segs[0] is the last container, segs[nsegs - 1] the first, and
 * segments_left = nsegs - 1 at the source). */
struct mrc_srv6_encap {
	struct in6_addr dst;
	bool has_srh;
	struct mrc_srh srh;
};

/* Packs n uSIDs (1..MRC_SRV6_ENCAP_MAX_USIDS) into the fewest containers,
 * each filled completely before the next.  One container: no SRH.
 * srh.nexthdr is set to `nexthdr` (e.g. IPPROTO_UDP).
 * -EINVAL for n == 0 or a zero uSID, -E2BIG when too many. */
int mrc_srv6_encode(const struct mrc_usid_block *b, const uint16_t *usids,
			 size_t n, uint8_t nexthdr, struct mrc_srv6_encap *p,
			 struct mrc_srv6_err *err);

/* The uSIDs still ahead of a packet: those of the destination address, then
 * those of segs[segments_left - 1] down to segs[0].  srh may be NULL.
 * (The destination is not compared with segs[segments_left]: after a shift
 * they differ by design.)  -EINVAL for a malformed container or SRH bounds,
 * -ENOSPC beyond max. */
int mrc_srv6_decode(const struct mrc_usid_block *b,
			 const struct in6_addr *dst, const struct mrc_srh *srh,
			 uint16_t *usids, size_t max, size_t *n,
			 struct mrc_srv6_err *err);

/* One End (NEXT-C-SID) hop: shift the container, or, when it is spent and
 * the SRH has segments left, decrement segments_left and copy the next
 * container into the destination.  Returns 1 when the packet goes on, 0 when
 * this node is the final destination, -EINVAL on a malformed address/SRH. */
int mrc_srv6_advance(const struct mrc_usid_block *b, struct in6_addr *dst,
		     struct mrc_srh *srh);

#ifdef __cplusplus
}
#endif
#endif

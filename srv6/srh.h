/* SRv6 Segment Routing Header (RFC 8754, IPv6 routing header type 4):
 * wire encoding and strict decoding.
 *
 *   0: Next Header | Hdr Ext Len | Routing Type (4) | Segments Left
 *   4: Last Entry  | Flags       | Tag (16 bits, network order)
 *   8: Segment List[0..Last Entry], 16 bytes each (segs[0] = last segment)
 *      optional TLVs up to (Hdr Ext Len + 1) * 8 bytes
 */
#ifndef MRC_SRV6_SRH_H
#define MRC_SRV6_SRH_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct mrc_srv6_err;

#define MRC_SRH_TYPE 4
#define MRC_SRH_FIXED_LEN 8
/* Hdr Ext Len is 8 bits of 8-octet units: at most 2040 bytes after the first
 * 8, so at most 127 segments of 16 bytes. */
#define MRC_SRH_MAX_SEGS 127
#define MRC_SRH_MAX_LEN (MRC_SRH_FIXED_LEN + 255 * 8)

/* TLV types (RFC 8754 section 2.1). */
#define MRC_SRH_TLV_PAD1 0
#define MRC_SRH_TLV_PADN 4
#define MRC_SRH_TLV_HMAC 5

/* Decoded SRH.  The segment list is kept in wire order. */
struct mrc_srh {
	uint8_t nexthdr;
	uint8_t segments_left;
	uint8_t flags;
	uint16_t tag;              /* host order */
	uint8_t nsegs;             /* Last Entry + 1, 1..MRC_SRH_MAX_SEGS */
	uint16_t tlv_len;          /* bytes of TLVs after the segment list */
	struct in6_addr segs[MRC_SRH_MAX_SEGS];
};

/* Bytes the SRH of nsegs segments takes on the wire (no TLVs). */
size_t mrc_srh_wire_len(unsigned nsegs);

/* Writes h (without TLVs: tlv_len must be 0) into buf.  *outlen = bytes
 * written.  -EINVAL if h violates RFC 8754 (no segment, too many,
 * segments_left > Last Entry), -ENOSPC if buf is too short. */
int mrc_srh_encode(const struct mrc_srh *h, uint8_t *buf, size_t len,
		   size_t *outlen, struct mrc_srv6_err *err);

/* Parses an SRH at the start of buf (len bytes available).  Checks: the
 * whole header fits, routing type is 4, Hdr Ext Len covers
 * Last Entry + 1 segments, Segments Left <= Last Entry, and the TLV area
 * is a well-formed sequence of Pad1/PadN/other TLVs that ends exactly at
 * the header's end.  *consumed = header length.  -EBADMSG on any violation
 * (err says which), -EINVAL for NULL arguments. */
int mrc_srh_decode(const uint8_t *buf, size_t len, struct mrc_srh *h,
		   size_t *consumed, struct mrc_srv6_err *err);

#ifdef __cplusplus
}
#endif
#endif

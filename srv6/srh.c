/* SRH (RFC 8754) wire codec.  The decoder trusts nothing: every length is
 * checked against the buffer before it is used. */
#include <errno.h>
#include <string.h>

#include "srv6/srh.h"
#include "srv6/usid.h"
#include "srv6/usid_internal.h"

size_t mrc_srh_wire_len(unsigned nsegs)
{
	return MRC_SRH_FIXED_LEN + (size_t)nsegs * sizeof(struct in6_addr);
}

int mrc_srh_encode(const struct mrc_srh *h, uint8_t *buf, size_t len,
		   size_t *outlen, struct mrc_srv6_err *err)
{
	size_t need;

	if (!h || !buf || !outlen) {
		mrc__srv6_set_err(err, "no header or buffer");
		return -EINVAL;
	}
	if (h->nsegs == 0 || h->nsegs > MRC_SRH_MAX_SEGS) {
		mrc__srv6_set_err(err, "segment count %u: must be 1..%u", h->nsegs, MRC_SRH_MAX_SEGS);
		return -EINVAL;
	}
	if (h->segments_left >= h->nsegs) {
		mrc__srv6_set_err(err, "segments_left %u: must be below the segment count %u",
			      h->segments_left, h->nsegs);
		return -EINVAL;
	}
	if (h->tlv_len) {
		mrc__srv6_set_err(err, "TLVs are not encoded (tlv_len %u)", h->tlv_len);
		return -EINVAL;
	}
	need = mrc_srh_wire_len(h->nsegs);
	if (len < need) {
		mrc__srv6_set_err(err, "buffer of %zu bytes, SRH needs %zu", len, need);
		return -ENOSPC;
	}
	buf[0] = h->nexthdr;
	buf[1] = (uint8_t)((need - 8) / 8);   /* Hdr Ext Len: 8-octet units after the first 8 */
	buf[2] = MRC_SRH_TYPE;
	buf[3] = h->segments_left;
	buf[4] = (uint8_t)(h->nsegs - 1);     /* Last Entry */
	buf[5] = h->flags;
	buf[6] = (uint8_t)(h->tag >> 8);
	buf[7] = (uint8_t)h->tag;
	memcpy(buf + 8, h->segs, (size_t)h->nsegs * sizeof(struct in6_addr));
	*outlen = need;
	return 0;
}

/* Walks the TLV area [p, end): Pad1 is one byte, every other TLV is
 * type, length, value; the last must end exactly at `end`. */
static int check_tlvs(const uint8_t *p, size_t n, size_t base,
		      struct mrc_srv6_err *err)
{
	size_t off = 0;

	while (off < n) {
		if (p[off] == MRC_SRH_TLV_PAD1) {
			off++;
			continue;
		}
		if (n - off < 2) {
			mrc__srv6_set_err(err, "TLV at byte %zu: truncated type/length", base + off);
			return -EBADMSG;
		}
		if ((size_t)p[off + 1] > n - off - 2) {
			mrc__srv6_set_err(err, "TLV type %u at byte %zu: length %u runs past the header end",
				      p[off], base + off, p[off + 1]);
			return -EBADMSG;
		}
		off += 2u + p[off + 1];
	}
	return 0;
}

int mrc_srh_decode(const uint8_t *buf, size_t len, struct mrc_srh *h,
		   size_t *consumed, struct mrc_srv6_err *err)
{
	size_t total, segbytes;
	unsigned nsegs;
	int rc;

	if (!buf || !h || !consumed) {
		mrc__srv6_set_err(err, "no buffer or output");
		return -EINVAL;
	}
	if (len < MRC_SRH_FIXED_LEN) {
		mrc__srv6_set_err(err, "%zu bytes: shorter than the 8-byte SRH fixed part", len);
		return -EBADMSG;
	}
	if (buf[2] != MRC_SRH_TYPE) {
		mrc__srv6_set_err(err, "routing type %u: not an SRH (type 4)", buf[2]);
		return -EBADMSG;
	}
	total = MRC_SRH_FIXED_LEN + (size_t)buf[1] * 8;
	if (total > len) {
		mrc__srv6_set_err(err, "Hdr Ext Len %u says %zu bytes, only %zu present", buf[1], total, len);
		return -EBADMSG;
	}
	nsegs = (unsigned)buf[4] + 1;
	segbytes = (size_t)nsegs * sizeof(struct in6_addr);
	if (MRC_SRH_FIXED_LEN + segbytes > total) {
		mrc__srv6_set_err(err, "Last Entry %u: %u segments need %zu bytes, header has %zu",
			      buf[4], nsegs, MRC_SRH_FIXED_LEN + segbytes, total);
		return -EBADMSG;
	}
	if (buf[3] > buf[4]) {
		mrc__srv6_set_err(err, "Segments Left %u exceeds Last Entry %u", buf[3], buf[4]);
		return -EBADMSG;
	}
	rc = check_tlvs(buf + MRC_SRH_FIXED_LEN + segbytes,
			total - MRC_SRH_FIXED_LEN - segbytes,
			MRC_SRH_FIXED_LEN + segbytes, err);
	if (rc)
		return rc;
	/* nsegs <= 127 follows from total <= 2048; no further bound needed. */
	memset(h, 0, sizeof(*h));
	h->nexthdr = buf[0];
	h->segments_left = buf[3];
	h->flags = buf[5];
	h->tag = (uint16_t)(buf[6] << 8 | buf[7]);
	h->nsegs = (uint8_t)nsegs;
	h->tlv_len = (uint16_t)(total - MRC_SRH_FIXED_LEN - segbytes);
	memcpy(h->segs, buf + MRC_SRH_FIXED_LEN, segbytes);
	*consumed = total;
	return 0;
}

/* For fuzz targets that feed wire-format packets: random mutations almost
 * never keep the CRCs valid, which would leave everything behind the CRC
 * checks unexplored, so targets recompute them on a copy. */
#ifndef MRC_FUZZ_FIXCRC_H
#define MRC_FUZZ_FIXCRC_H

#include <stddef.h>
#include <stdint.h>

#include "transport/crc32c.h"
#include "transport/wire.h"

static inline void fz_st32be(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* The fixed header length of the packet p[0..len), or 0 when it is not a
 * version-1 packet of a known opcode at least that long. */
static inline size_t fz_hdr_len(const uint8_t *p, size_t len)
{
	if (len < 4 || p[0] != MRC_WIRE_VERSION)
		return 0;
	size_t hl = mrc_op_is_data(p[1]) ? MRC_DATA_HDR_LEN
		  : p[1] == MRC_OP_ACK ? MRC_ACK_HDR_LEN
		  : p[1] == MRC_OP_PROBE || p[1] == MRC_OP_PROBE_REPLY
		  ? MRC_PROBE_HDR_LEN : 0;
	return len < hl ? 0 : hl;
}

/* Rewrites hcrc (over the header with the TRIMMED bit as 0, as a switch
 * leaves it) and, when the length fits, a data packet's pcrc. */
static inline void fz_fix_crcs(uint8_t *p, size_t len)
{
	size_t hl = fz_hdr_len(p, len);
	if (!hl)
		return;
	uint8_t f3 = p[3];
	p[3] &= (uint8_t)~MRC_F_TRIMMED;
	fz_st32be(p + hl - 4, mrce_crc32c(0, p, hl - 4));
	p[3] = f3;
	if (hl == MRC_DATA_HDR_LEN && (p[3] & MRC_F_XACK) && !(p[3] & MRC_F_TRIMMED) &&
	    len >= MRC_DATA_XHDR_LEN) {
		/* the XACK extension's own CRC; the payload then starts after it */
		fz_st32be(p + MRC_DATA_XHDR_LEN - 4,
			  mrce_crc32c(0, p + hl, MRC_XACK_LEN - 4));
		hl = MRC_DATA_XHDR_LEN;
	}
	if (hl >= MRC_DATA_HDR_LEN && mrc_op_is_data(p[1])) {
		size_t plen = (size_t)p[14] << 8 | p[15];
		if (plen && len == hl + plen + MRC_TRAILER_LEN)
			fz_st32be(p + hl + plen, mrce_crc32c(0, p + hl, plen));
	}
}

#endif

/* libFuzzer: what the NCCL plugin takes from peers (nccl/proto.h): a
 * clear-to-send as it lands in a posted RECV (any length), an eager
 * message's header as it lies in a slot of the ring (the written length
 * and the expected sequence number from the input too), the header a
 * compact eager message leaves out (accepted: the comm's tag, the length
 * written within the slot, the per-tag number within 2^23 of the
 * receiver's count with the imm's low 24 bits), and a listen
 * handle as NCCL carries it between ranks; a CTS-path data completion
 * (imm, length, the bytes its receive has and its room: whole messages
 * and pieces).  Invariants: an accepted CTS
 * names an id in range and a window inside the arena; an accepted eager
 * header's payload is exactly the bytes written and inside the slot; an
 * accepted handle names one of the plugin's service ids; an accepted
 * piece or last WRITE names an id in range and ends inside its receive,
 * a piece leaving room for the last. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nccl/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mrcn_cts c;
	if (!mrcn_cts_parse(data, (uint32_t)size, &c)) {
		if (size != sizeof(c))
			abort();
		if (c.magic == MRCN_EGR_MAGIC) {
			/* the ring advertisement: slots and stride in range */
			if (c.id < 1 || c.id > MRCN_EG_MAX_SLOTS || (c.size & 63) ||
			    c.size > mrcn_eg_stride(MRCN_EG_MAX))
				abort();
		} else if (c.magic != MRCN_CTS_MAGIC || c.id >= MRCN_NCTS ||
			   c.off + c.size > MRCN_ARENA || c.size > MRCN_MAX_MSG) {
			abort();
		}
	}
	if (size >= 12) {
		/* the slot: the input after 12 bytes of (length, stride, seq) */
		uint32_t len, stride, seq;
		memcpy(&len, data, 4);
		memcpy(&stride, data + 4, 4);
		memcpy(&seq, data + 8, 4);
		uint8_t slot[sizeof(struct mrcn_eg_hdr)] = { 0 };
		memcpy(slot, data + 12, size - 12 < sizeof(slot) ? size - 12 : sizeof(slot));
		struct mrcn_eg_hdr e;
		if (!mrcn_eg_hdr_parse(slot, len, stride, seq, &e) &&
		    ((uint64_t)e.size + sizeof(e) != len || len > stride || e.seq != seq ||
		     e.magic != MRCN_EG_HDR_MAGIC))
			abort();
		/* a compact message: imm, count and tag from the input too */
		uint32_t imm = len ^ seq, cnt = stride >> 3;
		if (!mrcn_eg_compact_parse(imm, len, stride, (int)(seq & 1), (int32_t)seq, cnt, seq, &e) &&
		    (!(seq & 1) || stride < sizeof(e) || (uint64_t)len + sizeof(e) > stride ||
		     e.size != len || e.tag != (int32_t)seq || e.seq != seq ||
		     ((e.tseq ^ imm >> MRCN_IMM_TSEQ_SHIFT) & MRCN_IMM_TSEQ_MASK) ||
		     (uint32_t)(e.tseq - cnt + (1u << 23)) >= (1u << 24)))
			abort();
	}
	if (size >= 20) {
		uint32_t imm, len, got, cap, id;
		memcpy(&imm, data, 4);
		memcpy(&len, data + 4, 4);
		memcpy(&got, data + 8, 4);
		memcpy(&cap, data + 12, 4);
		int piece;
		if (!mrcn_data_parse(imm, len, got, cap, &id, &piece) &&
		    (id >= MRCN_NCTS || (uint64_t)got + len > cap ||
		     (piece && (len != MRCN_PIECE || (uint64_t)got + len >= cap))))
			abort();
	}
	uint8_t h[128] = { 0 };
	memcpy(h, data, size < sizeof(h) ? size : sizeof(h));
	struct mrcn_handle hd;
	if (!mrcn_handle_parse(h, &hd) &&
	    (hd.magic != MRCN_HANDLE_MAGIC || hd.sid < MRCN_SID_BASE ||
	     hd.sid >= MRCN_SID_BASE + MRCN_SID_SPAN))
		abort();
	return 0;
}

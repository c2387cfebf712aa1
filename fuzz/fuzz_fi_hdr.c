/* libFuzzer: the libfabric provider's parser of what another provider
 * sends into a receive slot (fi/proto.c).  Invariants: whatever parses
 * keeps to the bounds the endpoint relies on (an eager payload is exactly
 * the bytes written and fits a slot; a chunk length fits a chunk; only a
 * CTS ends with length 0), and a parse never reads past n bytes (ASan).
 * Also the compact EAGER's check (immediate data, the QP's tag base, the
 * byte count from the input's first 13 bytes): a message it takes is an
 * untagged or tagged EAGER within a slot whose tag is the base's high
 * bits and the immediate's low ones, never a tagged one without a base. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fi/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* a copy of exactly size bytes, so a read past it is caught */
	uint8_t *b = malloc(size ? size : 1);
	if (!b)
		return 0;
	memcpy(b, data, size);
	struct mrcfi_hdr h;
	if (!mrcfi_hdr_parse(b, size, &h)) {
		if (h.magic != MRCFI_MAGIC || h.hlen != sizeof(h) || size < sizeof(h) ||
		    size > MRCFI_SLOT)
			abort();
		switch (h.op) {
		case MRCFI_EAGER:
			if (h.len != size - sizeof(h) || h.len > MRCFI_EAGER_MAX)
				abort();
			break;
		case MRCFI_CTS:
			if (h.len > MRCFI_CHUNK || (h.len == 0) != !!(h.flags & MRCFI_F_END) ||
			    size != sizeof(h))
				abort();
			break;
		case MRCFI_RZDATA:
			if (!h.len || h.len > MRCFI_CHUNK || size != sizeof(h))
				abort();
			break;
		case MRCFI_RTS: case MRCFI_WDATA:
			if (size != sizeof(h))
				abort();
			break;
		default:
			abort();
		}
		if (h.flags & ~MRCFI_F_ALL)
			abort();
	}
	free(b);
	if (size >= 13) {
		uint32_t imm;
		uint64_t base;
		memcpy(&imm, data, 4);
		memcpy(&base, data + 4, 8);
		int base_ok = data[12] & 1;
		size_t n = size - 13 + (size_t)(data[12] >> 1) * 64;
		if (!mrcfi_compact_parse(imm, n, base_ok, base, &h)) {
			int tagged = !!(imm & MRCFI_IMM_TAGGED);
			if (h.op != MRCFI_EAGER || h.len != n || n > MRCFI_EAGER_MAX ||
			    !(imm & MRCFI_IMM_COMPACT) || (tagged && !base_ok) ||
			    (h.flags & ~MRCFI_F_TAGGED) || !!(h.flags & MRCFI_F_TAGGED) != tagged ||
			    h.tag != (tagged ? base << MRCFI_IMM_TAGBITS | (imm & MRCFI_IMM_TAGMASK) : 0) ||
			    (tagged && h.tag >> MRCFI_IMM_TAGBITS != base))
				abort();
		}
	}
	return 0;
}

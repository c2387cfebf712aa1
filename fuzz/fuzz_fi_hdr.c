/* libFuzzer: the libfabric provider's parser of what another provider
 * sends into a receive slot (fi/proto.c).  Invariants: whatever parses
 * keeps to the bounds the endpoint relies on (an eager payload is exactly
 * the bytes written and fits a slot; a chunk length fits a chunk; only a
 * CTS ends with length 0), and a parse never reads past n bytes (ASan). */
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
	return 0;
}

/* The one parser of what another provider sends (fuzz/fuzz_fi_hdr.c). */
#include <errno.h>
#include <string.h>

#include "fi/proto.h"

int mrcfi_hdr_parse(const void *buf, size_t n, struct mrcfi_hdr *out)
{
	struct mrcfi_hdr h;
	if (!buf || n < sizeof(h) || n > MRCFI_SLOT)
		return -EPROTO;
	memcpy(&h, buf, sizeof(h));
	if (h.magic != MRCFI_MAGIC || h.hlen != sizeof(h) || h.op < 1 || h.op > MRCFI_OP_MAX ||
	    (h.flags & ~MRCFI_F_ALL))
		return -EPROTO;
	size_t body = n - sizeof(h);
	switch (h.op) {
	case MRCFI_EAGER:
		if (h.len != body || h.len > MRCFI_EAGER_MAX || (h.flags & MRCFI_F_END))
			return -EPROTO;
		break;
	case MRCFI_RTS:
		if (body || h.total > MRCFI_MAX_MSG || (h.flags & MRCFI_F_END))
			return -EPROTO;
		break;
	case MRCFI_CTS:
		if (body || h.len > MRCFI_CHUNK || h.total > MRCFI_MAX_MSG ||
		    !!(h.flags & MRCFI_F_END) != (h.len == 0))
			return -EPROTO;
		break;
	case MRCFI_RZDATA:
		if (body || !h.len || h.len > MRCFI_CHUNK || h.total > MRCFI_MAX_MSG ||
		    (h.flags & MRCFI_F_END))
			return -EPROTO;
		break;
	case MRCFI_WDATA:
		if (body || !(h.flags & MRCFI_F_DATA) || (h.flags & MRCFI_F_END))
			return -EPROTO;
		break;
	}
	*out = h;
	return 0;
}

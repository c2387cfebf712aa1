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

int mrcfi_compact_parse(uint32_t imm, size_t n, int base_ok, uint64_t base_hi,
			struct mrcfi_hdr *out)
{
	int tagged = !!(imm & MRCFI_IMM_TAGGED);
	if (!(imm & MRCFI_IMM_COMPACT) || n > MRCFI_EAGER_MAX || (tagged && !base_ok) ||
	    (!tagged && (imm & MRCFI_IMM_TAGMASK)) ||
	    base_hi >> (64 - MRCFI_IMM_TAGBITS))
		return -EPROTO;
	memset(out, 0, sizeof(*out));
	out->magic = MRCFI_MAGIC;
	out->op = MRCFI_EAGER;
	out->hlen = sizeof(*out);
	out->flags = tagged ? MRCFI_F_TAGGED : 0;
	out->len = (uint32_t)n;
	if (tagged)
		out->tag = base_hi << MRCFI_IMM_TAGBITS | (imm & MRCFI_IMM_TAGMASK);
	return 0;
}

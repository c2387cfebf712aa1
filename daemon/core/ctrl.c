/* Encoding of daemon control datagrams: see ctrl.h. */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "daemon/core/ctrl.h"
#include "transport/crc32c.h"
#include "transport/wire.h"

static void put32(uint8_t *p, uint32_t v) { v = htobe32(v); memcpy(p, &v, 4); }
static uint32_t get32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return be32toh(v); }

void mrcd_ctrl_encode(uint8_t out[MRCD_CTRL_LEN], const struct mrcd_ctrl *m)
{
	memset(out, 0, MRCD_CTRL_LEN);
	out[0] = MRC_WIRE_VERSION;
	out[1] = MRC_OP_CTRL;
	out[4] = m->type;
	uint64_t id = htobe64(m->id);
	memcpy(out + 8, &id, 8);
	put32(out + 16, m->sid);
	put32(out + 20, m->src_host);
	put32(out + 24, m->qpn);
	put32(out + 28, m->psn);
	put32(out + 32, (uint32_t)m->err);
	put32(out + 36, m->arg);
	put32(out + 40, mrc_crc32c(0, out, 40));
}

int mrcd_ctrl_decode(const uint8_t *b, size_t len, struct mrcd_ctrl *m)
{
	if (len != MRCD_CTRL_LEN || b[0] != MRC_WIRE_VERSION || b[1] != MRC_OP_CTRL ||
	    b[2] || b[3] || b[5] || b[6] || b[7] || get32(b + 40) != mrc_crc32c(0, b, 40))
		return -EBADMSG;
	if (b[4] < MRCD_CTRL_REQ || b[4] > MRCD_CTRL_PLANES)
		return -EBADMSG;
	uint64_t id;
	memcpy(&id, b + 8, 8);
	*m = (struct mrcd_ctrl){ .type = b[4], .id = be64toh(id), .sid = get32(b + 16),
		.src_host = get32(b + 20), .qpn = get32(b + 24), .psn = get32(b + 28),
		.err = (int32_t)get32(b + 32), .arg = get32(b + 36) };
	if (m->err > 0 || m->err < -4095)
		return -EBADMSG;
	return 0;
}

/* Single packets from fields, and their parse, for the tools that play a
 * peer (engine_wire.h, mrce_pkt_build): the wire codec's encoders and
 * decoder behind a typed call. */
#include <errno.h>
#include <string.h>

#include "transport/engine.h"
#define RAW_OP 127   /* an opcode no receiver or trimmer takes */

size_t mrce_pkt_build(uint8_t *buf, const struct mrce_pkt_desc *d)
{
	size_t n;
	if (d->kind == MRCE_PKT_ACK || d->kind == MRCE_PKT_NOQP) {
		struct mrc_ack_hdr h = { .nack = d->kind == MRCE_PKT_NOQP ? MRC_NACK_NOQP :
			MRC_NACK_NONE, .dqpn = d->dqpn, .cum_psn = d->psn, .trig_psn = d->psn,
			.sack_base = d->psn, .ev = d->ev, .token = d->token };
		n = mrce_wire_put_ack(buf, &h);
	} else if ((d->kind == MRCE_PKT_WRITE || d->kind == MRCE_PKT_WRITE_IMM) &&
		   d->plen <= MRC_MAX_PAYLOAD && (d->payload || !d->plen)) {
		struct mrc_data_hdr h = { .op = d->kind == MRCE_PKT_WRITE ? MRC_OP_WRITE :
			MRC_OP_WRITE_IMM, .flags = MRC_F_FIRST | MRC_F_LAST, .dqpn = d->dqpn,
			.psn = d->psn, .ev = d->ev, .plen = d->plen, .msn = d->msn,
			.rkey = d->rkey, .mlen = d->plen, .imm = d->imm, .token = d->token };
		n = mrce_wire_put_data(buf, &h);
		if (d->plen) {
			memcpy(buf + n, d->payload, d->plen);
			mrce_wire_put_trailer(buf + n + d->plen, buf + n, d->plen);
			n += d->plen + MRC_TRAILER_LEN;
		}
	} else {
		return 0;
	}
	if (d->raw)
		buf[1] = RAW_OP;
	return n;
}

int mrce_pkt_parse(uint8_t *buf, size_t len, int raw, struct mrce_pkt_info *info)
{
	struct mrc_pkt_view v;
	enum mrce_wire_drop why;
	if (raw && len >= 2)
		buf[1] = MRC_OP_WRITE;  /* the only kind sent raw (tools/fabric/probe) */
	if (mrce_wire_decode(buf, len, &v, &why))
		return -EBADMSG;
	*info = (struct mrce_pkt_info){ .trimmed = v.trimmed };
	if (mrc_op_is_data(v.op)) {
		info->kind = v.op == MRC_OP_WRITE ? MRCE_PKT_WRITE :
			     v.op == MRC_OP_WRITE_IMM ? MRCE_PKT_WRITE_IMM : 0;
		info->ev = v.u.data.ev;
		info->plen = v.u.data.plen;
		info->dqpn = v.u.data.dqpn;
	} else if (v.op == MRC_OP_ACK) {
		info->kind = v.u.ack.nack == MRC_NACK_NOQP ? MRCE_PKT_NOQP :
			     v.u.ack.nack == MRC_NACK_NONE ? MRCE_PKT_ACK : 0;
		info->ev = v.u.ack.ev;
		info->dqpn = v.u.ack.dqpn;
	}
	return 0;
}

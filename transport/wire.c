/* MRC wire format v2: encoders, the validating decoder, and trimming.
 * docs/wire.md is the normative description; wire.h has the layouts. */
#include "transport/wire.h"

#include <endian.h>
#include <errno.h>
#include <string.h>

#include "transport/be.h"
#include "transport/crc32c.h"


/* CRC-32C of the header bytes p[0..n) (n = offset of hcrc) with the
 * TRIMMED bit of the flags (byte 3) taken as 0, so a switch can set it
 * without recomputing anything.  The rule is the same for every opcode;
 * for non-data packets a set bit 3 then fails field validation instead. */
static uint32_t hdr_crc(const uint8_t *p, size_t n)
{
	if (!(p[3] & MRC_F_TRIMMED))
		return mrce_crc32c(0, p, n);
	uint8_t first[4] = { p[0], p[1], p[2], (uint8_t)(p[3] & ~MRC_F_TRIMMED) };
	return mrce_crc32c(mrce_crc32c(0, first, 4), p + 4, n - 4);
}

size_t mrce_wire_put_data(uint8_t *buf, const struct mrc_data_hdr *h)
{
	return mrce_wire_put_data_x(buf, h, NULL);
}

size_t mrce_wire_put_data_x(uint8_t *buf, const struct mrc_data_hdr *h,
			    const struct mrc_xack *x)
{
	static const struct mrc_xack none;
	if (!x)
		x = &none;
	buf[0] = MRC_WIRE_VERSION;
	buf[1] = h->op;
	st16(buf + 2, h->flags);
	st32(buf + 4, h->dqpn);
	st32(buf + 8, h->psn);
	st16(buf + 12, h->ev);
	st16(buf + 14, h->plen);
	st32(buf + 16, h->msn);
	st32(buf + 20, h->rkey);
	st64(buf + 24, h->off);
	st64(buf + 32, h->ts);
	st32(buf + 40, h->mlen);
	st32(buf + 44, h->imm);
	st64(buf + 48, h->token);
	st32(buf + 56, h->pb_cum_psn);
	st16(buf + 60, h->pb_sack);
	st16(buf + 62, h->pb_hold);
	st32(buf + 64, hdr_crc(buf, 64));
	if (!(h->flags & MRC_F_XACK))
		return MRC_DATA_HDR_LEN;
	st32(buf + 68, x->dqpn);
	st32(buf + 72, x->cum_psn);
	st16(buf + 76, x->sack);
	st16(buf + 78, x->hold);
	st64(buf + 80, x->token);
	st32(buf + 88, mrce_crc32c(0, buf + 68, MRC_XACK_LEN - 4));
	return MRC_DATA_XHDR_LEN;
}

size_t mrce_wire_put_ack(uint8_t *buf, const struct mrc_ack_hdr *h)
{
	buf[0] = MRC_WIRE_VERSION;
	buf[1] = MRC_OP_ACK;
	st16(buf + 2, h->flags);
	st32(buf + 4, h->dqpn);
	st32(buf + 8, h->cum_psn);
	st16(buf + 12, h->ev);
	buf[14] = h->nack;
	buf[15] = h->nack == MRC_NACK_RNR ? h->rnr_timer : 0;
	st32(buf + 16, h->trig_psn);
	st32(buf + 20, h->sack_base);
	st64(buf + 24, h->ts_echo);
	st64(buf + 32, h->token);
	memcpy(buf + 40, h->sack, sizeof h->sack);
	st32(buf + 72, hdr_crc(buf, 72));
	return MRC_ACK_HDR_LEN;
}

size_t mrce_wire_put_probe(uint8_t *buf, const struct mrc_probe_hdr *h)
{
	buf[0] = MRC_WIRE_VERSION;
	buf[1] = h->op;
	st16(buf + 2, 0);
	st32(buf + 4, 0);
	st32(buf + 8, h->seq);
	st16(buf + 12, h->ev);
	st16(buf + 14, 0);
	st64(buf + 16, h->ts);
	st64(buf + 24, h->ts_echo);
	st64(buf + 32, h->token);
	st32(buf + 40, hdr_crc(buf, 40));
	return MRC_PROBE_HDR_LEN;
}

void mrce_wire_put_trailer(uint8_t out[MRC_TRAILER_LEN], const void *p, size_t n)
{
	st32(out, mrce_crc32c(0, p, n));
}

static int drop(enum mrce_wire_drop *why, enum mrce_wire_drop w)
{
	*why = w;
	return -EBADMSG;
}

static size_t fixed_hdr_len(uint8_t op)
{
	if (mrc_op_is_data(op))
		return MRC_DATA_HDR_LEN;
	switch (op) {
	case MRC_OP_ACK:
		return MRC_ACK_HDR_LEN;
	case MRC_OP_PROBE:
	case MRC_OP_PROBE_REPLY:
		return MRC_PROBE_HDR_LEN;
	default:
		return 0;
	}
}

/* Field rules of a data header (after its hcrc was verified). */
static int data_fields_ok(const struct mrc_data_hdr *d)
{
	const uint16_t fl = MRC_F_FIRST | MRC_F_LAST;

	if (d->flags & ~MRC_F_DATA_MASK)
		return 0;
	if (d->plen > MRC_MAX_PAYLOAD || d->plen > d->mlen)
		return 0;
	if (d->mlen == 0 && (d->plen != 0 || (d->flags & fl) != fl))
		return 0;
	if (d->imm != 0 && d->op != MRC_OP_WRITE_IMM && d->op != MRC_OP_SEND_IMM)
		return 0;
	/* Without a piggybacked ACK its fields are zero (canonical encoding);
	 * PB_ECN only qualifies a piggybacked ACK. */
	if (!(d->flags & MRC_F_PB_ACK) &&
	    (d->pb_cum_psn || d->pb_sack || d->pb_hold || (d->flags & MRC_F_PB_ECN)))
		return 0;
	switch (d->op) {
	case MRC_OP_SEND:
	case MRC_OP_SEND_IMM:
		/* off + plen <= mlen without overflow (plen <= mlen above) */
		if (d->off > d->mlen || d->plen > d->mlen - d->off)
			return 0;
		if ((d->flags & MRC_F_FIRST) && d->off != 0)
			return 0;
		if ((d->flags & MRC_F_LAST) && d->off + d->plen != d->mlen)
			return 0;
		break;
	case MRC_OP_ATOMIC_ADD:
		if (d->plen != 8 || d->mlen != 8 || (d->flags & fl) != fl ||
		    d->off % 8 != 0)
			return 0;
		break;
	default: /* WRITE, WRITE_IMM */
		if (d->off > UINT64_MAX - d->plen)
			return 0;
		break;
	}
	return 1;
}

static int decode_data(const uint8_t *p, size_t len, struct mrc_pkt_view *v,
		       enum mrce_wire_drop *why, uint32_t flags)
{
	struct mrc_data_hdr *d = &v->u.data;

	d->op = p[1];
	d->flags = ld16(p + 2);
	d->dqpn = ld32(p + 4);
	d->psn = ld32(p + 8);
	d->ev = ld16(p + 12);
	d->plen = ld16(p + 14);
	d->msn = ld32(p + 16);
	d->rkey = ld32(p + 20);
	d->off = ld64(p + 24);
	d->ts = ld64(p + 32);
	d->mlen = ld32(p + 40);
	d->imm = ld32(p + 44);
	d->token = ld64(p + 48);
	d->pb_cum_psn = ld32(p + 56);
	d->pb_sack = ld16(p + 60);
	d->pb_hold = ld16(p + 62);
	if (!data_fields_ok(d))
		return drop(why, MRC_DROP_FIELD);

	struct mrc_xack *xa = &v->xack;
	memset(xa, 0, sizeof *xa);
	if ((flags & MRC_WIRE_SPLIT) && (d->flags & MRC_F_TRIMMED))
		return drop(why, MRC_DROP_FIELD);
	if (d->flags & MRC_F_TRIMMED) {
		/* A switch trims only packets that carry payload; without this
		 * rule a flip of the (CRC-exempt) TRIMMED bit of a zero-length
		 * packet would be the one undetectable single-bit error. */
		if (d->plen == 0)
			return drop(why, MRC_DROP_FIELD);
		if (len != MRC_DATA_HDR_LEN)
			return drop(why, MRC_DROP_LENGTH);
		/* The trim cut the XACK extension: that ACK is lost, as an ACK
		 * packet may be (the next one covers it). */
		d->flags &= (uint16_t)~MRC_F_XACK;
		v->trimmed = 1;
		v->payload = NULL;
		return 0;
	}
	size_t hl = MRC_DATA_HDR_LEN;
	if (d->flags & MRC_F_XACK) {
		if (len < MRC_DATA_XHDR_LEN)
			return drop(why, MRC_DROP_LENGTH);
		const uint8_t *x = p + MRC_DATA_HDR_LEN;
		if (mrce_crc32c(0, x, MRC_XACK_LEN - 4) != ld32(x + MRC_XACK_LEN - 4))
			return drop(why, MRC_DROP_HCRC);
		xa->dqpn = ld32(x);
		xa->cum_psn = ld32(x + 4);
		xa->sack = ld16(x + 8);
		xa->hold = ld16(x + 10);
		xa->token = ld64(x + 12);
		hl = MRC_DATA_XHDR_LEN;
	}
	size_t want = hl + (size_t)d->plen + (d->plen ? MRC_TRAILER_LEN : 0);
	if (flags & MRC_WIRE_SPLIT)
		want = hl;
	if (len != want)
		return drop(why, MRC_DROP_LENGTH);
	v->trimmed = 0;
	v->payload = NULL;
	if (d->plen && !(flags & MRC_WIRE_SPLIT)) {
		const uint8_t *pl = p + hl;
		if (!(flags & MRC_WIRE_NO_PCRC) &&
		    mrce_crc32c(0, pl, d->plen) != ld32(pl + d->plen))
			return drop(why, MRC_DROP_PCRC);
		v->payload = pl;
	}
	return 0;
}

static int decode_ack(const uint8_t *p, size_t len, struct mrc_pkt_view *v,
		      enum mrce_wire_drop *why)
{
	struct mrc_ack_hdr *a = &v->u.ack;

	if (len != MRC_ACK_HDR_LEN)
		return drop(why, MRC_DROP_LENGTH);
	a->flags = ld16(p + 2);
	a->dqpn = ld32(p + 4);
	a->cum_psn = ld32(p + 8);
	a->ev = ld16(p + 12);
	a->nack = p[14];
	a->rnr_timer = p[15];
	a->trig_psn = ld32(p + 16);
	a->sack_base = ld32(p + 20);
	a->ts_echo = ld64(p + 24);
	a->token = ld64(p + 32);
	memcpy(a->sack, p + 40, sizeof a->sack);
	if ((a->flags & ~MRC_AF_MASK) || a->nack > MRC_NACK_MAX ||
	    (a->nack == MRC_NACK_RNR ? a->rnr_timer > MRC_RNR_TIMER_MAX : a->rnr_timer != 0) ||
	    mrc_psn_lt(a->sack_base, a->cum_psn))
		return drop(why, MRC_DROP_FIELD);
	v->trimmed = 0;
	v->payload = NULL;
	return 0;
}

static int decode_probe(const uint8_t *p, size_t len, struct mrc_pkt_view *v,
			enum mrce_wire_drop *why)
{
	struct mrc_probe_hdr *r = &v->u.probe;

	if (len != MRC_PROBE_HDR_LEN)
		return drop(why, MRC_DROP_LENGTH);
	if (ld16(p + 2) != 0 || ld32(p + 4) != 0 || ld16(p + 14) != 0)
		return drop(why, MRC_DROP_FIELD);
	r->op = p[1];
	r->seq = ld32(p + 8);
	r->ev = ld16(p + 12);
	r->ts = ld64(p + 16);
	r->ts_echo = ld64(p + 24);
	r->token = ld64(p + 32);
	v->trimmed = 0;
	v->payload = NULL;
	return 0;
}

int mrce_wire_decode(const void *buf, size_t len, struct mrc_pkt_view *v,
		    enum mrce_wire_drop *why)
{
	return mrce_wire_decode_flags(buf, len, v, why, 0);
}

int mrce_wire_decode_flags(const void *buf, size_t len, struct mrc_pkt_view *v,
			  enum mrce_wire_drop *why, uint32_t flags)
{
	const uint8_t *p = buf;

	if (len < 4)
		return drop(why, MRC_DROP_TRUNCATED);
	if (p[0] != MRC_WIRE_VERSION)
		return drop(why, MRC_DROP_VERSION);
	size_t hl = fixed_hdr_len(p[1]);
	if (hl == 0)
		return drop(why, MRC_DROP_OPCODE);
	if (len < hl)
		return drop(why, MRC_DROP_TRUNCATED);
	if (hdr_crc(p, hl - 4) != ld32(p + hl - 4))
		return drop(why, MRC_DROP_HCRC);

	int rc;
	v->op = p[1];
	if (mrc_op_is_data(p[1]))
		rc = decode_data(p, len, v, why, flags);
	else if (p[1] == MRC_OP_ACK)
		rc = decode_ack(p, len, v, why);
	else
		rc = decode_probe(p, len, v, why);
	if (rc == 0)
		*why = MRC_DROP_NONE;
	return rc;
}

size_t mrce_wire_trim(uint8_t *buf, size_t len)
{
	if (len <= MRC_DATA_HDR_LEN || buf[0] != MRC_WIRE_VERSION ||
	    !mrc_op_is_data(buf[1]))
		return len;
	buf[3] |= MRC_F_TRIMMED; /* low byte of the big-endian flags */
	return MRC_DATA_HDR_LEN;
}

const char *mrce_wire_drop_name(enum mrce_wire_drop why)
{
	static const char *const names[MRC_DROP__COUNT] = {
		[MRC_DROP_NONE] = "none",
		[MRC_DROP_TRUNCATED] = "truncated",
		[MRC_DROP_VERSION] = "bad_version",
		[MRC_DROP_OPCODE] = "bad_opcode",
		[MRC_DROP_HCRC] = "bad_hcrc",
		[MRC_DROP_PCRC] = "bad_pcrc",
		[MRC_DROP_LENGTH] = "bad_length",
		[MRC_DROP_FIELD] = "bad_field",
	};
	if ((unsigned)why >= MRC_DROP__COUNT)
		return "unknown";
	return names[why];
}

int mrce_wire_is_ctrl(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	return len >= 2 && p[1] == MRC_OP_CTRL;
}

const char *mrce_op_name(uint8_t op)
{
	switch (op) {
	case MRC_OP_WRITE: return "WRITE";
	case MRC_OP_WRITE_IMM: return "WRITE_IMM";
	case MRC_OP_SEND: return "SEND";
	case MRC_OP_SEND_IMM: return "SEND_IMM";
	case MRC_OP_ATOMIC_ADD: return "ATOMIC_ADD";
	case MRC_OP_ACK: return "ACK";
	case MRC_OP_PROBE: return "PROBE";
	case MRC_OP_PROBE_REPLY: return "PROBE_REPLY";
	default: return "UNKNOWN";
	}
}

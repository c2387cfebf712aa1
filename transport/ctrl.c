/* The one codec of daemon-to-daemon CTRL datagrams (opcode MRC_OP_CTRL):
 * the envelope's fixed header and the v2 message body, typed and
 * length-checked (engine.h, "CTRL datagrams"; docs/wire.md).  auth/ MACs
 * what this lays out, the daemon acts on what this decodes: neither
 * knows an offset. */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "transport/be.h"
#include "transport/engine.h"

_Static_assert(MRCE_CTRL_NONCE == 16 && MRCE_CTRL_BODY == 56, "v2 CTRL body layout");


int mrce_is_ctrl(const void *buf, size_t len)
{
	return mrce_wire_is_ctrl(buf, len);
}

/* ---- envelope ------------------------------------------------------------
 *   0 version u8  1 opcode u8  2 flags u16  4 src_host u32  8 dst_host u32
 *   12 blen u16  14 rsvd u16 (0)  16 stamp u64  24 src_epoch u64
 *   32 dst_tag u64  40 body[blen]  40+blen mac[MRCE_CTRL_ENV_MAC] */
void mrce_ctrl_env_put(uint8_t out[MRCE_CTRL_ENV_HDR], const struct mrce_ctrl_env *h)
{
	out[0] = MRC_WIRE_VERSION;
	out[1] = MRC_OP_CTRL;
	st16(out + 2, h->flags);
	st32(out + 4, h->src_host);
	st32(out + 8, h->dst_host);
	st16(out + 12, h->blen);
	st16(out + 14, 0);
	st64(out + 16, h->stamp);
	st64(out + 24, h->src_epoch);
	st64(out + 32, h->dst_tag);
}

int mrce_ctrl_env_get(const uint8_t *p, size_t len, struct mrce_ctrl_env *h)
{
	if (len < MRCE_CTRL_ENV_HDR + MRCE_CTRL_ENV_MAC || p[0] != MRC_WIRE_VERSION ||
	    p[1] != MRC_OP_CTRL || (ld16(p + 2) & ~MRCE_CTRL_F_CHALLENGE) || ld16(p + 14))
		return -EBADMSG;
	uint16_t blen = ld16(p + 12);
	if (blen > MRCE_CTRL_ENV_MAX_BODY ||
	    len != (size_t)MRCE_CTRL_ENV_HDR + blen + MRCE_CTRL_ENV_MAC)
		return -EBADMSG;
	*h = (struct mrce_ctrl_env){ .flags = ld16(p + 2), .src_host = ld32(p + 4),
		.dst_host = ld32(p + 8), .blen = blen, .stamp = ld64(p + 16),
		.src_epoch = ld64(p + 24), .dst_tag = ld64(p + 32) };
	return 0;
}

/* ---- v2 message body -----------------------------------------------------
 *   0 type u8  1 rsvd[3] (0)  4 sid u32  8 id u64  16 qpn u32  20 psn u32
 *   24 err i32  28 arg u32  32 nonce[16]  48 window u32  52 mtu u32
 * then, optionally: 56 n u8 (1..16)  57 rsvd[3] (0)  60 ep[n] u32 */
size_t mrce_ctrl_encode(uint8_t *out, const struct mrce_ctrl *m)
{
	memset(out, 0, MRCE_CTRL_BODY);
	out[0] = m->type;
	st32(out + 4, m->sid);
	st64(out + 8, m->id);
	st32(out + 16, m->qpn);
	st32(out + 20, m->psn);
	st32(out + 24, (uint32_t)m->err);
	st32(out + 28, m->arg);
	memcpy(out + 32, m->nonce, MRCE_CTRL_NONCE);
	st32(out + 48, m->window);
	st32(out + 52, m->mtu);
	if (!m->neps)
		return MRCE_CTRL_BODY;
	uint32_t n = m->neps < MRCE_CTRL_MAX_EPS ? m->neps : MRCE_CTRL_MAX_EPS;
	memset(out + MRCE_CTRL_BODY, 0, 4);
	out[MRCE_CTRL_BODY] = (uint8_t)n;
	for (uint32_t i = 0; i < n; i++)
		st32(out + MRCE_CTRL_BODY + 4 + 4 * i, m->ep[i]);
	return MRCE_CTRL_BODY + 4 + 4 * n;
}

/* The optional endpoint block: every byte accounted for. */
static int decode_eps(const uint8_t *b, size_t len, struct mrce_ctrl *m)
{
	if (len == MRCE_CTRL_BODY)
		return 0;
	if (m->type == MRCE_CTRL_REJ || len < MRCE_CTRL_BODY + 4)
		return -EBADMSG;
	const uint8_t *x = b + MRCE_CTRL_BODY;
	uint32_t n = x[0];
	if (!n || n > MRCE_CTRL_MAX_EPS || x[1] || x[2] || x[3] ||
	    len != MRCE_CTRL_BODY + 4 + 4 * (size_t)n)
		return -EBADMSG;
	for (uint32_t i = 0; i < n; i++) {
		m->ep[i] = ld32(x + 4 + 4 * i);
		/* 0 and 1 are the QPs every port has (SMI, GSI): never ours. */
		if (m->ep[i] < 2 || m->ep[i] > 0xffffff)
			return -EBADMSG;
	}
	m->neps = n;
	return 0;
}

static int all_zero(const uint8_t *p, size_t n)
{
	uint8_t acc = 0;
	for (size_t i = 0; i < n; i++)
		acc |= p[i];
	return !acc;
}

int mrce_ctrl_decode(const uint8_t *b, size_t len, struct mrce_ctrl *m)
{
	if (len < MRCE_CTRL_BODY || len > MRCE_CTRL_BODY_MAX || b[1] || b[2] || b[3])
		return -EBADMSG;
	if (b[0] < MRCE_CTRL_REQ || b[0] > MRCE_CTRL_PLANES)
		return -EBADMSG;
	*m = (struct mrce_ctrl){ .type = b[0], .sid = ld32(b + 4), .id = ld64(b + 8),
		.qpn = ld32(b + 16), .psn = ld32(b + 20), .err = (int32_t)ld32(b + 24),
		.arg = ld32(b + 28), .window = ld32(b + 48), .mtu = ld32(b + 52) };
	memcpy(m->nonce, b + 32, MRCE_CTRL_NONCE);
	if (m->err > 0 || m->err < -4095)
		return -EBADMSG;
	int conn = m->type == MRCE_CTRL_REQ || m->type == MRCE_CTRL_REP;
	if (!conn)
		return all_zero(b + 32, 24) ? decode_eps(b, len, m) : -EBADMSG;
	if (all_zero(m->nonce, MRCE_CTRL_NONCE) || m->window < 4 ||
	    m->window > MRCE_MAX_WINDOW || (m->window & (m->window - 1)) ||
	    m->mtu < 64 || m->mtu > MRC_MAX_PAYLOAD)
		return -EBADMSG;
	return decode_eps(b, len, m);
}

/* ---- HEALTH body ---------------------------------------------------------
 *   0 type u8 (5)  1 rsvd[3] (0)  4 n u16  6 rsvd u16 (0)
 *   8 + 12i: dst u32, ev u16, ok u8, rsvd u8 (0), age_us u32 */
size_t mrce_ctrl_health_encode(uint8_t *out, const struct mrce_ctrl_health *m)
{
	uint32_t n = m->n < MRCE_CTRL_HEALTH_MAX ? m->n : MRCE_CTRL_HEALTH_MAX;
	memset(out, 0, MRCE_CTRL_HEALTH_LEN(n));
	out[0] = MRCE_CTRL_HEALTH;
	st16(out + 4, (uint16_t)n);
	for (uint32_t i = 0; i < n; i++) {
		uint8_t *r = out + MRCE_CTRL_HEALTH_LEN(i);
		st32(r, m->obs[i].dst);
		st16(r + 4, m->obs[i].ev);
		r[6] = m->obs[i].ok ? 1 : 0;
		st32(r + 8, m->obs[i].age_us);
	}
	return MRCE_CTRL_HEALTH_LEN(n);
}

int mrce_ctrl_health_decode(const uint8_t *b, size_t len, struct mrce_ctrl_health *m)
{
	if (len < MRCE_CTRL_HEALTH_LEN(1) || b[0] != MRCE_CTRL_HEALTH || b[1] || b[2] || b[3] ||
	    ld16(b + 6))
		return -EBADMSG;
	uint32_t n = ld16(b + 4);
	if (!n || n > MRCE_CTRL_HEALTH_MAX || len != MRCE_CTRL_HEALTH_LEN(n))
		return -EBADMSG;
	m->n = n;
	for (uint32_t i = 0; i < n; i++) {
		const uint8_t *r = b + MRCE_CTRL_HEALTH_LEN(i);
		if (r[6] > 1 || r[7])
			return -EBADMSG;
		m->obs[i] = (struct mrce_ctrl_health_obs){ .dst = ld32(r), .ev = ld16(r + 4),
			.ok = r[6], .age_us = ld32(r + 8) };
	}
	return 0;
}

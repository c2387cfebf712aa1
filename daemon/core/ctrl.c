/* Encoding and sealing of daemon control messages: see ctrl.h. */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "daemon/core/ctrl.h"
#include "transport/engine.h"
#include "transport/wire.h"

static void put32(uint8_t *p, uint32_t v) { v = htobe32(v); memcpy(p, &v, 4); }
static uint32_t get32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return be32toh(v); }

size_t mrcd_ctrl_encode(uint8_t *out, const struct mrcd_ctrl *m)
{
	memset(out, 0, MRCD_CTRL_BODY);
	out[0] = m->type;
	put32(out + 4, m->sid);
	uint64_t id = htobe64(m->id);
	memcpy(out + 8, &id, 8);
	put32(out + 16, m->qpn);
	put32(out + 20, m->psn);
	put32(out + 24, (uint32_t)m->err);
	put32(out + 28, m->arg);
	memcpy(out + 32, m->nonce, MRC_AUTH_NONCE_BYTES);
	put32(out + 48, m->window);
	put32(out + 52, m->mtu);
	if (!m->neps)
		return MRCD_CTRL_BODY;
	uint32_t n = m->neps < MRCD_CTRL_MAX_EPS ? m->neps : MRCD_CTRL_MAX_EPS;
	memset(out + MRCD_CTRL_BODY, 0, 4);
	out[MRCD_CTRL_BODY] = (uint8_t)n;
	for (uint32_t i = 0; i < n; i++)
		put32(out + MRCD_CTRL_BODY + 4 + 4 * i, m->ep[i]);
	return MRCD_CTRL_BODY + 4 + 4 * n;
}

/* The optional endpoint block (ctrl.h): every byte accounted for. */
static int decode_eps(const uint8_t *b, size_t len, struct mrcd_ctrl *m)
{
	if (len == MRCD_CTRL_BODY)
		return 0;
	if (m->type == MRCD_CTRL_REJ || len < MRCD_CTRL_BODY + 4)
		return -EBADMSG;
	const uint8_t *x = b + MRCD_CTRL_BODY;
	uint32_t n = x[0];
	if (!n || n > MRCD_CTRL_MAX_EPS || x[1] || x[2] || x[3] ||
	    len != MRCD_CTRL_BODY + 4 + 4 * (size_t)n)
		return -EBADMSG;
	for (uint32_t i = 0; i < n; i++) {
		m->ep[i] = get32(x + 4 + 4 * i);
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

int mrcd_ctrl_decode(const uint8_t *b, size_t len, struct mrcd_ctrl *m)
{
	if (len < MRCD_CTRL_BODY || len > MRCD_CTRL_BODY_MAX || b[1] || b[2] || b[3])
		return -EBADMSG;
	if (b[0] < MRCD_CTRL_REQ || b[0] > MRCD_CTRL_PLANES)
		return -EBADMSG;
	uint64_t id;
	memcpy(&id, b + 8, 8);
	*m = (struct mrcd_ctrl){ .type = b[0], .sid = get32(b + 4), .id = be64toh(id),
		.qpn = get32(b + 16), .psn = get32(b + 20), .err = (int32_t)get32(b + 24),
		.arg = get32(b + 28), .window = get32(b + 48), .mtu = get32(b + 52) };
	memcpy(m->nonce, b + 32, MRC_AUTH_NONCE_BYTES);
	if (m->err > 0 || m->err < -4095)
		return -EBADMSG;
	int conn = m->type == MRCD_CTRL_REQ || m->type == MRCD_CTRL_REP;
	if (!conn)
		return all_zero(b + 32, 24) ? decode_eps(b, len, m) : -EBADMSG;
	if (all_zero(m->nonce, MRC_AUTH_NONCE_BYTES) || m->window < 4 ||
	    m->window > MRC_MAX_WINDOW || (m->window & (m->window - 1)) ||
	    m->mtu < 64 || m->mtu > MRC_MAX_PAYLOAD)
		return -EBADMSG;
	return decode_eps(b, len, m);
}

int mrcd_ctrl_seal_len(const struct mrc_auth *a, struct mrc_auth_ctrl_tx *tx,
		       const struct mrc_auth_replay *r, uint64_t now_real_ns,
		       uint32_t src_host, uint32_t dst_host, const struct mrcd_ctrl *m,
		       uint8_t out[MRCD_CTRL_LEN_MAX], size_t *len)
{
	uint8_t body[MRCD_CTRL_BODY_MAX];
	size_t blen = mrcd_ctrl_encode(body, m);
	return mrc_auth_ctrl_seal(a, tx, r, now_real_ns, src_host, dst_host, body, blen,
				  out, MRCD_CTRL_LEN_MAX, len);
}

int mrcd_ctrl_seal(const struct mrc_auth *a, struct mrc_auth_ctrl_tx *tx,
		   const struct mrc_auth_replay *r, uint64_t now_real_ns, uint32_t src_host,
		   uint32_t dst_host, const struct mrcd_ctrl *m, uint8_t out[MRCD_CTRL_LEN])
{
	uint8_t big[MRCD_CTRL_LEN_MAX];
	size_t len;
	if (m->neps)
		return -EINVAL;
	int rc = mrcd_ctrl_seal_len(a, tx, r, now_real_ns, src_host, dst_host, m, big, &len);
	if (!rc)
		memcpy(out, big, MRCD_CTRL_LEN);
	return rc;
}

int mrcd_ctrl_open(const struct mrc_auth *a, struct mrc_auth_replay *r,
		   uint64_t now_real_ns, uint32_t from_host, const uint8_t *pkt, size_t len,
		   struct mrc_auth_ctrl_msg *env, struct mrcd_ctrl *m)
{
	int rc = mrc_auth_ctrl_open(a, r, now_real_ns, from_host, pkt, len, env);
	if (rc)
		return rc;
	if (env->challenge) {
		memset(m, 0, sizeof(*m));
		return 0;
	}
	return mrcd_ctrl_decode(env->body, env->blen, m);
}

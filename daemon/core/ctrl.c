/* Sealing of daemon control messages: see ctrl.h.  The engine lays
 * them out (mrce_ctrl_encode/decode), auth/ seals them. */
#include <errno.h>
#include <string.h>

#include "daemon/core/ctrl.h"

_Static_assert(MRCE_CTRL_NONCE == MRC_AUTH_NONCE_BYTES, "CTRL nonce is auth's");

int mrcd_ctrl_seal_len(const struct mrc_auth *a, struct mrc_auth_ctrl_tx *tx,
		       const struct mrc_auth_replay *r, uint64_t now_real_ns,
		       uint32_t src_host, uint32_t dst_host, const struct mrce_ctrl *m,
		       uint8_t out[MRCD_CTRL_LEN_MAX], size_t *len)
{
	uint8_t body[MRCE_CTRL_BODY_MAX];
	size_t blen = mrce_ctrl_encode(body, m);
	return mrc_auth_ctrl_seal(a, tx, r, now_real_ns, src_host, dst_host, body, blen,
				  out, MRCD_CTRL_LEN_MAX, len);
}

int mrcd_ctrl_seal(const struct mrc_auth *a, struct mrc_auth_ctrl_tx *tx,
		   const struct mrc_auth_replay *r, uint64_t now_real_ns, uint32_t src_host,
		   uint32_t dst_host, const struct mrce_ctrl *m, uint8_t out[MRCD_CTRL_LEN])
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
		   struct mrc_auth_ctrl_msg *env, struct mrce_ctrl *m)
{
	int rc = mrc_auth_ctrl_open(a, r, now_real_ns, from_host, pkt, len, env);
	if (rc)
		return rc;
	if (env->challenge) {
		memset(m, 0, sizeof(*m));
		return 0;
	}
	/* HEALTH has its own body codec (health.c decodes env->body): only
	 * its type here. */
	if (env->blen && env->body[0] == MRCE_CTRL_HEALTH) {
		memset(m, 0, sizeof(*m));
		m->type = MRCE_CTRL_HEALTH;
		return 0;
	}
	return mrce_ctrl_decode(env->body, env->blen, m);
}

/* Daemon-to-daemon control messages (opcode CTRL): the body the engine's
 * CTRL codec lays out (transport/engine.h, struct mrce_ctrl, "CTRL
 * datagrams"; docs/wire.md) sealed in the auth/ CTRL envelope (MAC with
 * the cluster key, anti-replay stamp, sender and destination hosts).
 * Only glue lives here: which key seals which message.  They are rare
 * (connection setup, plane state), so each is one small datagram,
 * retried by its sender. */
#ifndef MRC_DAEMON_CTRL_H
#define MRC_DAEMON_CTRL_H

#include <stddef.h>
#include <stdint.h>

#include "auth/auth.h"
#include "transport/engine.h"

#define MRCD_CTRL_LEN (MRC_AUTH_CTRL_OVERHEAD + MRCE_CTRL_BODY)        /* sealed */
#define MRCD_CTRL_LEN_MAX (MRC_AUTH_CTRL_OVERHEAD + MRCE_CTRL_BODY_MAX)

/* Encodes m (without endpoints: -EINVAL otherwise) and seals it from
 * src_host to dst_host (mrc_auth_ctrl_seal: r gives the dst_tag, the
 * cookie dst_host issued us) into out[MRCD_CTRL_LEN]. */
int mrcd_ctrl_seal(const struct mrc_auth *a, struct mrc_auth_ctrl_tx *tx,
		   const struct mrc_auth_replay *r, uint64_t now_real_ns, uint32_t src_host,
		   uint32_t dst_host, const struct mrce_ctrl *m, uint8_t out[MRCD_CTRL_LEN]);
/* The same for any m, into out[MRCD_CTRL_LEN_MAX]; *len: the datagram's. */
int mrcd_ctrl_seal_len(const struct mrc_auth *a, struct mrc_auth_ctrl_tx *tx,
		       const struct mrc_auth_replay *r, uint64_t now_real_ns,
		       uint32_t src_host, uint32_t dst_host, const struct mrce_ctrl *m,
		       uint8_t out[MRCD_CTRL_LEN_MAX], size_t *len);
/* Opens a datagram (mrc_auth_ctrl_open, from_host the host its source
 * address names: -EBADMSG, -EACCES, -EXDEV, -ERANGE, -ESTALE, -ENOTCONN,
 * -EALREADY) and decodes its body (-EBADMSG).  *env: the envelope (its
 * sender, epoch; env->challenge: a CHALLENGE, taken, m->type 0). */
int mrcd_ctrl_open(const struct mrc_auth *a, struct mrc_auth_replay *r,
		   uint64_t now_real_ns, uint32_t from_host, const uint8_t *pkt, size_t len,
		   struct mrc_auth_ctrl_msg *env, struct mrce_ctrl *m);

#endif

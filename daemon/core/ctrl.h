/* Daemon-to-daemon control messages (opcode MRC_OP_CTRL), wire version 2:
 * a 56-byte body (docs/wire.md, "Body of a v2 CTRL message") sealed in the
 * auth/ CTRL envelope (MAC with the cluster key, anti-replay stamp, sender
 * and destination hosts).
 *   0 type u8  1 rsvd[3] (0)  4 sid u32  8 id u64  16 qpn u32  20 psn u32
 *   24 err i32  28 arg u32  32 nonce[16]  48 window u32  52 mtu u32
 * REQ, REP and PLANES may carry an endpoint block after the 56 bytes,
 * sent only by an mrcd whose datapath has endpoints (verbs: the UD QP
 * number of each plane; docs/datapaths.md, "First contact"), so a udp
 * mrcd's messages are unchanged:
 *   56 n u8 (1..16)  57 rsvd[3] (0)  60 ep[n] u32 (each 2..2^24-1)
 * They are rare (connection setup, plane state), so each is one small
 * datagram, retried by its sender. */
#ifndef MRC_DAEMON_CTRL_H
#define MRC_DAEMON_CTRL_H

#include <stddef.h>
#include <stdint.h>

#include "auth/auth.h"

#define MRCD_CTRL_BODY 56
#define MRCD_CTRL_LEN (MRC_AUTH_CTRL_OVERHEAD + MRCD_CTRL_BODY)   /* sealed */
#define MRCD_CTRL_MAX_EPS 16      /* MRC_DP_MAX_PLANES */
#define MRCD_CTRL_BODY_MAX (MRCD_CTRL_BODY + 4 + 4 * MRCD_CTRL_MAX_EPS)
#define MRCD_CTRL_LEN_MAX (MRC_AUTH_CTRL_OVERHEAD + MRCD_CTRL_BODY_MAX)

enum mrcd_ctrl_type {
	MRCD_CTRL_REQ = 1,        /* connect to service sid: my QP is qpn/psn */
	MRCD_CTRL_REP = 2,        /* accepted: my QP is qpn/psn */
	MRCD_CTRL_REJ = 3,        /* refused: err */
	MRCD_CTRL_PLANES = 4,     /* arg: bitmask of my planes that are down */
};

struct mrcd_ctrl {
	uint8_t type;
	uint64_t id;
	uint32_t sid, qpn, psn, arg;
	int32_t err;
	/* REQ/REP only (0 in the others): the sender's connection nonce, and
	 * the window and MTU it can take (the smaller of both sides wins). */
	uint8_t nonce[MRC_AUTH_NONCE_BYTES];
	uint32_t window, mtu;
	/* REQ/REP/PLANES, optional: the sender's endpoint per plane (neps 0:
	 * no block, the 56-byte message of a datapath without endpoints). */
	uint32_t neps;
	uint32_t ep[MRCD_CTRL_MAX_EPS];
};

/* Writes the body (out: MRCD_CTRL_BODY bytes, MRCD_CTRL_BODY_MAX when
 * m->neps > 0) and returns its length. */
size_t mrcd_ctrl_encode(uint8_t *out, const struct mrcd_ctrl *m);
/* 0, or -EBADMSG for a wrong length or a field out of range (nonzero
 * reserved bytes, unknown type, err outside -4095..0; in REQ/REP an
 * all-zero nonce, a window that is not a power of two in 4..256 or an MTU
 * outside 64..9000; elsewhere nonce, window or MTU not 0; an endpoint
 * block on REJ, with n outside 1..16, nonzero reserved bytes, a length
 * other than 60 + 4n, or an endpoint outside 2..2^24-1). */
int mrcd_ctrl_decode(const uint8_t *buf, size_t len, struct mrcd_ctrl *m);

/* Encodes m (without endpoints: -EINVAL otherwise) and seals it from
 * src_host to dst_host (mrc_auth_ctrl_seal: r gives the dst_tag, the
 * cookie dst_host issued us) into out[MRCD_CTRL_LEN]. */
int mrcd_ctrl_seal(const struct mrc_auth *a, struct mrc_auth_ctrl_tx *tx,
		   const struct mrc_auth_replay *r, uint64_t now_real_ns, uint32_t src_host,
		   uint32_t dst_host, const struct mrcd_ctrl *m, uint8_t out[MRCD_CTRL_LEN]);
/* The same for any m, into out[MRCD_CTRL_LEN_MAX]; *len: the datagram's. */
int mrcd_ctrl_seal_len(const struct mrc_auth *a, struct mrc_auth_ctrl_tx *tx,
		       const struct mrc_auth_replay *r, uint64_t now_real_ns,
		       uint32_t src_host, uint32_t dst_host, const struct mrcd_ctrl *m,
		       uint8_t out[MRCD_CTRL_LEN_MAX], size_t *len);
/* Opens a datagram (mrc_auth_ctrl_open, from_host the host its source
 * address names: -EBADMSG, -EACCES, -EXDEV, -ERANGE, -ESTALE, -ENOTCONN,
 * -EALREADY) and decodes its body (-EBADMSG).  *env: the envelope (its
 * sender, epoch; env->challenge: a CHALLENGE, taken, m->type 0). */
int mrcd_ctrl_open(const struct mrc_auth *a, struct mrc_auth_replay *r,
		   uint64_t now_real_ns, uint32_t from_host, const uint8_t *pkt, size_t len,
		   struct mrc_auth_ctrl_msg *env, struct mrcd_ctrl *m);

#endif

/* Daemon-to-daemon control datagrams (opcode MRC_OP_CTRL), 44 bytes:
 *   0 ver u8  1 op u8 (48)  2 flags u16 (0)  4 type u8  5 rsvd[3] (0)
 *   8 id u64  16 sid u32  20 src_host u32  24 qpn u32  28 psn u32
 *   32 err i32  36 arg u32  40 crc u32 (CRC-32C of bytes 0..40)
 * They are rare (connection setup, plane state), so each is one small
 * datagram with its own CRC and retried by its sender. */
#ifndef MRC_DAEMON_CTRL_H
#define MRC_DAEMON_CTRL_H

#include <stddef.h>
#include <stdint.h>

#define MRCD_CTRL_LEN 44

enum mrcd_ctrl_type {
	MRCD_CTRL_REQ = 1,        /* connect to service sid: my QP is qpn/psn */
	MRCD_CTRL_REP = 2,        /* accepted: my QP is qpn/psn */
	MRCD_CTRL_REJ = 3,        /* refused: err */
	MRCD_CTRL_PLANES = 4,     /* arg: bitmask of my planes that are down */
};

struct mrcd_ctrl {
	uint8_t type;
	uint64_t id;
	uint32_t sid, src_host, qpn, psn, arg;
	int32_t err;
};

void mrcd_ctrl_encode(uint8_t out[MRCD_CTRL_LEN], const struct mrcd_ctrl *m);
/* 0, or -EBADMSG for a wrong length, version, opcode, CRC or field. */
int mrcd_ctrl_decode(const uint8_t *buf, size_t len, struct mrcd_ctrl *m);

#endif

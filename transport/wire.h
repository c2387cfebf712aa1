/* MRC wire format, version 2.  docs/wire.md is the normative description.
 *
 * All multi-byte fields are big-endian.  Every packet starts with
 * (version u8, opcode u8, flags u16) and ends its fixed header with hcrc, a
 * CRC-32C over the header bytes before it (with the TRIMMED flag bit taken
 * as 0, so a switch that trims a packet only sets one bit and cuts the
 * tail).  Data packets with payload carry a 4-byte trailer, pcrc, a CRC-32C
 * over the payload.  UDP's checksum is zero in SRv6 uSID mode (the
 * destination address changes hop by hop), so these two CRCs are the only
 * integrity check, the way RoCE relies on its ICRC.
 *
 *
 * Version 2 adds a 64-bit token to every packet (the receiver compares it
 * with the one it expects before any effect, so an off-path sender cannot
 * forge state changes; tokens are opaque here, derived by auth/) and room
 * for a piggybacked ACK in data packets.
 *
 * Data header (68 bytes, 92 with the XACK extension at 68):
 *   0 ver  1 op  2 flags  4 dqpn  8 psn  12 ev u16  14 plen u16  16 msn
 *   20 rkey (SEND: ssn)  24 off u64  32 ts u64  40 mlen  44 imm
 *   48 token u64  56 pb_cum_psn  60 pb_sack u16  62 pb_hold u16  64 hcrc
 * ACK header (76 bytes):
 *   0 ver  1 op  2 flags  4 dqpn  8 cum_psn  12 ev u16  14 nack u8
 *   15 rsvd u8  16 trig_psn  20 sack_base  24 ts_echo u64  32 token u64
 *   40 sack[32]  72 hcrc
 * PROBE / PROBE_REPLY header (44 bytes):
 *   0 ver  1 op  2 flags  4 rsvd u32  8 seq  12 ev u16  14 rsvd u16
 *   16 ts u64  24 ts_echo u64  32 token u64  40 hcrc
 */
#ifndef MRC_TRANSPORT_WIRE_H
#define MRC_TRANSPORT_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "mrc/ring.h"

#define MRC_WIRE_VERSION 2

#define MRC_DATA_HDR_LEN  68
#define MRC_ACK_HDR_LEN   76
#define MRC_PROBE_HDR_LEN 44
#define MRC_TRAILER_LEN   4
#define MRC_HDR_MAX       76
/* Largest payload one packet may carry (jumbo frames minus headers). */
#define MRC_MAX_PAYLOAD   9000
#define MRC_SACK_BITS     256

/* The data opcodes are the ring ABI's submission opcodes (mrc/ring.h, the
 * one definition of op codes): a work request keeps its op from the ring
 * to the wire, with no translation on the way. */
enum mrc_op {
	MRC_OP_WRITE = MRC_SQE_WRITE,
	MRC_OP_WRITE_IMM = MRC_SQE_WRITE_IMM,
	MRC_OP_SEND = MRC_SQE_SEND,
	MRC_OP_SEND_IMM = MRC_SQE_SEND_IMM,
	MRC_OP_ATOMIC_ADD = MRC_SQE_ATOMIC_ADD, /* payload: the 8-byte big-endian addend */
	MRC_OP_ACK = 16,         /* also carries NACKs (nack != 0) */
	MRC_OP_PROBE = 32,
	MRC_OP_PROBE_REPLY = 33,
	/* Daemon-to-daemon control datagrams (connection setup, plane state).
	 * The daemon takes them before the engine; the engine drops them as
	 * an unknown opcode.  Format: daemon/ctrl.h, docs/wire.md. */
	MRC_OP_CTRL = 48,
};

/* Data packet flags. */
#define MRC_F_FIRST   0x0001u  /* first packet of its message */
#define MRC_F_LAST    0x0002u  /* last packet of its message */
#define MRC_F_RETX    0x0004u  /* a retransmission (diagnostics only) */
#define MRC_F_TRIMMED 0x0008u  /* payload cut by a switch; set by the switch */
#define MRC_F_PB_ACK  0x0010u  /* pb_* fields carry a piggybacked ACK */
#define MRC_F_PB_ECN  0x0020u  /* with PB_ACK: a packet it covers was ECN-CE */
/* 0x0080: XACK, an ACK for another QP to the same peer follows the header
 * (docs/wire.md "Cross-QP ACK"); 0x0040 (ENC) stays outside the mask. */
#define MRC_F_XACK    0x0080u
#define MRC_F_DATA_MASK 0x00bfu
/* The XACK extension after the 68-byte data header: x_dqpn, x_cum_psn,
 * x_sack u16, x_hold u16, x_token u64, xcrc (CRC-32C of the 20 before). */
#define MRC_XACK_LEN     24
#define MRC_DATA_XHDR_LEN (MRC_DATA_HDR_LEN + MRC_XACK_LEN)
#define MRC_PB_SACK_BITS 16     /* PSNs pb_sack covers after pb_cum_psn */
#define MRC_PB_HOLD_NS   64     /* unit of pb_hold (up to 4.19 ms) */
/* 0x0040 is reserved for the AEAD payload mode (docs/wire.md, "ENC"):
 * refused (bad_field) until the datapath implements it. */
#define MRC_F_ENC     0x0040u
/* ACK flags. */
#define MRC_AF_ECN    0x0001u  /* the triggering packet arrived ECN-CE */
#define MRC_AF_MASK   0x0001u

enum mrc_nack {
	MRC_NACK_NONE = 0,
	MRC_NACK_TRIMMED = 1,    /* congestion: resend at once, path not blamed */
	MRC_NACK_OOW = 2,        /* PSN outside the receive window */
	MRC_NACK_ACCESS = 3,     /* key, bounds, rights or length violation */
	MRC_NACK_RNR = 4,        /* receiver not ready: no RECV posted / CQ full */
	MRC_NACK_NOQP = 5,       /* no such QP (destroyed): dqpn names the QP the
	                            data was sent to, not the ACK's receiver */
	MRC_NACK_MAX = MRC_NACK_NOQP,
};

/* Why the decoder refused a packet; each has a counter in the engine. */
enum mrce_wire_drop {
	MRC_DROP_NONE = 0,
	MRC_DROP_TRUNCATED,      /* shorter than its fixed header */
	MRC_DROP_VERSION,        /* unknown version */
	MRC_DROP_OPCODE,         /* unknown opcode */
	MRC_DROP_HCRC,           /* header CRC mismatch */
	MRC_DROP_PCRC,           /* payload CRC mismatch */
	MRC_DROP_LENGTH,         /* datagram length disagrees with plen */
	MRC_DROP_FIELD,          /* a field out of range or inconsistent */
	MRC_DROP__COUNT,
};

struct mrc_data_hdr {
	uint8_t op;
	uint16_t flags;
	uint32_t dqpn;
	uint32_t psn;
	uint16_t ev;
	uint16_t plen;
	uint32_t msn;
	uint32_t rkey;           /* SEND/SEND_IMM: send sequence number */
	uint64_t off;            /* WRITE/ATOMIC: offset in the rkey region;
	                            SEND: offset within the message */
	uint64_t ts;
	uint32_t mlen;           /* whole message length */
	uint32_t imm;
	uint64_t token;          /* the connection's token for this direction */
	/* Piggybacked ACK (MRC_F_PB_ACK; all 0 without it): every PSN before
	 * pb_cum_psn of the reverse direction was received; bit i of pb_sack:
	 * PSN pb_cum_psn + 1 + i was; pb_hold: how long the ACK waited for
	 * this packet, in MRC_PB_HOLD_NS units, which the RTT sample it gives
	 * leaves out (docs/wire.md, "Piggybacked ACK"). */
	uint32_t pb_cum_psn;
	uint16_t pb_sack;
	uint16_t pb_hold;
};

/* Cross-QP ACK (MRC_F_XACK; all 0 without it): a piggybacked ACK, as the
 * pb_* fields, for the receiver's QP dqpn (another QP to the same peer),
 * carrying that QP's own ACK token.  Apart from mrc_data_hdr, which QPs
 * keep a copy of. */
struct mrc_xack {
	uint32_t dqpn, cum_psn;
	uint16_t sack, hold;
	uint64_t token;
};

struct mrc_ack_hdr {
	uint16_t flags;
	uint8_t nack;            /* enum mrc_nack */
	uint8_t rnr_timer;       /* RNR NACK: the receiver's RNR delay,
	                            mrce_wire_rnr_ns(); 0 = not advertised;
	                            0 in every other ACK */
	uint32_t dqpn;
	uint32_t cum_psn;        /* every PSN before it was received */
	uint32_t trig_psn;       /* PSN of the packet that caused this ACK */
	uint32_t sack_base;      /* bit i of sack: PSN sack_base+i received */
	uint16_t ev;             /* EV of the triggering packet, echoed */
	uint64_t ts_echo;        /* its ts, echoed */
	uint64_t token;          /* the ACK sender's token; NOQP: the data
	                            packet's token, echoed */
	uint8_t sack[MRC_SACK_BITS / 8]; /* bit i is sack[i/8] & (1 << (i%8)) */
};

/* The receiver's RNR delay as one byte, as RDMA's RNR NAK timer: code c
 * in 1..MRC_RNR_TIMER_MAX means 10 us << (c - 1) (10 us .. 655 ms). */
#define MRC_RNR_TIMER_MAX 17
static inline uint64_t mrce_wire_rnr_ns(uint8_t c)
{
	return c && c <= MRC_RNR_TIMER_MAX ? 10000ull << (c - 1) : 0;
}
/* The smallest code whose delay is at least ns (the largest if none). */
static inline uint8_t mrce_wire_rnr_code(uint64_t ns)
{
	uint8_t c = 1;
	while (c < MRC_RNR_TIMER_MAX && mrce_wire_rnr_ns(c) < ns)
		c++;
	return c;
}

struct mrc_probe_hdr {
	uint8_t op;              /* MRC_OP_PROBE or MRC_OP_PROBE_REPLY */
	uint16_t ev;
	uint32_t seq;
	uint64_t ts;
	uint64_t ts_echo;        /* PROBE_REPLY: the PROBE's ts */
	uint64_t token;          /* the sender's probe token for this peer */
};

/* A decoded packet.  payload points into the buffer given to decode. */
struct mrc_pkt_view {
	uint8_t op;
	uint8_t trimmed;         /* data packet whose payload a switch cut */
	union {
		struct mrc_data_hdr data;
		struct mrc_ack_hdr ack;
		struct mrc_probe_hdr probe;
	} u;
	const uint8_t *payload;  /* NULL when trimmed or plen == 0 */
	struct mrc_xack xack;    /* data with MRC_F_XACK (not trimmed) */
};

/* Wire format v1 fixes these values (docs/wire.md): the ring ABI may not
 * move them.  Non-data opcodes must stay clear of every ring opcode. */
_Static_assert(MRC_OP_WRITE == 1 && MRC_OP_WRITE_IMM == 2 && MRC_OP_SEND == 3 &&
	       MRC_OP_SEND_IMM == 4 && MRC_OP_ATOMIC_ADD == 5, "wire v1 data opcodes");
_Static_assert((int)MRC_SQE_OP_MAX < (int)MRC_OP_ACK && (int)MRC_CQE_OP_MAX < (int)MRC_OP_ACK,
	       "ring opcodes overlap wire control opcodes");

static inline int mrc_op_is_data(uint8_t op)
{
	return op >= MRC_OP_WRITE && op <= MRC_OP_ATOMIC_ADD;
}

/* Encoders write the fixed header including hcrc into buf (which must hold
 * the header length) and return that length. */
size_t mrce_wire_put_data(uint8_t *buf, const struct mrc_data_hdr *h);
/* The same with the XACK extension from x when h->flags has MRC_F_XACK
 * (x NULL: zeros). */
size_t mrce_wire_put_data_x(uint8_t *buf, const struct mrc_data_hdr *h,
			    const struct mrc_xack *x);
size_t mrce_wire_put_ack(uint8_t *buf, const struct mrc_ack_hdr *h);
size_t mrce_wire_put_probe(uint8_t *buf, const struct mrc_probe_hdr *h);
/* The 4-byte trailer of a data packet whose payload is p[0..n). */
void mrce_wire_put_trailer(uint8_t out[MRC_TRAILER_LEN], const void *p, size_t n);

/* Validates every length, field and CRC of the datagram buf[0..len).
 * Returns 0 and fills *v, or -EBADMSG with *why set; never reads outside
 * buf[0..len). */
int mrce_wire_decode(const void *buf, size_t len, struct mrc_pkt_view *v,
		    enum mrce_wire_drop *why);
/* The same with flags: MRC_WIRE_NO_PCRC leaves a data payload's CRC
 * trailer unchecked (mrce_cfg.skip_payload_crc: the simulator only). */
#define MRC_WIRE_NO_PCRC 0x1u
/* MRC_WIRE_SPLIT: buf holds a data packet's header (and XACK extension)
 * only, its payload lies apart (mrce_rx_split): len must be the header's
 * length, the payload is neither read nor checked, and v->payload is left
 * NULL for the caller to set; a trimmed packet is refused. */
#define MRC_WIRE_SPLIT 0x2u
int mrce_wire_decode_flags(const void *buf, size_t len, struct mrc_pkt_view *v,
			  enum mrce_wire_drop *why, uint32_t flags);

/* Nonzero when the datagram buf[0..len) is daemon-to-daemon control
 * traffic (opcode MRC_OP_CTRL), which its receiver takes before the
 * engine.  Looks at the opcode only: the control decoder validates the
 * rest. */
int mrce_wire_is_ctrl(const void *buf, size_t len);

/* Sets the TRIMMED flag and returns the trimmed length, as a switch does
 * (used by tests and the simulator; the real fabric does it in tc BPF). */
size_t mrce_wire_trim(uint8_t *buf, size_t len);

const char *mrce_wire_drop_name(enum mrce_wire_drop why);
const char *mrce_op_name(uint8_t op);

/* PSN serial-number arithmetic (RFC 1982 style, 32-bit). */
static inline int mrc_psn_lt(uint32_t a, uint32_t b) { return (int32_t)(a - b) < 0; }
static inline int mrc_psn_le(uint32_t a, uint32_t b) { return (int32_t)(a - b) <= 0; }

#endif

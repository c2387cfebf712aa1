/* The messages libmrc-fi.so providers exchange (docs/libfabric.md,
 * "Wire"): every control message is one SEND into a receive slot of the
 * peer, a fixed header followed, for EAGER only, by the payload.  Bulk
 * data (rendezvous chunks, fi_write) goes by WRITE into a region the
 * target named; the SEND after it on the same QP is delivered only once
 * the WRITE is placed (docs/client.md "Ordering"). */
#ifndef MRC_FI_PROTO_H
#define MRC_FI_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define MRCFI_MAGIC 0x4d524649u           /* "MRFI" */
#define MRCFI_SLOT  8192u                 /* one receive / control slot */
#define MRCFI_CHUNK (1u << 20)            /* one rendezvous or RMA chunk */

enum mrcfi_op {
	MRCFI_EAGER = 1,    /* tag, data, len bytes of payload follow */
	MRCFI_RTS = 2,      /* tag, data, total: a message waits at the sender (sreq) */
	MRCFI_CTS = 3,      /* sreq, rreq, total = offset, len, rkey, roff: write here;
			       MRCFI_F_END: stop (the rest is not wanted) */
	MRCFI_RZDATA = 4,   /* sreq, rreq, total = offset, len: the chunk is placed */
	MRCFI_WDATA = 5,    /* data, len: an fi_write with remote CQ data is placed */
	MRCFI_OP_MAX = 5,
};
#define MRCFI_F_TAGGED 0x1u
#define MRCFI_F_DATA   0x2u               /* data is remote CQ data */
#define MRCFI_F_END    0x4u               /* CTS: the receiver wants no more */
#define MRCFI_F_ALL    0x7u

/* EAGER and RTS headers carry the sender's capabilities in rkey (an
 * older provider leaves it 0 and ignores it there). */
#define MRCFI_CAP_COMPACT 0x1u            /* it takes compact EAGERs */

/* A compact EAGER: the payload alone, sent with immediate data, so that a
 * 4 KiB message is one packet of mtu 4096 instead of two (docs/libfabric.md
 * "Wire").  Only to a peer that sent MRCFI_CAP_COMPACT, without remote CQ
 * data; a tagged one carries the tag's low 30 bits, the rest being those
 * of the last full tagged EAGER or RTS on the same QP (RC keeps them in
 * order; a QP starts with none, so its first tagged message is full). */
#define MRCFI_IMM_COMPACT 0x80000000u
#define MRCFI_IMM_TAGGED  0x40000000u
#define MRCFI_IMM_TAGBITS 30
#define MRCFI_IMM_TAGMASK ((1u << MRCFI_IMM_TAGBITS) - 1)

struct mrcfi_hdr {
	uint32_t magic;
	uint8_t op, flags;
	uint16_t hlen;                     /* sizeof(struct mrcfi_hdr) */
	uint32_t len;
	uint32_t sreq, rreq, rkey;
	uint64_t tag, data, total, roff;
};
_Static_assert(sizeof(struct mrcfi_hdr) == 56, "wire header is 56 bytes");
#define MRCFI_EAGER_MAX (MRCFI_SLOT - sizeof(struct mrcfi_hdr))
#define MRCFI_MAX_MSG   (1ull << 32)      /* ep_attr->max_msg_size */

/* fi_getopt(ep, FI_OPT_ENDPOINT, MRCFI_OPT_PROTO_ERRORS, &u64, &len): how
 * many messages from peers the endpoint refused as malformed or naming
 * no live request of theirs (docs/libfabric.md "Hostile peers"). */
#define MRCFI_OPT_PROTO_ERRORS 0x4d520001
/* ... MRCFI_OPT_UNEXP_HELD: how many unexpected messages arrived over
 * the bound (FI_MRC_UNEXP_MAX, FI_MRC_UNEXP_BYTES) and were kept in their
 * receive slot, unreposted, until a receive took them. */
#define MRCFI_OPT_UNEXP_HELD   0x4d520002
/* ... MRCFI_OPT_PROGRESS_ARMED: the rounds of the domain's progress thread
 * that armed the CQs to sleep on mrcd's doorbell (none while the
 * application polls fi_cq_read: FI_MRC_POLL_GRACE_US). */
#define MRCFI_OPT_PROGRESS_ARMED 0x4d520003
/* ... MRCFI_OPT_RX_GROWN: receive slots the endpoint's QPs took beyond
 * FI_MRC_RX_POSTED because a burst used up all of a QP's slots before
 * one drain saw them (FI_MRC_RX_POSTED_MAX; docs/libfabric.md). */
#define MRCFI_OPT_RX_GROWN     0x4d520004
/* ... MRCFI_OPT_COMPACT_SENT: EAGERs the endpoint sent compact (payload
 * and immediate data, no header: MRCFI_IMM_COMPACT). */
#define MRCFI_OPT_COMPACT_SENT 0x4d520005
/* ... MRCFI_OPT_IDLE_SLEEPS: the domain's fi_cq_read calls that found
 * nothing after MRCFI_IDLE_AFTER such calls in a row and slept
 * FI_MRC_IDLE_US (docs/libfabric.md "Progress"). */
#define MRCFI_OPT_IDLE_SLEEPS  0x4d520006

/* Checks what a peer sent into a slot (n bytes, as the RECV completion
 * says) and copies the header out: 0, or -EPROTO for anything malformed
 * (bad magic, length, op, flags, sizes beyond a slot or chunk).  Whether
 * the ids name a live request of that peer is the endpoint's check. */
int mrcfi_hdr_parse(const void *buf, size_t n, struct mrcfi_hdr *out);
/* Checks a message that came with immediate data imm (n bytes in the
 * slot) as a compact EAGER and makes its header: 0, or -EPROTO (no
 * compact flag, unknown bits, more than MRCFI_EAGER_MAX bytes, a tagged
 * one while the QP has no tag base: base_ok 0).  base_hi: the high bits
 * of the QP's last full tagged header (tag >> MRCFI_IMM_TAGBITS). */
int mrcfi_compact_parse(uint32_t imm, size_t n, int base_ok, uint64_t base_hi,
			struct mrcfi_hdr *out);

#endif

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

/* Checks what a peer sent into a slot (n bytes, as the RECV completion
 * says) and copies the header out: 0, or -EPROTO for anything malformed
 * (bad magic, length, op, flags, sizes beyond a slot or chunk).  Whether
 * the ids name a live request of that peer is the endpoint's check. */
int mrcfi_hdr_parse(const void *buf, size_t n, struct mrcfi_hdr *out);

#endif

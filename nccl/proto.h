/* The plugin's wire format and limits (docs/nccl.md): the 128-byte
 * listen handle NCCL carries between ranks and the clear-to-send message
 * a receiver SENDs to the sender for a receive that needs one (larger
 * than the eager ring's slots, or when the ring is full), and the eager
 * messages' header. */
#ifndef MRC_NCCL_PROTO_H
#define MRC_NCCL_PROTO_H

#include <errno.h>
#include <stdint.h>
#include <string.h>

#define MRCN_MAX_RECVS 8          /* grouped receives per irecv (maxRecvs) */
#define MRCN_MAX_REQS 32          /* outstanding requests per comm */
#define MRCN_NCTS 64              /* receives in flight per comm (CTS ids) */
#define MRCN_MAX_MSG (4u << 20)   /* maxP2pBytes / maxCollBytes */
/* Bounce bytes per comm: room for a full grouped receive of the largest
 * messages, so a request that waits for room always gets it. */
#define MRCN_ARENA ((uint64_t)MRCN_MAX_RECVS * MRCN_MAX_MSG)
#define MRCN_ACCEPT_POLL_MS 100
#define MRCN_CLOSE_DRAIN_MS 5000  /* closeSend waits this long for data in flight */
#define MRCN_SID_BASE 0x4e000000u /* the plugin's service ids: "N"... */
#define MRCN_SID_SPAN 0x100000u
#define MRCN_WR_CTS (1ull << 32)  /* wr_id tag of CTS SENDs and RECVs */
#define MRCN_WR_EGR (3ull << 32)  /* wr_id of the eager advertisement/credit SEND */
/* wr_id of a data WRITE_IMM: the tag and its bounce allocation (arena.h
 * handle), or MRCN_WR_NOALLOC for an empty message; the request itself
 * is done at the post (nccl/send.c, isend). */
#define MRCN_WR_DATA (2ull << 32)
#define MRCN_WR_NOALLOC 0xffffffffu
/* wr_id of a piece (every WRITE_IMM of a message but its last, which
 * carries MRCN_WR_DATA): its completion frees nothing */
#define MRCN_WR_PIECE (4ull << 32)
/* A data WRITE_IMM from the application's registered buffer (no arena
 * room): the low bits are its request's index in the comm, done at the
 * completion rather than at the post. */
#define MRCN_WR_ZC 0x80000000u
/* Sends below this size are copied even from a registered buffer: a send
 * from the buffer is done only at its WRITE's completion, which waits for
 * the peer's ACK (up to a held ACK's delay, docs/nccl.md "Send
 * completion"), while a copy of a small message costs less than that and
 * is done at the post (bench/results/appmem.md). */
#define MRCN_ZC_MIN 65536u

#define MRCN_HANDLE_MAGIC 0x4d52434eu   /* "NCRM" */
struct mrcn_handle {
	uint32_t magic;
	uint32_t host;            /* the listener's mrcd host index */
	uint32_t sid;             /* its process's service id */
	uint32_t listen_id;       /* which listen comm (the connect's priv) */
	uint64_t pending;         /* connector's state between connect calls */
};
_Static_assert(sizeof(struct mrcn_handle) <= 128, "NCCL_NET_HANDLE_MAXSIZE");

/* Magics changed with the per-tag sequence (2026-11-27): a peer of the
 * older protocol fails with -EPROTO instead of being misread. */
#define MRCN_CTS_MAGIC 0x32535443u      /* "CTS2" */
/* The receiver's eager ring, advertised once at accept and repeated as
 * the credit message: id = slots, size = slot stride, off = ring offset
 * in the receiver's region.  Every one is the same but for credits. */
#define MRCN_EGR_MAGIC 0x32524745u      /* "EGR2" */
/* A CTS names its receive by tag and tseq, the number of earlier
 * receives of that tag on the comm: the sender's message number tseq of
 * that tag is the one it is for (NCCL matches sends and receives in order
 * per tag), so a CTS whose message already went eagerly is recognised and
 * dropped (docs/nccl.md "Eager messages"). */
struct mrcn_cts {
	uint32_t magic;
	uint32_t id;              /* echoed as the WRITE_IMM's immediate */
	int32_t tag;
	uint32_t credits;         /* eager slots the receiver freed, cumulative */
	uint32_t size;            /* receive capacity (<= MRCN_MAX_MSG) */
	uint32_t tseq;            /* this receive's number among its tag's */
	uint64_t off;             /* where in the receiver's bounce region */
};
_Static_assert(sizeof(struct mrcn_cts) == 32, "CTS size");

/* Eager messages (docs/nccl.md "Eager messages"): up to MRC_NCCL_EAGER_BYTES
 * (default MRCN_EG_DEFAULT) are written by isend at once into slot
 * (seq % slots) of the receiver's eager ring, header then payload, with
 * imm = MRCN_IMM_EAGER | slot; a send needs a credit (slots the receiver
 * has freed, in ring order). */
#define MRCN_EG_SLOTS 16          /* slots per receive comm */
#define MRCN_EG_MAX_SLOTS 64      /* the most a peer may advertise */
#define MRCN_EG_DEFAULT 65536u
#define MRCN_EG_MAX (1u << 20)    /* MRC_NCCL_EAGER_BYTES's range */
#define MRCN_IMM_EAGER 0x80000000u
#define MRCN_EG_HDR_MAGIC 0x32474145u   /* "EAG2" */
/* Compact eager messages (docs/nccl.md "Compact eager messages"): no
 * header, so a 4 KiB message is one packet at mrcd's default mtu (4096
 * payload bytes) rather than two.  imm = EAGER | COMPACT | the low 24 bits
 * of the per-tag number << 6 | slot; the tag is the comm's first eager
 * message's (which always has a header), the size the length written,
 * the sequence number the receiver's next; the payload lies where it
 * would after a header.  Sent only to a receiver that advertised them
 * (the advertisement's tag field, MRCN_EGR_F_COMPACT). */
#define MRCN_IMM_COMPACT 0x40000000u
/* Pieces (docs/nccl.md "Pieces"): a CTS-path message larger than
 * MRCN_PIECE is copied and posted piece by piece, so that mrcd sends the
 * first piece while isend copies the next and the receiver copies each
 * piece out while the rest is on the wire.  Every piece but the last is
 * exactly MRCN_PIECE bytes, written in order from the CTS's offset, with
 * imm = MRCN_IMM_PIECE | id; the last is an ordinary imm = id, the
 * message's size being the pieces' bytes plus its own.  Sent only to a
 * receiver that advertised them (MRCN_EGR_F_PIECES). */
#define MRCN_IMM_PIECE 0x20000000u
#define MRCN_IMM_ID 0x3fu                /* MRCN_NCTS - 1 */
#define MRCN_PIECE (1u << 20)
/* SQ entries of the plugin's QPs (libmrc's default): a message goes in
 * pieces only while the SQ is sure to hold them (nccl/send.c) */
#define MRCN_SQ 256
_Static_assert(MRCN_IMM_ID == MRCN_NCTS - 1, "imm id bits");
#define MRCN_IMM_SLOT 0x3fu              /* MRCN_EG_MAX_SLOTS - 1 */
#define MRCN_IMM_TSEQ_SHIFT 6
#define MRCN_IMM_TSEQ_MASK 0xffffffu
#define MRCN_EGR_F_COMPACT 1
#define MRCN_EGR_F_PIECES 2
struct mrcn_eg_hdr {
	uint32_t magic;
	int32_t tag;
	uint32_t size;            /* payload bytes after the header */
	uint32_t seq;             /* the comm's eager message number (ring order) */
	uint32_t tseq;            /* the message's number among its tag's sends */
	uint32_t rsvd[3];         /* zero; keeps the payload 32-byte aligned */
};
_Static_assert(sizeof(struct mrcn_eg_hdr) == 32, "eager header size");
/* Distinct tags a comm tracks (per-tag message numbers): a hash table
 * that starts at MRCN_TAGS_INIT entries and doubles up to MRCN_MAX_TAGS
 * (kept at most 3/4 full).  NCCL's tags are ranks, a handful per comm;
 * test harnesses use hundreds.  Entries are made only by the local
 * NCCL's calls, never by what the peer sends.  One tag beyond is an
 * error (isend/irecv fail with ncclInternalError), never a mismatch. */
#define MRCN_TAGS_INIT 64
#define MRCN_MAX_TAGS 65536
/* Slot stride for a payload limit: header + payload, cache lines. */
static inline uint64_t mrcn_eg_stride(uint64_t bytes)
{
	return (sizeof(struct mrcn_eg_hdr) + bytes + 63) & ~(uint64_t)63;
}

/* What a peer sent is untrusted: a CTS is taken only whole, with its
 * magic, an id in range and a window inside the arena.  (The window is
 * the peer's own memory: its mrcd checks the rkey range too; this keeps a
 * confused peer from being answered with a write that fails later.)  An
 * eager advertisement only with a slot count and stride in range. */
static inline int mrcn_cts_parse(const void *buf, uint32_t len, struct mrcn_cts *out)
{
	if (len != sizeof(*out))
		return -EPROTO;
	memcpy(out, buf, sizeof(*out));
	if (out->magic == MRCN_EGR_MAGIC)
		return out->id >= 1 && out->id <= MRCN_EG_MAX_SLOTS && !(out->size & 63) &&
		       out->size > sizeof(struct mrcn_eg_hdr) &&
		       out->size <= mrcn_eg_stride(MRCN_EG_MAX) ? 0 : -EPROTO;
	if (out->magic != MRCN_CTS_MAGIC || out->id >= MRCN_NCTS || out->size > MRCN_MAX_MSG || out->off > MRCN_ARENA ||
	    out->size > MRCN_ARENA - out->off)
		return -EPROTO;
	return 0;
}

/* An eager message as it lies in its slot (byte_len written, the ring's
 * slot stride): taken only with its magic, the ring's next sequence
 * number, and a size that is exactly the bytes written after the header,
 * within the slot.  Its tag and per-tag number are checked by the
 * receiver against its receives (nccl/eager.c). */
static inline int mrcn_eg_hdr_parse(const void *slot, uint64_t byte_len, uint64_t stride,
				    uint32_t seq, struct mrcn_eg_hdr *out)
{
	if (byte_len < sizeof(*out) || byte_len > stride)
		return -EMSGSIZE;
	memcpy(out, slot, sizeof(*out));
	if (out->magic != MRCN_EG_HDR_MAGIC || out->seq != seq ||
	    (uint64_t)out->size + sizeof(*out) != byte_len)
		return -EPROTO;
	return 0;
}

/* The header a compact message leaves out (MRCN_IMM_COMPACT in imm),
 * made from what the receiver knows: ctag_set/ctag, the comm's tag (its
 * first eager message's); cnt, its count of that tag's receives; seq, its
 * next sequence number.  The per-tag number is the one whose low 24 bits
 * imm carries nearest cnt (a message is never 2^23 receives away from
 * it: the ring and the requests are far smaller).  -EMSGSIZE for a length
 * beyond the slot after a header's room, -ENOMSG before the comm's tag is
 * known. */
static inline int mrcn_eg_compact_parse(uint32_t imm, uint64_t byte_len, uint64_t stride,
					int ctag_set, int32_t ctag, uint32_t cnt, uint32_t seq,
					struct mrcn_eg_hdr *out)
{
	memset(out, 0, sizeof(*out));
	if (stride < sizeof(*out) || byte_len > stride - sizeof(*out))
		return -EMSGSIZE;
	if (!ctag_set)
		return -ENOMSG;
	uint32_t low = imm >> MRCN_IMM_TSEQ_SHIFT & MRCN_IMM_TSEQ_MASK;
	int32_t d = (int32_t)((low - cnt) << 8) >> 8;
	*out = (struct mrcn_eg_hdr){ .magic = MRCN_EG_HDR_MAGIC, .tag = ctag,
				     .size = (uint32_t)byte_len, .seq = seq,
				     .tseq = cnt + (uint32_t)d };
	return 0;
}

/* A CTS-path data completion (not eager) as the receiver takes it: imm
 * the id, with MRCN_IMM_PIECE for a piece; got, the bytes its receive
 * already has from earlier pieces; cap, the receive's room.  A piece is
 * exactly MRCN_PIECE bytes and leaves room for the last one (a byte or
 * more); the last fits what is left.  0 with *id and *piece set;
 * -EPROTO for an imm with other bits or an id out of range, -EMSGSIZE
 * for a length that breaks these rules. */
static inline int mrcn_data_parse(uint32_t imm, uint64_t byte_len, uint64_t got, uint64_t cap,
				  uint32_t *id, int *piece)
{
	*piece = (imm & MRCN_IMM_PIECE) != 0;
	*id = imm & ~MRCN_IMM_PIECE;
	if (*id > MRCN_IMM_ID)
		return -EPROTO;
	if (got > cap)
		return -EMSGSIZE;
	if (*piece)
		return byte_len == MRCN_PIECE && cap - got > MRCN_PIECE ? 0 : -EMSGSIZE;
	return byte_len <= cap - got ? 0 : -EMSGSIZE;
}

/* Per-comm counters of the data path (tests read them through the test
 * build's mrcn_comm_stats; the real plugin exports nothing but its tables). */
struct mrcn_stats {
	uint64_t eager_sends;     /* isends written at once into the eager ring */
	uint64_t cts_sends;       /* isends that waited for (used) a clear-to-send */
	uint64_t eager_no_credit; /* isend calls eager by size but without a credit */
	uint64_t paired;          /* CTSs the sender dropped: already sent eagerly */
	uint64_t unexpected;      /* eager messages that arrived before their irecv */
	/* recv: CTS SENDs posted (at irecv or late); where the older
	 * protocol counted its void CTSs, so that a test run against that
	 * plugin reads them here */
	uint64_t cts_posted;
	uint64_t credit_msgs;     /* eager advertisements/credit messages sent */
	uint64_t refused;         /* malformed eager messages refused */
	uint64_t ring_slots;      /* the receiver's eager ring (send: once advertised) */
	uint64_t deferred;        /* recv: receives posted without a CTS (eager-sized) */
	uint64_t late_cts;        /* recv: CTSs for deferred receives, the ring full */
	uint64_t eager_compact;   /* send: eager messages sent without a header */
	uint64_t pieces;          /* send: pieces posted; recv: pieces copied out (not the last) */
};

/* A handle as NCCL hands it over (NCCL_NET_HANDLE_MAXSIZE bytes). */
static inline int mrcn_handle_parse(const void *h, struct mrcn_handle *out)
{
	memcpy(out, h, sizeof(*out));
	return out->magic == MRCN_HANDLE_MAGIC && out->sid >= MRCN_SID_BASE &&
	       out->sid - MRCN_SID_BASE < MRCN_SID_SPAN ? 0 : -EINVAL;
}

#endif

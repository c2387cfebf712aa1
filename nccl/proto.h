/* The plugin's wire format and limits (docs/nccl.md): the 128-byte
 * listen handle NCCL carries between ranks and the clear-to-send message
 * a receiver SENDs to the sender for each posted receive. */
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
/* wr_id of a data WRITE_IMM: the tag and its bounce allocation (arena.h
 * handle), or MRCN_WR_NOALLOC for an empty message; the request itself
 * is done at the post (nccl/data.c, isend). */
#define MRCN_WR_DATA (2ull << 32)
#define MRCN_WR_NOALLOC 0xffffffffu
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

#define MRCN_CTS_MAGIC 0x53544343u      /* "CCTS" */
struct mrcn_cts {
	uint32_t magic;
	uint32_t id;              /* echoed as the WRITE_IMM's immediate */
	int32_t tag;
	uint32_t rsvd;
	uint64_t size;            /* receive capacity */
	uint64_t off;             /* where in the receiver's bounce region */
};
_Static_assert(sizeof(struct mrcn_cts) == 32, "CTS size");

/* What a peer sent is untrusted: a CTS is taken only whole, with its
 * magic, an id in range and a window inside the arena.  (The window is
 * the peer's own memory: its mrcd checks the rkey range too; this keeps a
 * confused peer from being answered with a write that fails later.) */
static inline int mrcn_cts_parse(const void *buf, uint32_t len, struct mrcn_cts *out)
{
	if (len != sizeof(*out))
		return -EPROTO;
	memcpy(out, buf, sizeof(*out));
	if (out->magic != MRCN_CTS_MAGIC || out->id >= MRCN_NCTS || out->rsvd ||
	    out->size > MRCN_MAX_MSG || out->off > MRCN_ARENA || out->size > MRCN_ARENA - out->off)
		return -EPROTO;
	return 0;
}

/* A handle as NCCL hands it over (NCCL_NET_HANDLE_MAXSIZE bytes). */
static inline int mrcn_handle_parse(const void *h, struct mrcn_handle *out)
{
	memcpy(out, h, sizeof(*out));
	return out->magic == MRCN_HANDLE_MAGIC && out->sid >= MRCN_SID_BASE &&
	       out->sid - MRCN_SID_BASE < MRCN_SID_SPAN ? 0 : -EINVAL;
}

#endif

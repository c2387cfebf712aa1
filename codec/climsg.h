/* mrcd client protocol, version 4: messages on the daemon's Unix socket
 * (SOCK_SEQPACKET, so one recvmsg is one whole message).
 *
 * Every message is a 16-byte header then a type-specific body of exactly
 * the size the type defines (replies that fail carry a status and a short
 * reason text instead).  Host byte order: the socket never leaves the host.
 * Reserved and padding fields must be zero; a message that breaks any rule
 * is refused as a whole (-EBADMSG, or -EPROTONOSUPPORT for another
 * version).  File descriptors travel as SCM_RIGHTS on the same message.
 *
 * Requests and replies share the header; a reply has the request's type
 * with MRC_CLI_REPLY set and the request's req_id.  Replies come in request
 * order, except that ACCEPT and CONNECT answer when the connection is made
 * (other requests may be answered meanwhile).
 *
 * Type space:  0x0001-0x00ff client operations (libmrc)
 *              0x0100-0x7fff unassigned; 0x8000 is the reply bit.
 * Operators (mrcctl) speak JSON on their own socket (codec/operjson.h).
 */
#ifndef MRC_CODEC_CLIMSG_H
#define MRC_CODEC_CLIMSG_H

#include <stddef.h>
#include <stdint.h>

#define MRC_CLI_MAGIC    0x4343524du   /* "MRCC" little-endian */
/* 2: CREATE_QP carries index_base and its reply notify_len (ring ABI 2). */
/* 3: CREATE_QP carries plane_mask.
 * 4: one doorbell per client, not two eventfds per QP: the HELLO reply
 *    carries the client's notify page and its two doorbell eventfds, a
 *    CREATE_QP reply only the rings memfd (docs/client.md "Doorbells"). */
#define MRC_CLI_VERSION  4u
#define MRC_CLI_MSG_MAX  512u          /* no message is longer */
#define MRC_CLI_MAX_FDS  3u            /* per message */
#define MRC_CLI_REASON_MAX 200u        /* error text bytes */
#define MRC_CLI_DEFAULT_SOCK "/run/mrcd/mrcd.sock"

enum mrc_cli_type {
	MRC_CLI_HELLO = 0x0001,        /* reply fds, always 3: [0] the
	                                  client's notify memfd (struct
	                                  mrc_notify, one pending byte per
	                                  QP it may create); [1] the SQ
	                                  doorbell eventfd (client -> daemon:
	                                  "a pending byte is set"); [2] the
	                                  CQ doorbell eventfd (daemon ->
	                                  client: "an armed CQ got work") */
	MRC_CLI_REG_MR = 0x0002,       /* fd: the region's memfd */
	MRC_CLI_DEREG_MR = 0x0003,
	MRC_CLI_CREATE_QP = 0x0004,    /* reply fd: the rings memfd (the QP's
	                                  pending byte is hdr.notify_slot of
	                                  its SQ) */
	MRC_CLI_DESTROY_QP = 0x0005,
	MRC_CLI_QP_INFO = 0x0006,
	MRC_CLI_CONNECT_OOB = 0x0007,
	MRC_CLI_LISTEN = 0x0008,
	MRC_CLI_UNLISTEN = 0x0009,
	MRC_CLI_ACCEPT = 0x000a,
	MRC_CLI_CONNECT = 0x000b,
	MRC_CLI_STRAGGLER = 0x000c,    /* a straggler record for mrcctl
	                                  stragglers (docs/coll.md); mrcd adds
	                                  the sender's uid and pid */
	MRC_CLI_QP_STATS = 0x000d,     /* a QP's packet counters (for
	                                  mrc_coll_straggler's loss evidence) */
	MRC_CLI_QP_STATS_N = 0x000e,   /* up to MRC_CLI_QP_STATS_N_MAX QPs'
	                                  counters in one round trip
	                                  (mrc_qp_stats_n) */
	MRC_CLI_CLIENT_LAST = 0x000e,
	MRC_CLI_REPLY = 0x8000,
};

struct mrc_cli_hdr {
	uint32_t magic;
	uint16_t version;
	uint16_t type;
	uint32_t len;              /* body bytes after this header */
	uint32_t req_id;
};

/* A QP's connection parameters (the out-of-band blob). */
struct mrc_cli_addr {
	uint32_t host;
	uint32_t qpn;
	uint32_t psn;
	uint32_t priv;             /* application data (e.g. an rkey) */
};

/* ---- request bodies ---- */
struct mrc_cli_hello {
	uint16_t ver_min, ver_max; /* versions the client speaks */
	uint32_t rsvd;
	char name[32];             /* NUL-terminated, for logs */
};
struct mrc_cli_reg_mr {
	uint64_t fd_off;           /* offset of the region in the memfd */
	uint64_t len;
	uint32_t access;           /* MRC_MR_* of mrc.h */
	uint32_t rsvd;
};
struct mrc_cli_key {           /* DEREG_MR */
	uint32_t key;
	uint32_t rsvd;
};
struct mrc_cli_create_qp {
	uint32_t sq_entries;       /* power of two */
	uint32_t cq_entries;       /* power of two */
	uint32_t flags;            /* MRC_CLI_QP_* */
	uint32_t pin_ev;
	uint64_t index_base;       /* first index of both rings; any value
	                              (mrc/ring.h "Index base") */
	uint32_t plane_mask;       /* bit p: plane p carries the QP's data
	                              (0: every plane); bits >= 16 refused */
	uint32_t rsvd;
};
#define MRC_CLI_MAX_PLANES 16u /* the engine's MRCE_MAX_PLANES */
#define MRC_CLI_QP_PIN_EV 0x1u /* single-path mode on pin_ev */
#define MRC_CLI_QP_POLLED 0x2u /* SQ polled, no doorbell: woken through
                                  the notify page (mrc/ring.h) */
#define MRC_CLI_QP_URGENT 0x4u /* traffic class urgent (mrce_tclass) */
#define MRC_CLI_QP_BULK   0x8u /* traffic class bulk; not both */
#define MRC_CLI_QP_FLAGS  0xfu
struct mrc_cli_qpn {           /* DESTROY_QP, QP_INFO, QP_STATS */
	uint32_t qpn;
	uint32_t rsvd;
};
struct mrc_cli_connect_oob {
	uint32_t qpn;
	uint32_t rsvd;
	struct mrc_cli_addr remote;
};
struct mrc_cli_listen {        /* LISTEN, UNLISTEN (backlog 0) */
	uint32_t sid;
	uint32_t backlog;
};
struct mrc_cli_accept {
	uint32_t sid;
	uint32_t qpn;              /* local QP to connect */
	uint32_t timeout_ms;       /* 0: wait forever */
	uint32_t priv;             /* sent to the requester */
};
struct mrc_cli_connect {
	uint32_t host;
	uint32_t sid;
	uint32_t qpn;
	uint32_t priv;             /* sent to the acceptor */
};

/* STRAGGLER: what mrc_coll_straggler named (include/mrc/coll.h).  No
 * uid, pid or time: mrcd stamps those, so a client cannot choose them. */
struct mrc_cli_straggler {
	uint64_t comm;             /* the communicator's id (rank 0's nonce) */
	uint64_t call;
	uint32_t cause;            /* 1 compute, 2 network (never none) */
	uint32_t rank, host;
	uint32_t peer_rank, peer_host, qpn;   /* network only, else 0 */
	int32_t plane;             /* -1 .. MRC_CLI_MAX_PLANES - 1; compute: -1 */
	uint32_t rank_sends;       /* 0 or 1; compute: 0 */
	uint64_t call_us, late_us, typical_us;   /* <= MRC_CLI_STRAG_US_MAX */
};
#define MRC_CLI_STRAG_COMPUTE 1u
#define MRC_CLI_STRAG_NETWORK 2u
#define MRC_CLI_STRAG_RANK_MAX (1u << 24)      /* ranks and hosts below it */
#define MRC_CLI_STRAG_US_MAX (86400ull * 1000000)   /* one day */

/* ---- reply bodies (after struct mrc_cli_status with status 0) ---- */
struct mrc_cli_status {
	int32_t status;            /* 0 or negative errno */
	uint32_t rsvd;
	/* status < 0: up to MRC_CLI_REASON_MAX bytes of text follow (no NUL) */
};
struct mrc_cli_hello_rep {
	uint16_t version;          /* chosen */
	uint16_t rsvd;
	uint32_t client_id;
	uint32_t host, n_hosts;
	uint32_t max_qps, max_mrs;
	uint32_t max_ring_entries;
	uint32_t notify_len;       /* bytes to mmap from the notify memfd */
	uint64_t max_mem;          /* bytes of registered memory */
};
struct mrc_cli_reg_mr_rep {
	uint32_t key;              /* lkey and rkey */
	uint32_t rsvd;
};
struct mrc_cli_create_qp_rep {
	uint32_t qpn;
	uint32_t rsvd;
	uint64_t map_len;          /* bytes to mmap from the rings memfd */
	uint64_t sq_off, cq_off;   /* ring headers in that mapping */
	uint64_t rsvd2;            /* 0 (was notify_len: now in HELLO) */
};
struct mrc_cli_qp_info_rep {
	struct mrc_cli_addr local;
	uint32_t state;            /* enum mrce_qp_state */
	int32_t error;
};
struct mrc_cli_qp_stats_rep {  /* the engine's counters since creation */
	uint64_t tx_pkts;          /* data packets sent, retransmissions included */
	uint64_t retx;             /* of them, retransmissions */
	uint64_t rto_fires;        /* retransmission timeouts */
	uint64_t nacks_rx;         /* NACKs received */
};
/* QP_STATS_N: n QPs' counters in one message.  Fixed size (every client
 * message is one of its type's size): the slots from n on are zero both
 * ways, and the reply's n and QP numbers are the request's, in order.  A
 * QP that is not the sender's gets status -ENOENT and zero counters. */
#define MRC_CLI_QP_STATS_N_MAX 12u    /* the reply fills MRC_CLI_MSG_MAX */
struct mrc_cli_qp_stats_n {
	uint32_t n;                /* 1 .. MRC_CLI_QP_STATS_N_MAX */
	uint32_t rsvd;
	uint32_t qpn[MRC_CLI_QP_STATS_N_MAX];
};
struct mrc_cli_qp_stats_n_rec {
	uint32_t qpn;
	int32_t status;            /* 0 or -errno; counters zero unless 0 */
	struct mrc_cli_qp_stats_rep s;
};
struct mrc_cli_qp_stats_n_rep {
	uint32_t n;
	uint32_t rsvd;
	struct mrc_cli_qp_stats_n_rec rec[MRC_CLI_QP_STATS_N_MAX];
};
struct mrc_cli_addr_rep {      /* ACCEPT, CONNECT: the remote QP */
	struct mrc_cli_addr remote;
};

/* A decoded message: header, body bytes (pointing into the caller's
 * buffer) and, for an error reply, its reason text. */
struct mrc_cli_msg {
	struct mrc_cli_hdr hdr;
	const void *body;          /* request body, or reply body after status */
	uint32_t body_len;
	int32_t status;            /* replies */
	const char *reason;        /* status < 0: reason text (not terminated) */
	uint32_t reason_len;
};

/* Body size of a request type (0 for unknown types); reply body size after
 * the status (0 when none). */
size_t mrc__cli_req_size(uint16_t type);
size_t mrc__cli_rep_size(uint16_t type);
/* How many fds a request / a successful reply of this type carries. */
unsigned mrc__cli_req_fds(uint16_t type);
unsigned mrc__cli_rep_fds(uint16_t type);

/* Encodes a request into buf (cap >= MRC_CLI_MSG_MAX is always enough);
 * body must be exactly mrc__cli_req_size(type) bytes.  Returns the
 * message length or a negative errno. */
int mrc__cli_enc_req(void *buf, size_t cap, uint16_t type, uint32_t req_id,
		     const void *body, size_t len);
/* A reply: status 0 with body (mrc__cli_rep_size bytes), or status < 0
 * with an optional reason (truncated to MRC_CLI_REASON_MAX); an error
 * reply may answer a request of any type, even an unknown one. */
int mrc__cli_enc_rep(void *buf, size_t cap, uint16_t type, uint32_t req_id,
		     int32_t status, const void *body, size_t len, const char *reason);

/* Strict decoding of one whole message (error replies of any type
 * decode, with their reason).  -EBADMSG for anything malformed
 * (why: a static string), -EPROTONOSUPPORT for a version other than MRC_CLI_VERSION,
 * -EOPNOTSUPP for an unknown type.  On success m->body points into
 * buf. */
int mrc__cli_dec_req(const void *buf, size_t len, struct mrc_cli_msg *m, const char **why);
int mrc__cli_dec_rep(const void *buf, size_t len, struct mrc_cli_msg *m, const char **why);

const char *mrc__cli_type_name(uint16_t type);

#endif

/* mrcctl <-> mrcd operator protocol, version 1 (docs/ctl.md).
 *
 * A separate Unix socket (SOCK_SEQPACKET, default /run/mrcd/mrcctl.sock:
 * the directory of mrcd's client socket), so the binary client protocol
 * keeps its 512-byte messages and operators get JSON.  One request and
 * one reply per record, both JSON objects:
 *
 *   request  {"v":1,"id":N,"verb":"paths","peer":"h7"}
 *   reply    {"v":1,"id":N,"ok":true,"result":{...}}
 *            {"v":1,"id":N,"ok":false,"error":{"errno":13,"code":"EACCES",
 *                                               "message":"..."}}
 *   events follow mode: after the reply, one {"v":1,"event":{...}} per
 *   record until the client closes.
 *
 * Requests are at most MRC_OPER_REQ_MAX bytes and parsed strictly (unknown
 * fields, wrong types and out-of-range numbers are refused with a reason);
 * replies at most MRC_OPER_MSG_MAX. */
#ifndef MRC_CODEC_OPERJSON_H
#define MRC_CODEC_OPERJSON_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define MRC_OPER_VERSION 1
#define MRC_OPER_REQ_MAX 4096u
#define MRC_OPER_MSG_MAX (4u << 20)
#define MRC_OPER_SOCK_NAME "mrcctl.sock"
#define MRC_OPER_DEFAULT_SOCK "/run/mrcd/" MRC_OPER_SOCK_NAME
#define MRC_OPER_PEER_MAX 64

/* The verbs, from their one definition (codec/operverbs.def). */
enum mrc_oper_verb {
	MRC_OPER_NONE = 0,
#define MRC_VERB(ID, ...) MRC_OPER_##ID,
#include "codec/operverbs.def"
	MRC_OPER__COUNT,
};

/* The optional request fields, as bits: operverbs.def says which a verb
 * needs and which it accepts. */
enum {
	MRC_OPER_F_PEER = 1, MRC_OPER_F_PLANE = 2, MRC_OPER_F_SPINE = 4, MRC_OPER_F_EV = 8,
	MRC_OPER_F_QP = 16, MRC_OPER_F_LAST = 32, MRC_OPER_F_FOLLOW = 64, MRC_OPER_F_TIMEOUT = 128,
};

/* A parsed request.  Absent numbers are -1, an absent peer is "". */
struct mrc_oper_req {
	uint32_t id;
	enum mrc_oper_verb verb;
	char peer[MRC_OPER_PEER_MAX];   /* host name or index */
	int32_t plane, spine, ev;
	int64_t qp;
	int32_t last;                   /* events: how many recent ones */
	int32_t timeout_ms;             /* probe */
	int follow;                     /* events -f */
};

void mrc_oper_req_init(struct mrc_oper_req *r);
/* Parses one request record.  0, -EPROTONOSUPPORT for another version,
 * or -EINVAL with err naming the field and the rule. */
int mrc_oper_req_parse(const void *buf, size_t len, struct mrc_oper_req *r,
		       char *err, size_t errlen);
/* The request as JSON text (caller frees), or NULL. */
char *mrc_oper_req_encode(const struct mrc_oper_req *r);

const char *mrc_oper_verb_name(enum mrc_oper_verb v);
enum mrc_oper_verb mrc_oper_verb_find(const char *name);
/* Admin verbs change the daemon's state: root or admin_group only. */
int mrc_oper_verb_is_admin(enum mrc_oper_verb v);

/* Reply records.  Both steal nothing; the caller frees the text. */
char *mrc_oper_reply_ok(uint32_t id, json_t *result);
char *mrc_oper_reply_err(uint32_t id, int err, const char *msg);

/* Parses a reply record.  Returns 0 with *result (a new reference) when ok,
 * the daemon's negative errno with msg filled when not, -EBADMSG when the
 * record is not a valid reply (msg says why). */
int mrc_oper_reply_parse(const void *buf, size_t len, uint32_t *id, json_t **result,
			 char *msg, size_t msglen);

/* "EACCES" for 13 and so on (short errno names for scripts). */
const char *mrc_oper_errno_name(int err);

#endif

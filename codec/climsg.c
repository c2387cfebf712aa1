/* mrcd client protocol: strict encoding and decoding (climsg.h). */
#include <errno.h>
#include <string.h>

#include "codec/climsg.h"

_Static_assert(sizeof(struct mrc_cli_hdr) == 16, "ctl hdr");
_Static_assert(sizeof(struct mrc_cli_hello) == 40, "hello");
_Static_assert(sizeof(struct mrc_cli_hello_rep) == 40, "hello rep");
_Static_assert(sizeof(struct mrc_cli_create_qp) == 32, "create");
_Static_assert(sizeof(struct mrc_cli_create_qp_rep) == 40, "create rep");
_Static_assert(sizeof(struct mrc_cli_straggler) == 72, "straggler");
_Static_assert(sizeof(struct mrc_cli_qp_stats_rep) == 32, "qp stats rep");
_Static_assert(sizeof(struct mrc_cli_qp_stats_n) == 56, "qp stats n");
_Static_assert(sizeof(struct mrc_cli_hdr) + sizeof(struct mrc_cli_status) +
	       sizeof(struct mrc_cli_qp_stats_n_rep) <= MRC_CLI_MSG_MAX, "qp stats n rep");
_Static_assert(sizeof(struct mrc_cli_status) + MRC_CLI_REASON_MAX +
	       sizeof(struct mrc_cli_hdr) <= MRC_CLI_MSG_MAX, "max msg");

#define MR_ACCESS_ALL 0xfu     /* MRC_MR_* bits of mrc.h */

struct cli_type {
	uint16_t type;
	uint16_t req, rep;         /* body sizes */
	uint8_t req_fds, rep_fds;
	const char *name;
};

static const struct cli_type types[] = {
	{ MRC_CLI_HELLO, sizeof(struct mrc_cli_hello), sizeof(struct mrc_cli_hello_rep), 0, 3, "hello" },
	{ MRC_CLI_REG_MR, sizeof(struct mrc_cli_reg_mr), sizeof(struct mrc_cli_reg_mr_rep), 1, 0, "reg_mr" },
	{ MRC_CLI_DEREG_MR, sizeof(struct mrc_cli_key), 0, 0, 0, "dereg_mr" },
	{ MRC_CLI_CREATE_QP, sizeof(struct mrc_cli_create_qp), sizeof(struct mrc_cli_create_qp_rep), 0, 1, "create_qp" },
	{ MRC_CLI_DESTROY_QP, sizeof(struct mrc_cli_qpn), 0, 0, 0, "destroy_qp" },
	{ MRC_CLI_QP_INFO, sizeof(struct mrc_cli_qpn), sizeof(struct mrc_cli_qp_info_rep), 0, 0, "qp_info" },
	{ MRC_CLI_CONNECT_OOB, sizeof(struct mrc_cli_connect_oob), 0, 0, 0, "connect_oob" },
	{ MRC_CLI_LISTEN, sizeof(struct mrc_cli_listen), 0, 0, 0, "listen" },
	{ MRC_CLI_UNLISTEN, sizeof(struct mrc_cli_listen), 0, 0, 0, "unlisten" },
	{ MRC_CLI_ACCEPT, sizeof(struct mrc_cli_accept), sizeof(struct mrc_cli_addr_rep), 0, 0, "accept" },
	{ MRC_CLI_CONNECT, sizeof(struct mrc_cli_connect), sizeof(struct mrc_cli_addr_rep), 0, 0, "connect" },
	{ MRC_CLI_STRAGGLER, sizeof(struct mrc_cli_straggler), 0, 0, 0, "straggler" },
	{ MRC_CLI_QP_STATS, sizeof(struct mrc_cli_qpn), sizeof(struct mrc_cli_qp_stats_rep), 0, 0, "qp_stats" },
	{ MRC_CLI_QP_STATS_N, sizeof(struct mrc_cli_qp_stats_n), sizeof(struct mrc_cli_qp_stats_n_rep), 0, 0, "qp_stats_n" },
};

static const struct cli_type *find(uint16_t type)
{
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (types[i].type == type)
			return &types[i];
	return NULL;
}

size_t mrc__cli_req_size(uint16_t type)
{
	const struct cli_type *t = find(type);
	return t ? t->req : 0;
}
size_t mrc__cli_rep_size(uint16_t type)
{
	const struct cli_type *t = find(type);
	return t ? t->rep : 0;
}
unsigned mrc__cli_req_fds(uint16_t type)
{
	const struct cli_type *t = find(type);
	return t ? t->req_fds : 0;
}
unsigned mrc__cli_rep_fds(uint16_t type)
{
	const struct cli_type *t = find(type);
	return t ? t->rep_fds : 0;
}

const char *mrc__cli_type_name(uint16_t type)
{
	const struct cli_type *t = find((uint16_t)(type & ~MRC_CLI_REPLY));
	if (t)
		return t->name;
	return "unknown";
}

static void put_hdr(void *buf, uint16_t type, uint32_t req_id, size_t len)
{
	struct mrc_cli_hdr h = { .magic = MRC_CLI_MAGIC, .version = MRC_CLI_VERSION,
				 .type = type, .len = (uint32_t)len, .req_id = req_id };
	memcpy(buf, &h, sizeof(h));
}

int mrc__cli_enc_req(void *buf, size_t cap, uint16_t type, uint32_t req_id,
		     const void *body, size_t len)
{
	const struct cli_type *t = find(type);
	if (!t || len != t->req)
		return -EINVAL;
	if (sizeof(struct mrc_cli_hdr) + len > cap || sizeof(struct mrc_cli_hdr) + len > MRC_CLI_MSG_MAX)
		return -EMSGSIZE;
	put_hdr(buf, type, req_id, len);
	if (len)
		memcpy((char *)buf + sizeof(struct mrc_cli_hdr), body, len);
	return (int)(sizeof(struct mrc_cli_hdr) + len);
}

int mrc__cli_enc_rep(void *buf, size_t cap, uint16_t type, uint32_t req_id,
		     int32_t status, const void *body, size_t len, const char *reason)
{
	const struct cli_type *t = find(type);
	/* An error may answer any request, even one of an unknown type. */
	if (!t && status == 0)
		return -EINVAL;
	if (type & MRC_CLI_REPLY)
		return -EINVAL;
	if (status > 0 || (status == 0 && t && len != t->rep) || (status < 0 && len))
		return -EINVAL;
	size_t rlen = 0;
	if (status < 0 && reason) {
		rlen = strnlen(reason, MRC_CLI_REASON_MAX);
		body = reason;
		len = rlen;
	}
	size_t total = sizeof(struct mrc_cli_hdr) + sizeof(struct mrc_cli_status) + len;
	if (total > cap || total > MRC_CLI_MSG_MAX)
		return -EMSGSIZE;
	put_hdr(buf, type | MRC_CLI_REPLY, req_id, total - sizeof(struct mrc_cli_hdr));
	struct mrc_cli_status st = { .status = status };
	char *p = (char *)buf + sizeof(struct mrc_cli_hdr);
	memcpy(p, &st, sizeof(st));
	if (len)
		memcpy(p + sizeof(st), body, len);
	return (int)total;
}

static int zero(const void *p, size_t n)
{
	const unsigned char *c = p;
	for (size_t i = 0; i < n; i++)
		if (c[i])
			return 0;
	return 1;
}

#define BAD(msg) do { *why = (msg); return -EBADMSG; } while (0)

static int dec_hdr(const void *buf, size_t len, struct mrc_cli_msg *m, const char **why)
{
	memset(m, 0, sizeof(*m));
	if (len < sizeof(struct mrc_cli_hdr))
		BAD("shorter than the header");
	if (len > MRC_CLI_MSG_MAX)
		BAD("longer than the largest message");
	memcpy(&m->hdr, buf, sizeof(m->hdr));
	if (m->hdr.magic != MRC_CLI_MAGIC)
		BAD("bad magic");
	if (m->hdr.version != MRC_CLI_VERSION) {
		*why = "unsupported protocol version";
		return -EPROTONOSUPPORT;
	}
	if (m->hdr.len != len - sizeof(struct mrc_cli_hdr))
		BAD("length field does not match the message");
	m->body = (const char *)buf + sizeof(struct mrc_cli_hdr);
	m->body_len = m->hdr.len;
	return 0;
}

/* A straggler record: every field in its range, and the fields its
 * cause does not use zero, so what mrcctl shows is what a rank named. */
static int check_straggler(const void *b, const char **why)
{
	struct mrc_cli_straggler s;
	memcpy(&s, b, sizeof(s));
	if (s.cause != MRC_CLI_STRAG_COMPUTE && s.cause != MRC_CLI_STRAG_NETWORK)
		BAD("straggler: cause not compute or network");
	if (s.rank >= MRC_CLI_STRAG_RANK_MAX || s.host >= MRC_CLI_STRAG_RANK_MAX ||
	    s.peer_rank >= MRC_CLI_STRAG_RANK_MAX || s.peer_host >= MRC_CLI_STRAG_RANK_MAX)
		BAD("straggler: rank or host out of range");
	if (s.plane < -1 || s.plane >= (int32_t)MRC_CLI_MAX_PLANES)
		BAD("straggler: plane out of range");
	if (s.rank_sends > 1)
		BAD("straggler: rank_sends not 0 or 1");
	if (s.call_us > MRC_CLI_STRAG_US_MAX || s.late_us > MRC_CLI_STRAG_US_MAX ||
	    s.typical_us > MRC_CLI_STRAG_US_MAX)
		BAD("straggler: a time above one day");
	if (s.cause == MRC_CLI_STRAG_COMPUTE &&
	    (s.peer_rank || s.peer_host || s.qpn || s.plane != -1 || s.rank_sends || s.typical_us))
		BAD("straggler: compute with network fields set");
	return 0;
}

/* QP_STATS_N either way: a count of 1 to MRC_CLI_QP_STATS_N_MAX, the
 * reserved word and every slot (each bytes) past the count zero. */
static int check_count(uint32_t n, uint32_t rsvd, const uint8_t *slots, size_t each,
		       const char **why)
{
	if (n == 0 || n > MRC_CLI_QP_STATS_N_MAX)
		BAD("qp_stats_n: count not 1 to 12");
	if (rsvd || !zero(slots + n * each, (MRC_CLI_QP_STATS_N_MAX - n) * each))
		BAD("qp_stats_n: reserved field or a slot past the count not zero");
	return 0;
}

static int check_qp_stats_n(const void *b, const char **why)
{
	struct mrc_cli_qp_stats_n q;
	memcpy(&q, b, sizeof(q));
	return check_count(q.n, q.rsvd, (const uint8_t *)q.qpn, sizeof(q.qpn[0]), why);
}

/* The reply also has a refused QP's counters zero (mrc_qp_stats_n
 * matches its QP numbers to the request's). */
static int check_qp_stats_n_rep(const void *b, const char **why)
{
	struct mrc_cli_qp_stats_n_rep r;
	memcpy(&r, b, sizeof(r));
	int e = check_count(r.n, r.rsvd, (const uint8_t *)r.rec, sizeof(r.rec[0]), why);
	for (uint32_t i = 0; !e && i < r.n; i++)
		if (r.rec[i].status > 0 || (r.rec[i].status < 0 && !zero(&r.rec[i].s, sizeof(r.rec[i].s))))
			BAD("qp_stats_n: a record's status positive, or counters with an error");
	return e;
}

/* Per-type field rules shared by requests (what a well-behaved encoder
 * can never produce is refused here, so the daemon sees clean input). */
static int check_req_body(uint16_t type, const void *b, const char **why)
{
	switch (type) {
	case MRC_CLI_HELLO: {
		struct mrc_cli_hello h;
		memcpy(&h, b, sizeof(h));
		if (h.rsvd)
			BAD("reserved field not zero");
		if (h.ver_min > h.ver_max)
			BAD("hello: ver_min > ver_max");
		if (!memchr(h.name, 0, sizeof(h.name)))
			BAD("hello: name not terminated");
		return 0;
	}
	case MRC_CLI_REG_MR: {
		struct mrc_cli_reg_mr r;
		memcpy(&r, b, sizeof(r));
		if (r.rsvd)
			BAD("reserved field not zero");
		if (r.access & ~MR_ACCESS_ALL)
			BAD("reg_mr: unknown access bits");
		if (r.len == 0)
			BAD("reg_mr: zero length");
		if (r.fd_off + r.len < r.fd_off)
			BAD("reg_mr: offset + length overflows");
		return 0;
	}
	case MRC_CLI_DEREG_MR:
	case MRC_CLI_DESTROY_QP:
	case MRC_CLI_QP_INFO:
	case MRC_CLI_QP_STATS:
		if (!zero((const char *)b + 4, 4))
			BAD("reserved field not zero");
		return 0;
	case MRC_CLI_CREATE_QP: {
		struct mrc_cli_create_qp c;
		memcpy(&c, b, sizeof(c));
		if (c.flags & ~MRC_CLI_QP_FLAGS)
			BAD("create_qp: unknown flags");
		if (!(c.flags & MRC_CLI_QP_PIN_EV) && c.pin_ev)
			BAD("create_qp: pin_ev without the PIN_EV flag");
		if (c.plane_mask >> MRC_CLI_MAX_PLANES)
			BAD("create_qp: plane_mask names a plane above 15");
		if ((c.flags & MRC_CLI_QP_URGENT) && (c.flags & MRC_CLI_QP_BULK))
			BAD("create_qp: both traffic classes, urgent and bulk");
		if (c.rsvd)
			BAD("reserved field not zero");
		return 0;
	}
	case MRC_CLI_CONNECT_OOB: {
		struct mrc_cli_connect_oob c;
		memcpy(&c, b, sizeof(c));
		if (c.rsvd)
			BAD("reserved field not zero");
		return 0;
	}
	case MRC_CLI_LISTEN:
		return 0;
	case MRC_CLI_STRAGGLER:
		return check_straggler(b, why);
	case MRC_CLI_QP_STATS_N:
		return check_qp_stats_n(b, why);
	case MRC_CLI_UNLISTEN: {
		struct mrc_cli_listen l;
		memcpy(&l, b, sizeof(l));
		if (l.backlog)
			BAD("unlisten: backlog not zero");
		return 0;
	}
	}
	return 0;
}

int mrc__cli_dec_req(const void *buf, size_t len, struct mrc_cli_msg *m, const char **why)
{
	const char *dummy;
	if (!why)
		why = &dummy;
	int r = dec_hdr(buf, len, m, why);
	if (r)
		return r;
	uint16_t type = m->hdr.type;
	if (type & MRC_CLI_REPLY)
		BAD("a reply where a request was expected");
	const struct cli_type *t = find(type);
	if (!t) {
		*why = "unknown request type";
		return -EOPNOTSUPP;
	}
	if (m->body_len != t->req)
		BAD("body size does not match the request type");
	return check_req_body(type, m->body, why);
}

int mrc__cli_dec_rep(const void *buf, size_t len, struct mrc_cli_msg *m, const char **why)
{
	const char *dummy;
	if (!why)
		why = &dummy;
	int r = dec_hdr(buf, len, m, why);
	if (r)
		return r;
	uint16_t type = m->hdr.type;
	if (!(type & MRC_CLI_REPLY))
		BAD("a request where a reply was expected");
	type &= (uint16_t)~MRC_CLI_REPLY;
	const struct cli_type *t = find(type);
	struct mrc_cli_status st;
	if (m->body_len < sizeof(st))
		BAD("reply without status");
	memcpy(&st, m->body, sizeof(st));
	if (st.rsvd)
		BAD("reserved field not zero");
	if (st.status > 0)
		BAD("positive status");
	m->status = st.status;
	m->body = (const char *)m->body + sizeof(st);
	m->body_len -= (uint32_t)sizeof(st);
	if (st.status < 0) {
		if (m->body_len > MRC_CLI_REASON_MAX)
			BAD("reason text too long");
		if (memchr(m->body, 0, m->body_len))
			BAD("reason text contains NUL");
		m->reason = m->body;
		m->reason_len = m->body_len;
		m->body = NULL;
		m->body_len = 0;
		return 0;
	}
	if (!t) {
		*why = "unknown reply type";
		return -EOPNOTSUPP;
	}
	if (m->body_len != t->rep)
		BAD("body size does not match the reply type");
	if (type == MRC_CLI_QP_STATS_N)
		return check_qp_stats_n_rep(m->body, why);
	return 0;
}

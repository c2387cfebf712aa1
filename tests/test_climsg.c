/* Client protocol codec: every message type round-trips, every rule of
 * the strict decoder refuses what breaks it, and random mutations never
 * get a message past the decoder in a form that does not re-encode to the
 * same bytes. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "codec/climsg.h"
#include "common/prng.h"

static uint64_t seed;

static const uint16_t req_types[] = {
	MRC_CLI_HELLO, MRC_CLI_REG_MR, MRC_CLI_DEREG_MR, MRC_CLI_CREATE_QP,
	MRC_CLI_DESTROY_QP, MRC_CLI_QP_INFO, MRC_CLI_CONNECT_OOB, MRC_CLI_LISTEN,
	MRC_CLI_UNLISTEN, MRC_CLI_ACCEPT, MRC_CLI_CONNECT, MRC_CLI_STRAGGLER,
	MRC_CLI_QP_STATS, MRC_CLI_QP_STATS_N,
};
#define NTYPES (sizeof(req_types) / sizeof(req_types[0]))

/* A valid body of each request type. */
static size_t valid_body(uint16_t type, uint8_t *b)
{
	size_t n = mrc__cli_req_size(type);
	memset(b, 0, n);
	switch (type) {
	case MRC_CLI_HELLO: {
		struct mrc_cli_hello h = { .ver_min = 1, .ver_max = 2, .name = "t" };
		memcpy(b, &h, sizeof(h));
		break;
	}
	case MRC_CLI_REG_MR: {
		struct mrc_cli_reg_mr r = { .fd_off = 4096, .len = 8192, .access = 0xf };
		memcpy(b, &r, sizeof(r));
		break;
	}
	case MRC_CLI_CREATE_QP: {
		struct mrc_cli_create_qp c = { .sq_entries = 64, .cq_entries = 128,
					       .flags = MRC_CLI_QP_PIN_EV, .pin_ev = 3,
					       .index_base = UINT64_MAX - 4, .plane_mask = 0x5 };
		memcpy(b, &c, sizeof(c));
		break;
	}
	case MRC_CLI_LISTEN: {
		struct mrc_cli_listen l = { .sid = 9, .backlog = 4 };
		memcpy(b, &l, sizeof(l));
		break;
	}
	case MRC_CLI_STRAGGLER: {
		struct mrc_cli_straggler g = { .comm = 0x1234, .call = 7, .cause = MRC_CLI_STRAG_NETWORK,
					       .rank = 3, .host = 5, .peer_rank = 1, .peer_host = 2,
					       .qpn = 17, .plane = 1, .rank_sends = 1, .call_us = 40000,
					       .late_us = 900, .typical_us = 80 };
		memcpy(b, &g, sizeof(g));
		break;
	}
	case MRC_CLI_QP_STATS_N: {
		struct mrc_cli_qp_stats_n q = { .n = 3, .qpn = { 7, 0, 9 } };
		memcpy(b, &q, sizeof(q));
		break;
	}
	default:
		for (size_t i = 0; i < 4 && i < n; i++)
			b[i] = (uint8_t)(i + 1);   /* first u32: a qpn / key / sid */
		break;
	}
	return n;
}

static void test_req_roundtrip(void **state)
{
	(void)state;
	for (size_t i = 0; i < NTYPES; i++) {
		uint8_t body[256], buf[MRC_CLI_MSG_MAX];
		size_t n = valid_body(req_types[i], body);
		assert_true(n > 0);
		int len = mrc__cli_enc_req(buf, sizeof(buf), req_types[i], 1000 + (uint32_t)i, body, n);
		assert_int_equal(len, (int)(sizeof(struct mrc_cli_hdr) + n));
		struct mrc_cli_msg m;
		const char *why = NULL;
		assert_int_equal(mrc__cli_dec_req(buf, (size_t)len, &m, &why), 0);
		assert_int_equal(m.hdr.type, req_types[i]);
		assert_int_equal(m.hdr.req_id, 1000 + i);
		assert_int_equal(m.body_len, n);
		assert_memory_equal(m.body, body, n);
		/* the wrong size for the type is refused, both ways */
		assert_int_equal(mrc__cli_enc_req(buf, sizeof(buf), req_types[i], 1, body, n + 1), -EINVAL);
		((struct mrc_cli_hdr *)buf)->len = (uint32_t)n + 1;
		buf[len] = 0;
		assert_int_equal(mrc__cli_dec_req(buf, (size_t)len + 1, &m, &why), -EBADMSG);
		assert_non_null(why);
	}
}

static void test_rep_roundtrip(void **state)
{
	(void)state;
	uint8_t buf[MRC_CLI_MSG_MAX];
	struct mrc_cli_create_qp_rep rep = { .qpn = 7, .map_len = 1 << 20, .sq_off = 0, .cq_off = 4096 };
	int len = mrc__cli_enc_rep(buf, sizeof(buf), MRC_CLI_CREATE_QP, 5, 0, &rep, sizeof(rep), NULL);
	assert_true(len > 0);
	struct mrc_cli_msg m;
	assert_int_equal(mrc__cli_dec_rep(buf, (size_t)len, &m, NULL), 0);
	assert_int_equal(m.hdr.type, MRC_CLI_CREATE_QP | MRC_CLI_REPLY);
	assert_int_equal(m.status, 0);
	assert_int_equal(m.body_len, sizeof(rep));
	assert_memory_equal(m.body, &rep, sizeof(rep));

	/* error with reason, and a reason cut to the maximum */
	len = mrc__cli_enc_rep(buf, sizeof(buf), MRC_CLI_REG_MR, 6, -EDQUOT, NULL, 0, "too much");
	assert_int_equal(mrc__cli_dec_rep(buf, (size_t)len, &m, NULL), 0);
	assert_int_equal(m.status, -EDQUOT);
	assert_int_equal(m.reason_len, strlen("too much"));
	assert_memory_equal(m.reason, "too much", m.reason_len);
	char lng[400];
	memset(lng, 'x', sizeof(lng) - 1);
	lng[sizeof(lng) - 1] = 0;
	len = mrc__cli_enc_rep(buf, sizeof(buf), MRC_CLI_HELLO, 7, -EINVAL, NULL, 0, lng);
	assert_int_equal(mrc__cli_dec_rep(buf, (size_t)len, &m, NULL), 0);
	assert_int_equal(m.reason_len, MRC_CLI_REASON_MAX);

	/* an error may answer an unknown type; a success may not */
	assert_true(mrc__cli_enc_rep(buf, sizeof(buf), 0x77, 8, -EOPNOTSUPP, NULL, 0, "?") > 0);
	assert_int_equal(mrc__cli_enc_rep(buf, sizeof(buf), 0x77, 8, 0, NULL, 0, NULL), -EINVAL);
	/* positive status, body on an error */
	assert_int_equal(mrc__cli_enc_rep(buf, sizeof(buf), MRC_CLI_HELLO, 8, 1, NULL, 0, NULL), -EINVAL);
	assert_int_equal(mrc__cli_enc_rep(buf, sizeof(buf), MRC_CLI_DEREG_MR, 8, -EIO, &rep, 4, NULL), -EINVAL);
}

/* Builds a request with a raw body (bypassing the encoder's checks). */
static size_t raw_req(uint8_t *buf, uint16_t type, const void *body, size_t n)
{
	struct mrc_cli_hdr h = { .magic = MRC_CLI_MAGIC, .version = MRC_CLI_VERSION, .type = type,
				 .len = (uint32_t)n, .req_id = 1 };
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), body, n);
	return sizeof(h) + n;
}

static void expect_req(const void *buf, size_t len, int err)
{
	struct mrc_cli_msg m;
	const char *why = NULL;
	assert_int_equal(mrc__cli_dec_req(buf, len, &m, &why), err);
	if (err)
		assert_non_null(why);
}

static void test_req_rules(void **state)
{
	(void)state;
	uint8_t buf[MRC_CLI_MSG_MAX * 2], body[256];
	size_t n = valid_body(MRC_CLI_HELLO, body);
	size_t len = raw_req(buf, MRC_CLI_HELLO, body, n);
	expect_req(buf, len, 0);
	expect_req(buf, 10, -EBADMSG);                          /* short */
	expect_req(buf, len - 1, -EBADMSG);                     /* len field */
	((struct mrc_cli_hdr *)buf)->magic ^= 1;
	expect_req(buf, len, -EBADMSG);
	((struct mrc_cli_hdr *)buf)->magic ^= 1;
	((struct mrc_cli_hdr *)buf)->version = MRC_CLI_VERSION + 1;
	expect_req(buf, len, -EPROTONOSUPPORT);
	((struct mrc_cli_hdr *)buf)->version = 1;   /* before index_base */
	expect_req(buf, len, -EPROTONOSUPPORT);
	((struct mrc_cli_hdr *)buf)->version = MRC_CLI_VERSION;
	((struct mrc_cli_hdr *)buf)->type = MRC_CLI_HELLO | MRC_CLI_REPLY;
	expect_req(buf, len, -EBADMSG);
	((struct mrc_cli_hdr *)buf)->type = 0x0042;
	expect_req(buf, len, -EOPNOTSUPP);
	/* no type range is reserved beyond the client operations (operators
	 * speak JSON on their own socket) */
	len = raw_req(buf, 0x0103, "abc", 3);
	expect_req(buf, len, -EOPNOTSUPP);
	/* longer than any message */
	static const uint8_t big[MRC_CLI_MSG_MAX];
	len = raw_req(buf, MRC_CLI_HELLO, big, sizeof(big));
	expect_req(buf, len, -EBADMSG);

	struct mrc_cli_hello h = { .ver_min = 1, .ver_max = 1 };
	memset(h.name, 'a', sizeof(h.name));                    /* unterminated */
	expect_req(buf, raw_req(buf, MRC_CLI_HELLO, &h, sizeof(h)), -EBADMSG);
	h.name[31] = 0;
	h.ver_min = 3;                                          /* min > max */
	expect_req(buf, raw_req(buf, MRC_CLI_HELLO, &h, sizeof(h)), -EBADMSG);
	h.ver_min = 1;
	h.rsvd = 1;
	expect_req(buf, raw_req(buf, MRC_CLI_HELLO, &h, sizeof(h)), -EBADMSG);

	struct mrc_cli_reg_mr r = { .len = 1, .access = 0x10 };
	expect_req(buf, raw_req(buf, MRC_CLI_REG_MR, &r, sizeof(r)), -EBADMSG);
	r.access = 1;
	r.len = 0;
	expect_req(buf, raw_req(buf, MRC_CLI_REG_MR, &r, sizeof(r)), -EBADMSG);
	r.len = 16;
	r.fd_off = UINT64_MAX - 8;
	expect_req(buf, raw_req(buf, MRC_CLI_REG_MR, &r, sizeof(r)), -EBADMSG);

	struct mrc_cli_create_qp c = { .sq_entries = 8, .cq_entries = 8, .flags = 0x80 };
	expect_req(buf, raw_req(buf, MRC_CLI_CREATE_QP, &c, sizeof(c)), -EBADMSG);
	c.flags = 0;
	c.pin_ev = 2;
	expect_req(buf, raw_req(buf, MRC_CLI_CREATE_QP, &c, sizeof(c)), -EBADMSG);
	/* Traffic classes: urgent or bulk, never both. */
	c.pin_ev = 0;
	c.flags = MRC_CLI_QP_URGENT;
	expect_req(buf, raw_req(buf, MRC_CLI_CREATE_QP, &c, sizeof(c)), 0);
	c.flags = MRC_CLI_QP_BULK;
	expect_req(buf, raw_req(buf, MRC_CLI_CREATE_QP, &c, sizeof(c)), 0);
	c.flags = MRC_CLI_QP_URGENT | MRC_CLI_QP_BULK;
	expect_req(buf, raw_req(buf, MRC_CLI_CREATE_QP, &c, sizeof(c)), -EBADMSG);
	c.flags = 0x10;   /* the first unknown flag after the classes */
	expect_req(buf, raw_req(buf, MRC_CLI_CREATE_QP, &c, sizeof(c)), -EBADMSG);
	c.flags = 0;
	c.pin_ev = 2;
	/* Any index_base is valid (ring.h "Index base"): the rings' indices
	 * are free-running, so every start is some lap of some ring. */
	c.pin_ev = 0;
	c.flags = MRC_CLI_QP_POLLED;
	static const uint64_t bases[] = { 0, 1, (1ull << 32) - 5, UINT64_MAX - 4, UINT64_MAX };
	for (size_t i = 0; i < sizeof(bases) / sizeof(bases[0]); i++) {
		c.index_base = bases[i];
		expect_req(buf, raw_req(buf, MRC_CLI_CREATE_QP, &c, sizeof(c)), 0);
	}
	/* The version 1 body (16 bytes, no index_base) and the version 2
	 * body (24 bytes, no plane_mask) are refused. */
	expect_req(buf, raw_req(buf, MRC_CLI_CREATE_QP, &c, 16), -EBADMSG);
	expect_req(buf, raw_req(buf, MRC_CLI_CREATE_QP, &c, 24), -EBADMSG);
	/* plane_mask: planes 0..15 only; its padding must be zero. */
	c.plane_mask = 0xffff;
	expect_req(buf, raw_req(buf, MRC_CLI_CREATE_QP, &c, sizeof(c)), 0);
	c.plane_mask = 1u << 16;
	expect_req(buf, raw_req(buf, MRC_CLI_CREATE_QP, &c, sizeof(c)), -EBADMSG);
	c.plane_mask = 0x80000001u;
	expect_req(buf, raw_req(buf, MRC_CLI_CREATE_QP, &c, sizeof(c)), -EBADMSG);
	c.plane_mask = 2;
	c.rsvd = 1;
	expect_req(buf, raw_req(buf, MRC_CLI_CREATE_QP, &c, sizeof(c)), -EBADMSG);
	c.rsvd = 0;

	struct mrc_cli_qpn q = { .qpn = 1, .rsvd = 1 };
	expect_req(buf, raw_req(buf, MRC_CLI_DESTROY_QP, &q, sizeof(q)), -EBADMSG);
	struct mrc_cli_listen l = { .sid = 1, .backlog = 3 };
	expect_req(buf, raw_req(buf, MRC_CLI_UNLISTEN, &l, sizeof(l)), -EBADMSG);
	struct mrc_cli_connect_oob o = { .qpn = 1, .rsvd = 2 };
	expect_req(buf, raw_req(buf, MRC_CLI_CONNECT_OOB, &o, sizeof(o)), -EBADMSG);
}

/* STRAGGLER: each field out of its range, and a compute verdict with a
 * network field set, is refused (mrcd keeps only what a rank can name). */
static void test_straggler_rules(void **state)
{
	(void)state;
	uint8_t buf[MRC_CLI_MSG_MAX];
	struct mrc_cli_straggler ok, g;
	valid_body(MRC_CLI_STRAGGLER, (uint8_t *)&ok);
	expect_req(buf, raw_req(buf, MRC_CLI_STRAGGLER, &ok, sizeof(ok)), 0);
	struct mrc_cli_straggler c = { .comm = 9, .call = 1, .cause = MRC_CLI_STRAG_COMPUTE,
				       .rank = 2, .host = 2, .plane = -1, .call_us = 5000,
				       .late_us = 2000 };
	expect_req(buf, raw_req(buf, MRC_CLI_STRAGGLER, &c, sizeof(c)), 0);
#define BAD_FIELD(base, stmt) do { g = (base); stmt; \
	expect_req(buf, raw_req(buf, MRC_CLI_STRAGGLER, &g, sizeof(g)), -EBADMSG); } while (0)
	BAD_FIELD(ok, g.cause = 0);                             /* none is not filed */
	BAD_FIELD(ok, g.cause = 3);
	BAD_FIELD(ok, g.rank = MRC_CLI_STRAG_RANK_MAX);
	BAD_FIELD(ok, g.host = UINT32_MAX);
	BAD_FIELD(ok, g.peer_rank = MRC_CLI_STRAG_RANK_MAX);
	BAD_FIELD(ok, g.peer_host = MRC_CLI_STRAG_RANK_MAX);
	BAD_FIELD(ok, g.plane = -2);
	BAD_FIELD(ok, g.plane = (int32_t)MRC_CLI_MAX_PLANES);
	BAD_FIELD(ok, g.rank_sends = 2);
	BAD_FIELD(ok, g.call_us = MRC_CLI_STRAG_US_MAX + 1);
	BAD_FIELD(ok, g.late_us = UINT64_MAX);
	BAD_FIELD(ok, g.typical_us = MRC_CLI_STRAG_US_MAX + 1);
	BAD_FIELD(c, g.peer_rank = 1);                          /* compute: no network fields */
	BAD_FIELD(c, g.peer_host = 1);
	BAD_FIELD(c, g.qpn = 1);
	BAD_FIELD(c, g.plane = 0);
	BAD_FIELD(c, g.rank_sends = 1);
	BAD_FIELD(c, g.typical_us = 1);
#undef BAD_FIELD
	/* a body one byte short or long for the type */
	expect_req(buf, raw_req(buf, MRC_CLI_STRAGGLER, &ok, sizeof(ok) - 1), -EBADMSG);
	uint8_t longer[sizeof(ok) + 1] = { 0 };
	memcpy(longer, &ok, sizeof(ok));
	expect_req(buf, raw_req(buf, MRC_CLI_STRAGGLER, longer, sizeof(longer)), -EBADMSG);
}

/* QP_STATS_N (mrc_qp_stats_n), length-checked both ways: a count of 1 to
 * MRC_CLI_QP_STATS_N_MAX, every unused slot and record zero, the body
 * exactly the type's size (a request cut to its n QPNs is refused), and a
 * refused QP's record without counters. */
static void test_qp_stats_n_rules(void **state)
{
	(void)state;
	uint8_t buf[MRC_CLI_MSG_MAX + 8];
	struct mrc_cli_qp_stats_n q = { 0 }, g;
	for (uint32_t n = 1; n <= MRC_CLI_QP_STATS_N_MAX; n++) {
		q.n = n;
		q.qpn[n - 1] = 100 + n;
		expect_req(buf, raw_req(buf, MRC_CLI_QP_STATS_N, &q, sizeof(q)), 0);
	}
	q.n = 2;
	memset(q.qpn + 2, 0, sizeof(q.qpn) - 2 * sizeof(q.qpn[0]));
#define BAD_REQ(stmt, len) do { g = q; stmt; \
	expect_req(buf, raw_req(buf, MRC_CLI_QP_STATS_N, &g, (len)), -EBADMSG); } while (0)
	BAD_REQ(g.n = 0, sizeof(g));
	BAD_REQ(g.n = MRC_CLI_QP_STATS_N_MAX + 1, sizeof(g));
	BAD_REQ(g.n = UINT32_MAX, sizeof(g));
	BAD_REQ(g.rsvd = 1, sizeof(g));
	BAD_REQ(g.qpn[2] = 5, sizeof(g));                       /* past n */
	BAD_REQ(g.qpn[MRC_CLI_QP_STATS_N_MAX - 1] = 5, sizeof(g));
	BAD_REQ((void)0, 8 + 2 * sizeof(g.qpn[0]));             /* only n's QPNs */
	BAD_REQ((void)0, sizeof(g) - 1);
	uint8_t longer[sizeof(q) + 4] = { 0 };
	memcpy(longer, &q, sizeof(q));
	expect_req(buf, raw_req(buf, MRC_CLI_QP_STATS_N, longer, sizeof(longer)), -EBADMSG);
#undef BAD_REQ

	struct mrc_cli_qp_stats_n_rep ok = { .n = 2 }, r;
	ok.rec[0] = (struct mrc_cli_qp_stats_n_rec){ .qpn = 7, .s = { .tx_pkts = 9, .retx = 2 } };
	ok.rec[1] = (struct mrc_cli_qp_stats_n_rec){ .qpn = 8, .status = -ENOENT };
	struct mrc_cli_msg m;
	int len = mrc__cli_enc_rep(buf, sizeof(buf), MRC_CLI_QP_STATS_N, 3, 0, &ok, sizeof(ok), NULL);
	assert_true(len > 0);
	assert_int_equal(mrc__cli_dec_rep(buf, (size_t)len, &m, NULL), 0);
	assert_memory_equal(m.body, &ok, sizeof(ok));
#define BAD_REP(stmt) do { r = ok; stmt; \
	len = mrc__cli_enc_rep(buf, sizeof(buf), MRC_CLI_QP_STATS_N, 3, 0, &r, sizeof(r), NULL); \
	assert_true(len > 0); \
	assert_int_equal(mrc__cli_dec_rep(buf, (size_t)len, &m, NULL), -EBADMSG); } while (0)
	BAD_REP(r.n = 0);
	BAD_REP(r.n = MRC_CLI_QP_STATS_N_MAX + 1);
	BAD_REP(r.rsvd = 1);
	BAD_REP(r.rec[2].qpn = 1);                              /* a record past n */
	BAD_REP(r.rec[MRC_CLI_QP_STATS_N_MAX - 1].s.retx = 1);
	BAD_REP(r.rec[0].status = 1);
	BAD_REP(r.rec[1].s.retx = 1);                           /* counters of a refused QP */
#undef BAD_REP
	/* a reply body short of the type's size */
	len = mrc__cli_enc_rep(buf, sizeof(buf), MRC_CLI_QP_STATS, 3, 0, &ok, 32, NULL);
	((struct mrc_cli_hdr *)buf)->type = MRC_CLI_QP_STATS_N | MRC_CLI_REPLY;
	assert_int_equal(mrc__cli_dec_rep(buf, (size_t)len, &m, NULL), -EBADMSG);
}

static void test_rep_rules(void **state)
{
	(void)state;
	uint8_t buf[MRC_CLI_MSG_MAX];
	struct mrc_cli_msg m;
	int len = mrc__cli_enc_rep(buf, sizeof(buf), MRC_CLI_DEREG_MR, 1, -EIO, NULL, 0, "a\nb");
	assert_int_equal(mrc__cli_dec_rep(buf, (size_t)len, &m, NULL), 0);
	buf[len - 2] = 0;                                       /* NUL in the reason */
	assert_int_equal(mrc__cli_dec_rep(buf, (size_t)len, &m, NULL), -EBADMSG);
	len = mrc__cli_enc_rep(buf, sizeof(buf), MRC_CLI_DEREG_MR, 1, 0, NULL, 0, NULL);
	struct mrc_cli_status *st = (void *)(buf + sizeof(struct mrc_cli_hdr));
	st->status = 5;                                         /* positive */
	assert_int_equal(mrc__cli_dec_rep(buf, (size_t)len, &m, NULL), -EBADMSG);
	st->status = 0;
	st->rsvd = 1;
	assert_int_equal(mrc__cli_dec_rep(buf, (size_t)len, &m, NULL), -EBADMSG);
	st->rsvd = 0;
	assert_int_equal(mrc__cli_dec_rep(buf, (size_t)len, &m, NULL), 0);
	((struct mrc_cli_hdr *)buf)->type = MRC_CLI_DEREG_MR;  /* not a reply */
	assert_int_equal(mrc__cli_dec_rep(buf, (size_t)len, &m, NULL), -EBADMSG);
	/* success body of the wrong size for its type */
	len = mrc__cli_enc_rep(buf, sizeof(buf), MRC_CLI_DEREG_MR, 1, 0, NULL, 0, NULL);
	((struct mrc_cli_hdr *)buf)->type = MRC_CLI_QP_INFO | MRC_CLI_REPLY;
	assert_int_equal(mrc__cli_dec_rep(buf, (size_t)len, &m, NULL), -EBADMSG);
}

/* Property: whatever random corruption of a valid request the decoder
 * accepts re-encodes to exactly the same bytes. */
static void test_mutations(void **state)
{
	(void)state;
	struct mrc_rng r;
	mrc_rng_seed(&r, seed);
	unsigned accepted = 0;
	for (int it = 0; it < 200000; it++) {
		uint16_t type = req_types[mrc_rng_next(&r) % NTYPES];
		uint8_t body[256], buf[MRC_CLI_MSG_MAX + 8], out[MRC_CLI_MSG_MAX];
		size_t n = valid_body(type, body);
		int len = mrc__cli_enc_req(buf, sizeof(buf), type, (uint32_t)it, body, n);
		int flips = 1 + (int)(mrc_rng_next(&r) % 3);
		for (int f = 0; f < flips; f++)
			buf[mrc_rng_next(&r) % (uint64_t)len] ^= (uint8_t)(1u << (mrc_rng_next(&r) % 8));
		struct mrc_cli_msg m;
		if (mrc__cli_dec_req(buf, (size_t)len, &m, NULL))
			continue;
		accepted++;
		int l2 = mrc__cli_enc_req(out, sizeof(out), m.hdr.type, m.hdr.req_id, m.body, m.body_len);
		assert_int_equal(l2, len);
		assert_memory_equal(out, buf, (size_t)len);
	}
	assert_true(accepted > 0);
}

int main(void)
{
	seed = getenv("MRC_SEED") ? strtoull(getenv("MRC_SEED"), NULL, 0) : (uint64_t)time(NULL);
	printf("test_climsg: seed %llu (MRC_SEED to repeat)\n", (unsigned long long)seed);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_req_roundtrip),
		cmocka_unit_test(test_rep_roundtrip),
		cmocka_unit_test(test_req_rules),
		cmocka_unit_test(test_straggler_rules),
		cmocka_unit_test(test_qp_stats_n_rules),
		cmocka_unit_test(test_rep_rules),
		cmocka_unit_test(test_mutations),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

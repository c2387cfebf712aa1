/* Wire format v2: round trips of every opcode with random fields, every
 * drop reason provoked on its own, every single-bit flip detected,
 * trimming, and truncation at every length.
 * Seed: MRC_TEST_SEED=<n> replays a run; it is printed with every failure. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <endian.h>
#include <errno.h>
#include <ctype.h>
#include <cmocka.h>

#include "tests/support/seeded.h"
#include "transport/crc32c.h"
#include "transport/wire.h"

#define PKT_MAX (MRC_DATA_HDR_LEN + MRC_MAX_PAYLOAD + MRC_TRAILER_LEN)


static uint64_t below(uint64_t n) { return n ? rnd() % n : 0; }


static const uint8_t data_ops[] = {
	MRC_OP_WRITE, MRC_OP_WRITE_IMM, MRC_OP_SEND, MRC_OP_SEND_IMM,
	MRC_OP_ATOMIC_ADD,
};
#define NDATA_OPS (sizeof data_ops / sizeof data_ops[0])

/* ---- helpers -------------------------------------------------------------- */

/* Decodes a private, exactly-sized heap copy so that ASan catches any read
 * past buf[len). */
static int decode_copy(const uint8_t *buf, size_t len, struct mrc_pkt_view *v,
		       enum mrc_wire_drop *why)
{
	uint8_t *c = malloc(len ? len : 1);
	assert_non_null(c);
	memcpy(c, buf, len);
	*why = MRC_DROP__COUNT;
	int rc = mrc_wire_decode(c, len, v, why);
	/* The view's payload must not outlive c: callers only compare it. */
	if (rc == 0 && v->payload)
		v->payload = buf + (v->payload - c);
	free(c);
	return rc;
}

static void expect_drop(const uint8_t *buf, size_t len, enum mrc_wire_drop want,
			const char *what)
{
	struct mrc_pkt_view v;
	enum mrc_wire_drop why;
	int rc = decode_copy(buf, len, &v, &why);
	CHECK(rc == -EBADMSG && why == want, "%s: rc=%d why=%s, want %s", what,
	      rc, rc ? mrc_wire_drop_name(why) : "accepted",
	      mrc_wire_drop_name(want));
}

static void expect_ok(const uint8_t *buf, size_t len, struct mrc_pkt_view *v,
		      const char *what)
{
	enum mrc_wire_drop why;
	int rc = decode_copy(buf, len, v, &why);
	CHECK(rc == 0 && why == MRC_DROP_NONE, "%s: rc=%d why=%s", what, rc,
	      mrc_wire_drop_name(why));
}

/* Recomputes hcrc after a test edited header bytes, with the same rule as
 * the wire (TRIMMED bit of the flags as 0), written out independently. */
static void rehcrc(uint8_t *buf, size_t hl)
{
	uint8_t tmp[MRC_HDR_MAX];
	memcpy(tmp, buf, hl - 4);
	tmp[3] &= (uint8_t)~MRC_F_TRIMMED;
	uint32_t c = htobe32(mrc__crc32c_sw(0, tmp, hl - 4));
	memcpy(buf + hl - 4, &c, 4);
}

static size_t build_data(uint8_t *buf, const struct mrc_data_hdr *h,
			 const uint8_t *payload)
{
	size_t n = mrc_wire_put_data(buf, h);
	assert_int_equal(n, MRC_DATA_HDR_LEN);
	if (h->plen) {
		memcpy(buf + n, payload, h->plen);
		mrc_wire_put_trailer(buf + n + h->plen, payload, h->plen);
		n += h->plen + MRC_TRAILER_LEN;
	}
	return n;
}

static uint16_t rnd_plen(uint32_t cap)
{
	uint32_t m = cap < MRC_MAX_PAYLOAD ? cap : MRC_MAX_PAYLOAD;
	switch (below(4)) {
	case 0: return 0;
	case 1: return (uint16_t)m;
	case 2: return (uint16_t)below((uint64_t)(m < 64 ? m : 64) + 1);
	default: return (uint16_t)below((uint64_t)m + 1);
	}
}

static uint32_t rnd_mlen(void)
{
	switch (below(4)) {
	case 0: return 0;
	case 1: return (uint32_t)below(64) + 1;
	case 2: return (uint32_t)below(100000) + 1;
	default: return (uint32_t)rnd();
	}
}

/* A random header that satisfies every field rule for op. */
static void rnd_data_hdr(struct mrc_data_hdr *h, uint8_t op)
{
	memset(h, 0, sizeof *h);
	h->op = op;
	h->flags = (uint16_t)(rnd() & (MRC_F_FIRST | MRC_F_LAST | MRC_F_RETX));
	h->dqpn = (uint32_t)rnd();
	h->psn = (uint32_t)rnd();
	h->ev = (uint16_t)rnd();
	h->msn = (uint32_t)rnd();
	h->rkey = (uint32_t)rnd();
	h->ts = rnd();
	h->token = rnd();
	if (below(2)) {   /* a piggybacked ACK */
		h->flags |= MRC_F_PB_ACK | (below(2) ? MRC_F_PB_ECN : 0);
		h->pb_cum_psn = (uint32_t)rnd();
		h->pb_sack = (uint16_t)rnd();
		h->pb_hold = (uint16_t)rnd();
	}
	if (op == MRC_OP_WRITE_IMM || op == MRC_OP_SEND_IMM)
		h->imm = (uint32_t)rnd();
	switch (op) {
	case MRC_OP_ATOMIC_ADD:
		h->plen = 8;
		h->mlen = 8;
		h->flags |= MRC_F_FIRST | MRC_F_LAST;
		h->off = rnd() & ~7ull;
		return;
	case MRC_OP_SEND:
	case MRC_OP_SEND_IMM:
		h->mlen = rnd_mlen();
		h->plen = rnd_plen(h->mlen);
		h->flags &= (uint16_t)~(MRC_F_FIRST | MRC_F_LAST);
		switch (below(3)) {
		case 0: h->off = 0; break;
		case 1: h->off = h->mlen - h->plen; break;
		default: h->off = below((uint64_t)(h->mlen - h->plen) + 1); break;
		}
		if (h->off == 0 && below(2))
			h->flags |= MRC_F_FIRST;
		if (h->off + h->plen == h->mlen && below(2))
			h->flags |= MRC_F_LAST;
		break;
	default:
		h->mlen = rnd_mlen();
		h->plen = rnd_plen(h->mlen);
		h->off = below(3) ? rnd() : UINT64_MAX - h->plen;
		if (h->off > UINT64_MAX - h->plen)
			h->off = UINT64_MAX - h->plen;
		break;
	}
	if (h->mlen == 0)
		h->flags |= MRC_F_FIRST | MRC_F_LAST;
}

static void rnd_ack_hdr(struct mrc_ack_hdr *a)
{
	memset(a, 0, sizeof *a);
	a->flags = (uint16_t)(rnd() & MRC_AF_MASK);
	a->nack = (uint8_t)below(MRC_NACK_MAX + 1);
	a->dqpn = (uint32_t)rnd();
	a->cum_psn = (uint32_t)rnd();
	a->trig_psn = (uint32_t)rnd();
	a->sack_base = a->cum_psn + (uint32_t)below(below(2) ? 300 : 0x7fffffffu);
	a->ev = (uint16_t)rnd();
	a->ts_echo = rnd();
	a->token = rnd();
	for (size_t i = 0; i < sizeof a->sack; i++)
		a->sack[i] = (uint8_t)rnd();
}

static void rnd_probe_hdr(struct mrc_probe_hdr *p)
{
	memset(p, 0, sizeof *p);
	p->op = below(2) ? MRC_OP_PROBE : MRC_OP_PROBE_REPLY;
	p->ev = (uint16_t)rnd();
	p->seq = (uint32_t)rnd();
	p->ts = rnd();
	p->ts_echo = rnd();
	p->token = rnd();
}

static void fill(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)rnd();
}

static int data_eq(const struct mrc_data_hdr *a, const struct mrc_data_hdr *b)
{
	return a->op == b->op && a->flags == b->flags && a->dqpn == b->dqpn &&
	       a->psn == b->psn && a->ev == b->ev && a->plen == b->plen &&
	       a->msn == b->msn && a->rkey == b->rkey && a->off == b->off &&
	       a->ts == b->ts && a->mlen == b->mlen && a->imm == b->imm &&
	       a->token == b->token && a->pb_cum_psn == b->pb_cum_psn &&
	       a->pb_sack == b->pb_sack && a->pb_hold == b->pb_hold;
}

static int ack_eq(const struct mrc_ack_hdr *a, const struct mrc_ack_hdr *b)
{
	return a->flags == b->flags && a->nack == b->nack && a->dqpn == b->dqpn &&
	       a->cum_psn == b->cum_psn && a->trig_psn == b->trig_psn &&
	       a->sack_base == b->sack_base && a->ev == b->ev &&
	       a->ts_echo == b->ts_echo && a->token == b->token &&
	       !memcmp(a->sack, b->sack, sizeof a->sack);
}

static int probe_eq(const struct mrc_probe_hdr *a, const struct mrc_probe_hdr *b)
{
	return a->op == b->op && a->ev == b->ev && a->seq == b->seq &&
	       a->ts == b->ts && a->ts_echo == b->ts_echo && a->token == b->token;
}

/* ---- tests ---------------------------------------------------------------- */

/* Byte positions are the contract: check them against the layout in
 * wire.h with distinct values in every field. */
static void test_layout(void **state)
{
	(void)state;
	uint8_t b[MRC_HDR_MAX];
	struct mrc_data_hdr d = {
		.op = MRC_OP_WRITE_IMM, .flags = 0x0012, .dqpn = 0x03040506,
		.psn = 0x0708090a, .ev = 0x0b0c, .plen = 0x0d0e,
		.msn = 0x0f101112, .rkey = 0x13141516,
		.off = 0x1718191a1b1c1d1eull, .ts = 0x1f20212223242526ull,
		.mlen = 0x2728292a, .imm = 0x2b2c2d2e,
		.token = 0x2f30313233343536ull, .pb_cum_psn = 0x3738393a,
		.pb_sack = 0x3b3c, .pb_hold = 0x3d3e,
	};
	assert_int_equal(mrc_wire_put_data(b, &d), 68);
	assert_int_equal(b[0], 2);
	assert_int_equal(b[1], MRC_OP_WRITE_IMM);
	assert_int_equal(b[2], 0x00);
	assert_int_equal(b[3], 0x12);
	for (int i = 4; i < 64; i++)
		CHECK(b[i] == i - 1, "data byte %d = %u", i, b[i]);
	uint32_t c = htobe32(mrc_crc32c(0, b, 64));
	assert_memory_equal(b + 64, &c, 4);

	struct mrc_ack_hdr a = {
		.flags = 0x0102, .dqpn = 0x03040506, .cum_psn = 0x0708090a,
		.ev = 0x0b0c, .nack = 0x0d, .trig_psn = 0x10111213,
		.sack_base = 0x14151617, .ts_echo = 0x18191a1b1c1d1e1full,
		.token = 0x2021222324252627ull,
	};
	for (int i = 0; i < 32; i++)
		a.sack[i] = (uint8_t)(0x28 + i);
	assert_int_equal(mrc_wire_put_ack(b, &a), 76);
	assert_int_equal(b[0], 2);
	assert_int_equal(b[1], MRC_OP_ACK);
	assert_int_equal(b[15], 0);
	for (int i = 2; i < 72; i++)
		if (i != 15)
			CHECK(b[i] == (i < 15 ? i - 1 : i), "ack byte %d = %u",
			      i, b[i]);
	c = htobe32(mrc_crc32c(0, b, 72));
	assert_memory_equal(b + 72, &c, 4);

	struct mrc_probe_hdr p = {
		.op = MRC_OP_PROBE_REPLY, .seq = 0x01020304, .ev = 0x0506,
		.ts = 0x1011121314151617ull, .ts_echo = 0x18191a1b1c1d1e1full,
		.token = 0x2021222324252627ull,
	};
	static const uint8_t want[40] = {
		2, MRC_OP_PROBE_REPLY, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 0, 0,
		0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17,
		0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x1f,
		0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27,
	};
	assert_int_equal(mrc_wire_put_probe(b, &p), 44);
	assert_memory_equal(b, want, 40);
	c = htobe32(mrc_crc32c(0, b, 40));
	assert_memory_equal(b + 40, &c, 4);

	uint8_t pl[3] = { 1, 2, 3 };
	mrc_wire_put_trailer(b, pl, 3);
	c = htobe32(mrc_crc32c(0, pl, 3));
	assert_memory_equal(b, &c, 4);
}

/* A version-1 packet (the old 52-byte data header, its CRC right) is
 * refused as bad_version before anything else is read. */
static void test_v1_dropped(void **state)
{
	(void)state;
	uint8_t b[52 + 8 + 4] = { 1, MRC_OP_WRITE, 0, MRC_F_FIRST | MRC_F_LAST };
	b[15] = 8;                 /* plen */
	b[43] = 8;                 /* mlen */
	uint32_t c = htobe32(mrc_crc32c(0, b, 48));
	memcpy(b + 48, &c, 4);
	c = htobe32(mrc_crc32c(0, b + 52, 8));
	memcpy(b + 60, &c, 4);
	expect_drop(b, sizeof b, MRC_DROP_VERSION, "v1 data packet");
	uint8_t ack[68] = { 1, MRC_OP_ACK };
	c = htobe32(mrc_crc32c(0, ack, 64));
	memcpy(ack + 64, &c, 4);
	expect_drop(ack, sizeof ack, MRC_DROP_VERSION, "v1 ACK");
	assert_int_equal(mrc_wire_trim(b, sizeof b), sizeof b);
}

static void test_roundtrip_data(void **state)
{
	(void)state;
	static uint8_t buf[PKT_MAX], buf2[PKT_MAX], payload[MRC_MAX_PAYLOAD];
	for (int it = 0; it < 3000; it++) {
		uint8_t op = data_ops[it % NDATA_OPS];
		struct mrc_data_hdr h;
		rnd_data_hdr(&h, op);
		fill(payload, h.plen);
		size_t n = build_data(buf, &h, payload);
		struct mrc_pkt_view v;
		expect_ok(buf, n, &v, mrc_op_name(op));
		CHECK(v.op == op && !v.trimmed && data_eq(&v.u.data, &h),
		      "it %d %s: fields differ", it, mrc_op_name(op));
		if (h.plen) {
			CHECK(v.payload == buf + MRC_DATA_HDR_LEN,
			      "it %d: payload pointer", it);
		} else {
			CHECK(v.payload == NULL, "it %d: payload not NULL", it);
		}
		/* decode -> encode is the identity */
		size_t n2 = build_data(buf2, &v.u.data, buf + MRC_DATA_HDR_LEN);
		CHECK(n2 == n && !memcmp(buf, buf2, n), "it %d: re-encode differs",
		      it);
	}
}

static void test_roundtrip_ack_probe(void **state)
{
	(void)state;
	uint8_t buf[MRC_HDR_MAX], buf2[MRC_HDR_MAX];
	for (int it = 0; it < 3000; it++) {
		struct mrc_pkt_view v;
		struct mrc_ack_hdr a;
		rnd_ack_hdr(&a);
		size_t n = mrc_wire_put_ack(buf, &a);
		assert_int_equal(n, MRC_ACK_HDR_LEN);
		expect_ok(buf, n, &v, "ACK");
		CHECK(v.op == MRC_OP_ACK && !v.trimmed && !v.payload &&
		      ack_eq(&v.u.ack, &a), "it %d: ACK fields differ", it);
		mrc_wire_put_ack(buf2, &v.u.ack);
		CHECK(!memcmp(buf, buf2, n), "it %d: ACK re-encode differs", it);

		struct mrc_probe_hdr p;
		rnd_probe_hdr(&p);
		n = mrc_wire_put_probe(buf, &p);
		assert_int_equal(n, MRC_PROBE_HDR_LEN);
		expect_ok(buf, n, &v, "PROBE");
		CHECK(v.op == p.op && !v.trimmed && !v.payload &&
		      probe_eq(&v.u.probe, &p), "it %d: PROBE fields differ", it);
		mrc_wire_put_probe(buf2, &v.u.probe);
		CHECK(!memcmp(buf, buf2, n), "it %d: PROBE re-encode differs", it);
	}
}

/* Serial-number edge: sack_base may be "ahead" of cum_psn across the wrap. */
static void test_ack_psn_wrap(void **state)
{
	(void)state;
	uint8_t buf[MRC_HDR_MAX];
	struct mrc_pkt_view v;
	struct mrc_ack_hdr a = { .cum_psn = 0xfffffff0u, .sack_base = 5 };
	mrc_wire_put_ack(buf, &a);
	expect_ok(buf, MRC_ACK_HDR_LEN, &v, "sack_base after wrap");
	a.cum_psn = 5;
	a.sack_base = 0xfffffff0u;
	mrc_wire_put_ack(buf, &a);
	expect_drop(buf, MRC_ACK_HDR_LEN, MRC_DROP_FIELD, "sack_base before wrap");
	a.sack_base = 5;
	mrc_wire_put_ack(buf, &a);
	expect_ok(buf, MRC_ACK_HDR_LEN, &v, "sack_base == cum_psn");
}

/* RNR NACKs carry the receiver's RNR delay in byte 15 (codes 1..17: 10 us
 * << (c - 1)); every other ACK must have 0 there, and codes above 17 are
 * refused. */
static void test_ack_rnr_timer(void **state)
{
	(void)state;
	uint8_t buf[MRC_HDR_MAX];
	struct mrc_pkt_view v;
	assert_int_equal(mrc_wire_rnr_ns(0), 0);
	assert_int_equal(mrc_wire_rnr_ns(1), 10000);
	assert_int_equal(mrc_wire_rnr_ns(MRC_RNR_TIMER_MAX), 10000ull << 16);
	assert_int_equal(mrc_wire_rnr_ns(MRC_RNR_TIMER_MAX + 1), 0);
	assert_int_equal(mrc_wire_rnr_code(1), 1);
	assert_int_equal(mrc_wire_rnr_code(100000), 5);   /* 100 us -> 160 us */
	assert_int_equal(mrc_wire_rnr_code(~0ull), MRC_RNR_TIMER_MAX);
	for (uint8_t c = 1; c <= MRC_RNR_TIMER_MAX; c++) {
		struct mrc_ack_hdr a = { .nack = MRC_NACK_RNR, .rnr_timer = c, .cum_psn = 7,
					 .sack_base = 7 };
		mrc_wire_put_ack(buf, &a);
		assert_int_equal(buf[15], c);
		expect_ok(buf, MRC_ACK_HDR_LEN, &v, "RNR NACK with a timer");
		assert_int_equal(v.u.ack.rnr_timer, c);
	}
	struct mrc_ack_hdr a = { .nack = MRC_NACK_RNR, .rnr_timer = MRC_RNR_TIMER_MAX + 1 };
	mrc_wire_put_ack(buf, &a);
	expect_drop(buf, MRC_ACK_HDR_LEN, MRC_DROP_FIELD, "RNR timer code 18");
	/* Only RNR NACKs carry it: the encoder writes 0 for the others and
	 * the decoder refuses a non-zero byte 15 on them. */
	a.nack = MRC_NACK_NONE;
	a.rnr_timer = 3;
	mrc_wire_put_ack(buf, &a);
	assert_int_equal(buf[15], 0);
	buf[15] = 3;
	rehcrc(buf, MRC_ACK_HDR_LEN);
	expect_drop(buf, MRC_ACK_HDR_LEN, MRC_DROP_FIELD, "byte 15 set on a plain ACK");
}

static void test_drop_prefix(void **state)
{
	(void)state;
	uint8_t buf[MRC_HDR_MAX + 16];
	struct mrc_probe_hdr p = { .op = MRC_OP_PROBE, .seq = 7 };
	size_t n = mrc_wire_put_probe(buf, &p);

	for (size_t l = 0; l < 4; l++)
		expect_drop(buf, l, MRC_DROP_TRUNCATED, "len < 4");
	static const uint8_t bad_ver[] = { 0, 1, 3, 0x81, 0xff };
	for (size_t i = 0; i < sizeof bad_ver; i++) {
		buf[0] = bad_ver[i];
		expect_drop(buf, n, MRC_DROP_VERSION, "version");
		expect_drop(buf, 4, MRC_DROP_VERSION, "version, 4 bytes");
	}
	buf[0] = MRC_WIRE_VERSION;
	for (int op = 0; op < 256; op++) {
		int known = mrc_op_is_data((uint8_t)op) || op == MRC_OP_ACK ||
			    op == MRC_OP_PROBE || op == MRC_OP_PROBE_REPLY;
		CHECK(known == (strcmp(mrc_op_name((uint8_t)op), "UNKNOWN") != 0),
		      "op %d name", op);
		if (known)
			continue;
		buf[1] = (uint8_t)op;
		expect_drop(buf, 4, MRC_DROP_OPCODE, "opcode");
		expect_drop(buf, sizeof buf, MRC_DROP_OPCODE, "opcode");
	}
}

static void test_drop_hcrc_pcrc(void **state)
{
	(void)state;
	uint8_t buf[256], payload[100];
	struct mrc_data_hdr h;
	rnd_data_hdr(&h, MRC_OP_WRITE);
	h.mlen = 100;
	h.plen = 100;
	h.off = 0;
	fill(payload, sizeof payload);
	size_t n = build_data(buf, &h, payload);
	for (size_t i = 0; i < MRC_DATA_HDR_LEN; i++) {
		if (i < 2)
			continue; /* version/opcode: other reasons */
		buf[i] ^= 0x40;
		expect_drop(buf, n, MRC_DROP_HCRC, "header byte");
		buf[i] ^= 0x40;
	}
	for (size_t i = MRC_DATA_HDR_LEN; i < n; i++) {
		buf[i] ^= 0x01;
		expect_drop(buf, n, MRC_DROP_PCRC, "payload/trailer byte");
		buf[i] ^= 0x01;
	}
	struct mrc_pkt_view v;
	expect_ok(buf, n, &v, "restored");

	struct mrc_ack_hdr a;
	rnd_ack_hdr(&a);
	n = mrc_wire_put_ack(buf, &a);
	buf[40] ^= 0x80;
	expect_drop(buf, n, MRC_DROP_HCRC, "ack sack byte");
	struct mrc_probe_hdr p;
	rnd_probe_hdr(&p);
	n = mrc_wire_put_probe(buf, &p);
	buf[33] ^= 0x02;
	expect_drop(buf, n, MRC_DROP_HCRC, "probe token byte");
	n = mrc_wire_put_probe(buf, &p);
	buf[41] ^= 0x02;
	expect_drop(buf, n, MRC_DROP_HCRC, "probe hcrc byte");
}

static void test_drop_length(void **state)
{
	(void)state;
	static uint8_t buf[PKT_MAX + 8];
	uint8_t payload[16] = { 0 };
	struct mrc_data_hdr h = {
		.op = MRC_OP_WRITE, .flags = MRC_F_FIRST | MRC_F_LAST,
		.plen = 16, .mlen = 16,
	};
	size_t n = build_data(buf, &h, payload);
	expect_drop(buf, n + 1, MRC_DROP_LENGTH, "data one byte long");
	expect_drop(buf, n - 1, MRC_DROP_LENGTH, "data trailer cut");
	expect_drop(buf, MRC_DATA_HDR_LEN, MRC_DROP_LENGTH, "data header only");
	h.plen = 0;
	h.mlen = 0;
	n = build_data(buf, &h, payload);
	expect_drop(buf, n + 4, MRC_DROP_LENGTH, "plen 0 with a trailer");

	struct mrc_ack_hdr a = { .nack = MRC_NACK_TRIMMED };
	n = mrc_wire_put_ack(buf, &a);
	expect_drop(buf, n + 1, MRC_DROP_LENGTH, "ack too long");
	expect_drop(buf, n - 1, MRC_DROP_TRUNCATED, "ack too short");
	struct mrc_probe_hdr p = { .op = MRC_OP_PROBE };
	n = mrc_wire_put_probe(buf, &p);
	expect_drop(buf, n + 1, MRC_DROP_LENGTH, "probe too long");
	expect_drop(buf, n - 1, MRC_DROP_TRUNCATED, "probe too short");

	/* trimmed packets must be exactly the header */
	h.plen = 16;
	h.mlen = 16;
	n = build_data(buf, &h, payload);
	assert_int_equal(mrc_wire_trim(buf, n), MRC_DATA_HDR_LEN);
	expect_drop(buf, MRC_DATA_HDR_LEN + 1, MRC_DROP_LENGTH, "trimmed + 1");
	expect_drop(buf, n, MRC_DROP_LENGTH, "trimmed bit on a full packet");
}

/* One mutation of a valid data header per rule; the hcrc is recomputed so
 * that only the field rule can refuse it. */
struct data_case {
	const char *what;
	uint8_t op;
	uint16_t flags, plen;
	uint32_t mlen, imm;
	uint64_t off;
	int ok;
};

static void test_drop_field_data(void **state)
{
	(void)state;
	const uint16_t FL = MRC_F_FIRST | MRC_F_LAST;
	const struct data_case cases[] = {
		{ "valid write", MRC_OP_WRITE, FL, 10, 10, 0, 0, 1 },
		{ "flag 0x40 (ENC, reserved)", MRC_OP_WRITE, FL | MRC_F_ENC, 10, 10, 0, 0, 0 },
		{ "flag 0x80", MRC_OP_WRITE, FL | 0x80, 10, 10, 0, 0, 0 },
		{ "PB_ECN without PB_ACK", MRC_OP_WRITE, FL | MRC_F_PB_ECN, 10, 10, 0, 0, 0 },
		{ "flag 0x8000", MRC_OP_WRITE, FL | 0x8000, 10, 10, 0, 0, 0 },
		{ "plen > max", MRC_OP_WRITE, 0, MRC_MAX_PAYLOAD + 1, 1u << 20, 0, 0, 0 },
		{ "plen == max", MRC_OP_WRITE, 0, MRC_MAX_PAYLOAD, 1u << 20, 0, 0, 1 },
		{ "plen > mlen", MRC_OP_WRITE, 0, 11, 10, 0, 0, 0 },
		{ "mlen 0, plen 0", MRC_OP_WRITE, FL, 0, 0, 0, 0, 1 },
		{ "mlen 0, no LAST", MRC_OP_WRITE, MRC_F_FIRST, 0, 0, 0, 0, 0 },
		{ "mlen 0, no FIRST", MRC_OP_SEND, MRC_F_LAST, 0, 0, 0, 0, 0 },
		{ "mlen 0 send", MRC_OP_SEND_IMM, FL, 0, 0, 9, 0, 1 },
		{ "imm on WRITE", MRC_OP_WRITE, 0, 10, 10, 1, 0, 0 },
		{ "imm on SEND", MRC_OP_SEND, 0, 10, 10, 1, 0, 0 },
		{ "imm on ATOMIC", MRC_OP_ATOMIC_ADD, FL, 8, 8, 1, 0, 0 },
		{ "imm on WRITE_IMM", MRC_OP_WRITE_IMM, 0, 10, 10, 1, 0, 1 },
		{ "send middle", MRC_OP_SEND, 0, 10, 30, 0, 10, 1 },
		{ "send past end", MRC_OP_SEND, 0, 10, 30, 0, 21, 0 },
		{ "send off > mlen", MRC_OP_SEND, 0, 0, 30, 0, 31, 0 },
		{ "send off+plen wraps", MRC_OP_SEND, 0, 10, 30, 0, UINT64_MAX - 4, 0 },
		{ "send FIRST off!=0", MRC_OP_SEND, MRC_F_FIRST, 10, 30, 0, 10, 0 },
		{ "send LAST short", MRC_OP_SEND, MRC_F_LAST, 10, 30, 0, 10, 0 },
		{ "send LAST at end", MRC_OP_SEND_IMM, MRC_F_LAST, 10, 30, 0, 20, 1 },
		{ "atomic ok", MRC_OP_ATOMIC_ADD, FL | MRC_F_RETX, 8, 8, 0, 16, 1 },
		{ "atomic plen 4", MRC_OP_ATOMIC_ADD, FL, 4, 8, 0, 0, 0 },
		{ "atomic mlen 16", MRC_OP_ATOMIC_ADD, FL, 8, 16, 0, 0, 0 },
		{ "atomic no LAST", MRC_OP_ATOMIC_ADD, MRC_F_FIRST, 8, 8, 0, 0, 0 },
		{ "atomic no FIRST", MRC_OP_ATOMIC_ADD, MRC_F_LAST, 8, 8, 0, 0, 0 },
		{ "atomic off%8", MRC_OP_ATOMIC_ADD, FL, 8, 8, 0, 12, 0 },
		{ "write end of space", MRC_OP_WRITE, 0, 10, 10, 0, UINT64_MAX - 10, 1 },
		{ "write wraps", MRC_OP_WRITE_IMM, 0, 10, 10, 0, UINT64_MAX - 9, 0 },
	};
	static uint8_t buf[PKT_MAX + 16], payload[MRC_MAX_PAYLOAD + 1];
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const struct data_case *c = &cases[i];
		struct mrc_data_hdr h;
		rnd_data_hdr(&h, c->op);
		h.flags = c->flags;
		h.plen = c->plen;
		h.mlen = c->mlen;
		h.imm = c->imm;
		h.off = c->off;
		h.pb_cum_psn = h.pb_sack = h.pb_hold = 0;
		size_t n = build_data(buf, &h, payload);
		struct mrc_pkt_view v;
		if (c->ok)
			expect_ok(buf, n, &v, c->what);
		else
			expect_drop(buf, n, MRC_DROP_FIELD, c->what);
	}

	/* Piggybacked-ACK fields are zero unless PB_ACK says they are one. */
	for (int f = 0; f < 3; f++) {
		struct mrc_data_hdr g;
		rnd_data_hdr(&g, MRC_OP_WRITE);
		g.flags &= (uint16_t)~(MRC_F_PB_ACK | MRC_F_PB_ECN);
		g.pb_cum_psn = f == 0;
		g.pb_sack = f == 1;
		g.pb_hold = f == 2;
		size_t m = build_data(buf, &g, payload);
		expect_drop(buf, m, MRC_DROP_FIELD, "pb field without PB_ACK");
		g.flags |= MRC_F_PB_ACK;
		m = build_data(buf, &g, payload);
		struct mrc_pkt_view v;
		expect_ok(buf, m, &v, "pb field with PB_ACK");
	}

	/* The TRIMMED bit on a packet without payload can only be corruption. */
	struct mrc_data_hdr h = { .op = MRC_OP_WRITE_IMM,
				  .flags = MRC_F_FIRST | MRC_F_LAST | MRC_F_TRIMMED };
	size_t n = build_data(buf, &h, payload);
	expect_drop(buf, n, MRC_DROP_FIELD, "trimmed, plen 0");
}

static void test_drop_field_ack_probe(void **state)
{
	(void)state;
	uint8_t buf[MRC_HDR_MAX];
	struct mrc_pkt_view v;
	struct mrc_ack_hdr a;

	rnd_ack_hdr(&a);
	a.flags = MRC_AF_ECN;
	a.nack = MRC_NACK_MAX;
	mrc_wire_put_ack(buf, &a);
	expect_ok(buf, MRC_ACK_HDR_LEN, &v, "ack ok");
	for (int bit = 1; bit < 16; bit++) {
		a.flags = (uint16_t)(MRC_AF_ECN | (1u << bit));
		mrc_wire_put_ack(buf, &a);
		expect_drop(buf, MRC_ACK_HDR_LEN, MRC_DROP_FIELD, "ack flag");
	}
	a.flags = 0;
	a.nack = MRC_NACK_MAX + 1;
	mrc_wire_put_ack(buf, &a);
	expect_drop(buf, MRC_ACK_HDR_LEN, MRC_DROP_FIELD, "nack > max");
	a.nack = 0xff;
	mrc_wire_put_ack(buf, &a);
	expect_drop(buf, MRC_ACK_HDR_LEN, MRC_DROP_FIELD, "nack 255");
	a.nack = MRC_NACK_NONE;
	mrc_wire_put_ack(buf, &a);
	buf[15] = 1;
	rehcrc(buf, MRC_ACK_HDR_LEN);
	expect_drop(buf, MRC_ACK_HDR_LEN, MRC_DROP_FIELD, "ack reserved byte");
	a.sack_base = a.cum_psn - 1;
	mrc_wire_put_ack(buf, &a);
	expect_drop(buf, MRC_ACK_HDR_LEN, MRC_DROP_FIELD, "sack_base < cum_psn");

	struct mrc_probe_hdr p;
	rnd_probe_hdr(&p);
	static const struct { size_t at; uint8_t val; const char *what; } pc[] = {
		{ 2, 0x01, "probe flags high" }, { 3, 0x01, "probe flags low" },
		{ 3, MRC_F_TRIMMED, "probe trimmed bit" },
		{ 4, 0x80, "probe rsvd32 [0]" }, { 7, 0x01, "probe rsvd32 [3]" },
		{ 14, 0x10, "probe rsvd16 [0]" }, { 15, 0x01, "probe rsvd16 [1]" },
	};
	for (size_t i = 0; i < sizeof pc / sizeof pc[0]; i++) {
		mrc_wire_put_probe(buf, &p);
		buf[pc[i].at] = pc[i].val;
		rehcrc(buf, MRC_PROBE_HDR_LEN);
		expect_drop(buf, MRC_PROBE_HDR_LEN, MRC_DROP_FIELD, pc[i].what);
	}
}

/* Small packets of every opcode: every single-bit flip is refused. */
static void flip_all(uint8_t *buf, size_t n, const char *what)
{
	struct mrc_pkt_view v;
	enum mrc_wire_drop why;
	for (size_t bit = 0; bit < n * 8; bit++) {
		buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		int rc = decode_copy(buf, n, &v, &why);
		CHECK(rc == -EBADMSG, "%s: flip of bit %zu (byte %zu) accepted",
		      what, bit, bit / 8);
		buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	}
	expect_ok(buf, n, &v, what);
}

static void test_bit_flips(void **state)
{
	(void)state;
	uint8_t buf[MRC_DATA_HDR_LEN + 64 + MRC_TRAILER_LEN], payload[64];
	for (size_t k = 0; k < NDATA_OPS; k++) {
		for (int withpl = 0; withpl < 2; withpl++) {
			struct mrc_data_hdr h;
			if (data_ops[k] == MRC_OP_ATOMIC_ADD && !withpl)
				continue; /* always carries 8 bytes */
			do
				rnd_data_hdr(&h, data_ops[k]);
			while (h.plen > 64 || (h.plen != 0) != withpl);
			fill(payload, h.plen);
			size_t n = build_data(buf, &h, payload);
			flip_all(buf, n, mrc_op_name(h.op));
			if (h.plen) {
				n = mrc_wire_trim(buf, n);
				flip_all(buf, n, "trimmed");
			}
		}
	}
	struct mrc_ack_hdr a;
	rnd_ack_hdr(&a);
	flip_all(buf, mrc_wire_put_ack(buf, &a), "ACK");
	struct mrc_probe_hdr p;
	rnd_probe_hdr(&p);
	p.op = MRC_OP_PROBE;
	flip_all(buf, mrc_wire_put_probe(buf, &p), "PROBE");
	p.op = MRC_OP_PROBE_REPLY;
	flip_all(buf, mrc_wire_put_probe(buf, &p), "PROBE_REPLY");
}

static void test_trim(void **state)
{
	(void)state;
	static uint8_t buf[PKT_MAX], orig[PKT_MAX], payload[MRC_MAX_PAYLOAD];
	for (int it = 0; it < 500; it++) {
		struct mrc_data_hdr h;
		rnd_data_hdr(&h, data_ops[it % NDATA_OPS]);
		fill(payload, h.plen);
		size_t n = build_data(buf, &h, payload);
		memcpy(orig, buf, n);
		size_t t = mrc_wire_trim(buf, n);
		struct mrc_pkt_view v;
		if (h.plen == 0) {
			CHECK(t == n && !memcmp(buf, orig, n),
			      "it %d: packet without payload was trimmed", it);
			continue;
		}
		CHECK(t == MRC_DATA_HDR_LEN, "it %d: trim returned %zu", it, t);
		CHECK(!memcmp(buf + 4, orig + 4, MRC_DATA_HDR_LEN - 4) &&
		      buf[3] == (orig[3] | MRC_F_TRIMMED) &&
		      !memcmp(buf, orig, 3), "it %d: trim changed more than the bit",
		      it);
		expect_ok(buf, t, &v, "trimmed");
		struct mrc_data_hdr want = h;
		want.flags |= MRC_F_TRIMMED;
		CHECK(v.trimmed == 1 && v.payload == NULL && v.op == h.op &&
		      data_eq(&v.u.data, &want), "it %d: trimmed view", it);
		/* the trimmed header re-encodes bit for bit */
		uint8_t re[MRC_DATA_HDR_LEN];
		mrc_wire_put_data(re, &v.u.data);
		CHECK(!memcmp(re, buf, MRC_DATA_HDR_LEN), "it %d: re-encode", it);
		/* trimming again is a no-op */
		CHECK(mrc_wire_trim(buf, t) == t, "it %d: re-trim", it);
	}
	/* non-data packets and unknown versions are never trimmed */
	struct mrc_ack_hdr a = { 0 };
	size_t n = mrc_wire_put_ack(buf, &a);
	memcpy(orig, buf, n);
	assert_int_equal(mrc_wire_trim(buf, n), n);
	assert_memory_equal(buf, orig, n);
	struct mrc_data_hdr h = { .op = MRC_OP_WRITE, .plen = 8, .mlen = 8 };
	n = build_data(buf, &h, payload);
	buf[0] = MRC_WIRE_VERSION + 1;
	memcpy(orig, buf, n);
	assert_int_equal(mrc_wire_trim(buf, n), n);
	assert_memory_equal(buf, orig, n);
	assert_int_equal(mrc_wire_trim(buf, 2), 2);
}

/* Every prefix of a valid packet is refused, with the right reason, and
 * (under ASan) without reading past it. */
static void test_truncation(void **state)
{
	(void)state;
	static uint8_t buf[PKT_MAX], payload[MRC_MAX_PAYLOAD];
	for (size_t k = 0; k < NDATA_OPS + 3; k++) {
		size_t n, hl;
		if (k < NDATA_OPS) {
			struct mrc_data_hdr h;
			do
				rnd_data_hdr(&h, data_ops[k]);
			while (h.plen == 0 || h.plen > 2000);
			fill(payload, h.plen);
			n = build_data(buf, &h, payload);
			hl = MRC_DATA_HDR_LEN;
		} else if (k == NDATA_OPS) {
			struct mrc_ack_hdr a;
			rnd_ack_hdr(&a);
			n = hl = mrc_wire_put_ack(buf, &a);
		} else {
			struct mrc_probe_hdr p;
			rnd_probe_hdr(&p);
			p.op = k == NDATA_OPS + 1 ? MRC_OP_PROBE : MRC_OP_PROBE_REPLY;
			n = hl = mrc_wire_put_probe(buf, &p);
		}
		for (size_t l = 0; l < n; l++)
			expect_drop(buf, l, l < hl ? MRC_DROP_TRUNCATED
						   : MRC_DROP_LENGTH, "prefix");
		struct mrc_pkt_view v;
		expect_ok(buf, n, &v, "whole");
	}
}

/* Random garbage never crashes and is almost always refused; anything
 * accepted must re-encode bit for bit. */
static void test_garbage(void **state)
{
	(void)state;
	uint8_t buf[200], re[200];
	for (int it = 0; it < 20000; it++) {
		size_t n = (size_t)below(sizeof buf + 1);
		fill(buf, n);
		if (n >= 2 && below(2)) {
			buf[0] = MRC_WIRE_VERSION;
			buf[1] = (uint8_t)below(40);
		}
		struct mrc_pkt_view v;
		enum mrc_wire_drop why;
		if (decode_copy(buf, n, &v, &why) != 0) {
			CHECK(why > MRC_DROP_NONE && why < MRC_DROP__COUNT,
			      "why out of range");
			continue;
		}
		size_t m;
		if (mrc_op_is_data(v.op)) {
			m = mrc_wire_put_data(re, &v.u.data);
		} else if (v.op == MRC_OP_ACK) {
			m = mrc_wire_put_ack(re, &v.u.ack);
		} else {
			m = mrc_wire_put_probe(re, &v.u.probe);
		}
		CHECK(m <= n && !memcmp(re, buf, m), "it %d: accepted garbage "
		      "does not re-encode", it);
	}
}

/* Whether a datagram is daemon control traffic: decided by its opcode
 * alone, never by reading past len; every packet the encoders make is
 * engine traffic. */
static int is_ctrl_copy(const uint8_t *buf, size_t len)
{
	uint8_t *c = malloc(len ? len : 1);   /* exact size: ASan sees overreads */
	assert_non_null(c);
	memcpy(c, buf, len);
	int r = mrc_wire_is_ctrl(c, len);
	free(c);
	return r;
}

static void test_is_ctrl(void **state)
{
	(void)state;
	uint8_t buf[PKT_MAX];
	for (unsigned op = 0; op < 256; op++) {
		fill(buf, 64);
		buf[1] = (uint8_t)op;
		for (size_t n = 0; n <= 64; n++)
			CHECK(!!is_ctrl_copy(buf, n) == (n >= 2 && op == MRC_OP_CTRL),
			      "op %u len %zu", op, n);
	}
	for (int it = 0; it < 300; it++) {
		struct mrc_data_hdr h;
		rnd_data_hdr(&h, data_ops[it % NDATA_OPS]);
		size_t n = mrc_wire_put_data(buf, &h);
		CHECK(!is_ctrl_copy(buf, n), "it %d: data packet taken as control", it);
		struct mrc_ack_hdr a;
		rnd_ack_hdr(&a);
		n = mrc_wire_put_ack(buf, &a);
		CHECK(!is_ctrl_copy(buf, n), "it %d: ACK taken as control", it);
		struct mrc_probe_hdr p;
		rnd_probe_hdr(&p);
		n = mrc_wire_put_probe(buf, &p);
		CHECK(!is_ctrl_copy(buf, n), "it %d: probe taken as control", it);
	}
}

static void test_names(void **state)
{
	(void)state;
	for (int i = 0; i < MRC_DROP__COUNT; i++) {
		const char *s = mrc_wire_drop_name((enum mrc_wire_drop)i);
		assert_non_null(s);
		assert_true(s[0] != '\0');
		for (const char *c = s; *c; c++)
			CHECK(islower((unsigned char)*c) || *c == '_',
			      "drop name '%s' is not a counter name", s);
		for (int j = 0; j < i; j++)
			CHECK(strcmp(s, mrc_wire_drop_name((enum mrc_wire_drop)j)),
			      "drop names %d and %d equal", i, j);
	}
	assert_string_equal(mrc_wire_drop_name(MRC_DROP_TRUNCATED), "truncated");
	assert_string_equal(mrc_wire_drop_name(MRC_DROP_HCRC), "bad_hcrc");
	assert_non_null(mrc_wire_drop_name(MRC_DROP__COUNT));
	assert_string_equal(mrc_op_name(MRC_OP_WRITE), "WRITE");
	assert_string_equal(mrc_op_name(MRC_OP_ACK), "ACK");
	assert_string_equal(mrc_op_name(MRC_OP_PROBE_REPLY), "PROBE_REPLY");
}

int main(void)
{
	seed_init("test_wire");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_layout, reseed),
		cmocka_unit_test_setup(test_v1_dropped, reseed),
		cmocka_unit_test_setup(test_roundtrip_data, reseed),
		cmocka_unit_test_setup(test_roundtrip_ack_probe, reseed),
		cmocka_unit_test_setup(test_ack_psn_wrap, reseed),
		cmocka_unit_test_setup(test_ack_rnr_timer, reseed),
		cmocka_unit_test_setup(test_drop_prefix, reseed),
		cmocka_unit_test_setup(test_drop_hcrc_pcrc, reseed),
		cmocka_unit_test_setup(test_drop_length, reseed),
		cmocka_unit_test_setup(test_drop_field_data, reseed),
		cmocka_unit_test_setup(test_drop_field_ack_probe, reseed),
		cmocka_unit_test_setup(test_bit_flips, reseed),
		cmocka_unit_test_setup(test_trim, reseed),
		cmocka_unit_test_setup(test_truncation, reseed),
		cmocka_unit_test_setup(test_garbage, reseed),
		cmocka_unit_test_setup(test_is_ctrl, reseed),
		cmocka_unit_test_setup(test_names, reseed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

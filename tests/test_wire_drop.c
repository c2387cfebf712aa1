/* Wire format v2 against hostile input: every drop reason provoked on its
 * own, every single-bit flip detected, trimming, truncation at every length
 * and random garbage.
 * Seed: MRC_TEST_SEED=<n> replays a run; it is printed with every failure. */
#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tests/support/seeded.h"
#include "tests/support/wire_case.h"

/* ---- tests ---------------------------------------------------------------- */

static void test_drop_prefix(void **state)
{
	(void)state;
	uint8_t buf[MRC_HDR_MAX + 16];
	struct mrc_probe_hdr p = { .op = MRC_OP_PROBE, .seq = 7 };
	size_t n = mrce_wire_put_probe(buf, &p);

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
		CHECK(known == (strcmp(mrce_op_name((uint8_t)op), "UNKNOWN") != 0),
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
	n = mrce_wire_put_ack(buf, &a);
	buf[40] ^= 0x80;
	expect_drop(buf, n, MRC_DROP_HCRC, "ack sack byte");
	struct mrc_probe_hdr p;
	rnd_probe_hdr(&p);
	n = mrce_wire_put_probe(buf, &p);
	buf[33] ^= 0x02;
	expect_drop(buf, n, MRC_DROP_HCRC, "probe token byte");
	n = mrce_wire_put_probe(buf, &p);
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
	n = mrce_wire_put_ack(buf, &a);
	expect_drop(buf, n + 1, MRC_DROP_LENGTH, "ack too long");
	expect_drop(buf, n - 1, MRC_DROP_TRUNCATED, "ack too short");
	struct mrc_probe_hdr p = { .op = MRC_OP_PROBE };
	n = mrce_wire_put_probe(buf, &p);
	expect_drop(buf, n + 1, MRC_DROP_LENGTH, "probe too long");
	expect_drop(buf, n - 1, MRC_DROP_TRUNCATED, "probe too short");

	/* trimmed packets must be exactly the header */
	h.plen = 16;
	h.mlen = 16;
	n = build_data(buf, &h, payload);
	assert_int_equal(mrce_wire_trim(buf, n), MRC_DATA_HDR_LEN);
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
		{ "flag 0x100", MRC_OP_WRITE, FL | 0x100, 10, 10, 0, 0, 0 },
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
	mrce_wire_put_ack(buf, &a);
	expect_ok(buf, MRC_ACK_HDR_LEN, &v, "ack ok");
	for (int bit = 1; bit < 16; bit++) {
		a.flags = (uint16_t)(MRC_AF_ECN | (1u << bit));
		mrce_wire_put_ack(buf, &a);
		expect_drop(buf, MRC_ACK_HDR_LEN, MRC_DROP_FIELD, "ack flag");
	}
	a.flags = 0;
	a.nack = MRC_NACK_MAX + 1;
	mrce_wire_put_ack(buf, &a);
	expect_drop(buf, MRC_ACK_HDR_LEN, MRC_DROP_FIELD, "nack > max");
	a.nack = 0xff;
	mrce_wire_put_ack(buf, &a);
	expect_drop(buf, MRC_ACK_HDR_LEN, MRC_DROP_FIELD, "nack 255");
	a.nack = MRC_NACK_NONE;
	mrce_wire_put_ack(buf, &a);
	buf[15] = 1;
	rehcrc(buf, MRC_ACK_HDR_LEN);
	expect_drop(buf, MRC_ACK_HDR_LEN, MRC_DROP_FIELD, "ack reserved byte");
	a.sack_base = a.cum_psn - 1;
	mrce_wire_put_ack(buf, &a);
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
		mrce_wire_put_probe(buf, &p);
		buf[pc[i].at] = pc[i].val;
		rehcrc(buf, MRC_PROBE_HDR_LEN);
		expect_drop(buf, MRC_PROBE_HDR_LEN, MRC_DROP_FIELD, pc[i].what);
	}
}

/* Small packets of every opcode: every single-bit flip is refused. */
static void flip_all(uint8_t *buf, size_t n, const char *what)
{
	struct mrc_pkt_view v;
	enum mrce_wire_drop why;
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
			flip_all(buf, n, mrce_op_name(h.op));
			if (h.plen) {
				n = mrce_wire_trim(buf, n);
				flip_all(buf, n, "trimmed");
			}
		}
	}
	struct mrc_ack_hdr a;
	rnd_ack_hdr(&a);
	flip_all(buf, mrce_wire_put_ack(buf, &a), "ACK");
	struct mrc_probe_hdr p;
	rnd_probe_hdr(&p);
	p.op = MRC_OP_PROBE;
	flip_all(buf, mrce_wire_put_probe(buf, &p), "PROBE");
	p.op = MRC_OP_PROBE_REPLY;
	flip_all(buf, mrce_wire_put_probe(buf, &p), "PROBE_REPLY");
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
		size_t t = mrce_wire_trim(buf, n);
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
		mrce_wire_put_data(re, &v.u.data);
		CHECK(!memcmp(re, buf, MRC_DATA_HDR_LEN), "it %d: re-encode", it);
		/* trimming again is a no-op */
		CHECK(mrce_wire_trim(buf, t) == t, "it %d: re-trim", it);
	}
	/* non-data packets and unknown versions are never trimmed */
	struct mrc_ack_hdr a = { 0 };
	size_t n = mrce_wire_put_ack(buf, &a);
	memcpy(orig, buf, n);
	assert_int_equal(mrce_wire_trim(buf, n), n);
	assert_memory_equal(buf, orig, n);
	struct mrc_data_hdr h = { .op = MRC_OP_WRITE, .plen = 8, .mlen = 8 };
	n = build_data(buf, &h, payload);
	buf[0] = MRC_WIRE_VERSION + 1;
	memcpy(orig, buf, n);
	assert_int_equal(mrce_wire_trim(buf, n), n);
	assert_memory_equal(buf, orig, n);
	assert_int_equal(mrce_wire_trim(buf, 2), 2);
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
			n = hl = mrce_wire_put_ack(buf, &a);
		} else {
			struct mrc_probe_hdr p;
			rnd_probe_hdr(&p);
			p.op = k == NDATA_OPS + 1 ? MRC_OP_PROBE : MRC_OP_PROBE_REPLY;
			n = hl = mrce_wire_put_probe(buf, &p);
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
		enum mrce_wire_drop why;
		if (decode_copy(buf, n, &v, &why) != 0) {
			CHECK(why > MRC_DROP_NONE && why < MRC_DROP__COUNT,
			      "why out of range");
			continue;
		}
		size_t m;
		if (mrc_op_is_data(v.op)) {
			m = mrce_wire_put_data(re, &v.u.data);
		} else if (v.op == MRC_OP_ACK) {
			m = mrce_wire_put_ack(re, &v.u.ack);
		} else {
			m = mrce_wire_put_probe(re, &v.u.probe);
		}
		CHECK(m <= n && !memcmp(re, buf, m), "it %d: accepted garbage "
		      "does not re-encode", it);
	}
}

int main(void)
{
	seed_init("test_wire_drop");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_drop_prefix, reseed),
		cmocka_unit_test_setup(test_drop_hcrc_pcrc, reseed),
		cmocka_unit_test_setup(test_drop_length, reseed),
		cmocka_unit_test_setup(test_drop_field_data, reseed),
		cmocka_unit_test_setup(test_drop_field_ack_probe, reseed),
		cmocka_unit_test_setup(test_bit_flips, reseed),
		cmocka_unit_test_setup(test_trim, reseed),
		cmocka_unit_test_setup(test_truncation, reseed),
		cmocka_unit_test_setup(test_garbage, reseed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

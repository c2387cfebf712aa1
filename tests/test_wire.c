/* Wire format v2: the byte layout, round trips of every opcode with random
 * fields, PSN wrap, RNR timers, the control-opcode test and the names
 * (hostile input: test_wire_drop.c).
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
#include "transport/engine.h"

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
	assert_int_equal(mrce_wire_put_data(b, &d), 68);
	assert_int_equal(b[0], 2);
	assert_int_equal(b[1], MRC_OP_WRITE_IMM);
	assert_int_equal(b[2], 0x00);
	assert_int_equal(b[3], 0x12);
	for (int i = 4; i < 64; i++)
		CHECK(b[i] == i - 1, "data byte %d = %u", i, b[i]);
	uint32_t c = htobe32(mrce_crc32c(0, b, 64));
	assert_memory_equal(b + 64, &c, 4);

	struct mrc_ack_hdr a = {
		.flags = 0x0102, .dqpn = 0x03040506, .cum_psn = 0x0708090a,
		.ev = 0x0b0c, .nack = 0x0d, .trig_psn = 0x10111213,
		.sack_base = 0x14151617, .ts_echo = 0x18191a1b1c1d1e1full,
		.token = 0x2021222324252627ull,
	};
	for (int i = 0; i < 32; i++)
		a.sack[i] = (uint8_t)(0x28 + i);
	assert_int_equal(mrce_wire_put_ack(b, &a), 76);
	assert_int_equal(b[0], 2);
	assert_int_equal(b[1], MRC_OP_ACK);
	assert_int_equal(b[15], 0);
	for (int i = 2; i < 72; i++)
		if (i != 15)
			CHECK(b[i] == (i < 15 ? i - 1 : i), "ack byte %d = %u",
			      i, b[i]);
	c = htobe32(mrce_crc32c(0, b, 72));
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
	assert_int_equal(mrce_wire_put_probe(b, &p), 44);
	assert_memory_equal(b, want, 40);
	c = htobe32(mrce_crc32c(0, b, 40));
	assert_memory_equal(b + 40, &c, 4);

	uint8_t pl[3] = { 1, 2, 3 };
	mrce_wire_put_trailer(b, pl, 3);
	c = htobe32(mrce_crc32c(0, pl, 3));
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
	uint32_t c = htobe32(mrce_crc32c(0, b, 48));
	memcpy(b + 48, &c, 4);
	c = htobe32(mrce_crc32c(0, b + 52, 8));
	memcpy(b + 60, &c, 4);
	expect_drop(b, sizeof b, MRC_DROP_VERSION, "v1 data packet");
	uint8_t ack[68] = { 1, MRC_OP_ACK };
	c = htobe32(mrce_crc32c(0, ack, 64));
	memcpy(ack + 64, &c, 4);
	expect_drop(ack, sizeof ack, MRC_DROP_VERSION, "v1 ACK");
	assert_int_equal(mrce_wire_trim(b, sizeof b), sizeof b);
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
		expect_ok(buf, n, &v, mrce_op_name(op));
		CHECK(v.op == op && !v.trimmed && data_eq(&v.u.data, &h),
		      "it %d %s: fields differ", it, mrce_op_name(op));
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
		size_t n = mrce_wire_put_ack(buf, &a);
		assert_int_equal(n, MRC_ACK_HDR_LEN);
		expect_ok(buf, n, &v, "ACK");
		CHECK(v.op == MRC_OP_ACK && !v.trimmed && !v.payload &&
		      ack_eq(&v.u.ack, &a), "it %d: ACK fields differ", it);
		mrce_wire_put_ack(buf2, &v.u.ack);
		CHECK(!memcmp(buf, buf2, n), "it %d: ACK re-encode differs", it);

		struct mrc_probe_hdr p;
		rnd_probe_hdr(&p);
		n = mrce_wire_put_probe(buf, &p);
		assert_int_equal(n, MRC_PROBE_HDR_LEN);
		expect_ok(buf, n, &v, "PROBE");
		CHECK(v.op == p.op && !v.trimmed && !v.payload &&
		      probe_eq(&v.u.probe, &p), "it %d: PROBE fields differ", it);
		mrce_wire_put_probe(buf2, &v.u.probe);
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
	mrce_wire_put_ack(buf, &a);
	expect_ok(buf, MRC_ACK_HDR_LEN, &v, "sack_base after wrap");
	a.cum_psn = 5;
	a.sack_base = 0xfffffff0u;
	mrce_wire_put_ack(buf, &a);
	expect_drop(buf, MRC_ACK_HDR_LEN, MRC_DROP_FIELD, "sack_base before wrap");
	a.sack_base = 5;
	mrce_wire_put_ack(buf, &a);
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
	assert_int_equal(mrce_wire_rnr_ns(0), 0);
	assert_int_equal(mrce_wire_rnr_ns(1), 10000);
	assert_int_equal(mrce_wire_rnr_ns(MRC_RNR_TIMER_MAX), 10000ull << 16);
	assert_int_equal(mrce_wire_rnr_ns(MRC_RNR_TIMER_MAX + 1), 0);
	assert_int_equal(mrce_wire_rnr_code(1), 1);
	assert_int_equal(mrce_wire_rnr_code(100000), 5);   /* 100 us -> 160 us */
	assert_int_equal(mrce_wire_rnr_code(~0ull), MRC_RNR_TIMER_MAX);
	for (uint8_t c = 1; c <= MRC_RNR_TIMER_MAX; c++) {
		struct mrc_ack_hdr a = { .nack = MRC_NACK_RNR, .rnr_timer = c, .cum_psn = 7,
					 .sack_base = 7 };
		mrce_wire_put_ack(buf, &a);
		assert_int_equal(buf[15], c);
		expect_ok(buf, MRC_ACK_HDR_LEN, &v, "RNR NACK with a timer");
		assert_int_equal(v.u.ack.rnr_timer, c);
	}
	struct mrc_ack_hdr a = { .nack = MRC_NACK_RNR, .rnr_timer = MRC_RNR_TIMER_MAX + 1 };
	mrce_wire_put_ack(buf, &a);
	expect_drop(buf, MRC_ACK_HDR_LEN, MRC_DROP_FIELD, "RNR timer code 18");
	/* Only RNR NACKs carry it: the encoder writes 0 for the others and
	 * the decoder refuses a non-zero byte 15 on them. */
	a.nack = MRC_NACK_NONE;
	a.rnr_timer = 3;
	mrce_wire_put_ack(buf, &a);
	assert_int_equal(buf[15], 0);
	buf[15] = 3;
	rehcrc(buf, MRC_ACK_HDR_LEN);
	expect_drop(buf, MRC_ACK_HDR_LEN, MRC_DROP_FIELD, "byte 15 set on a plain ACK");
}

/* Whether a datagram is daemon control traffic: decided by its opcode
 * alone, never by reading past len; every packet the encoders make is
 * engine traffic. */
static int is_ctrl_copy(const uint8_t *buf, size_t len)
{
	uint8_t *c = malloc(len ? len : 1);   /* exact size: ASan sees overreads */
	assert_non_null(c);
	memcpy(c, buf, len);
	int r = mrce_wire_is_ctrl(c, len);
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
		size_t n = mrce_wire_put_data(buf, &h);
		CHECK(!is_ctrl_copy(buf, n), "it %d: data packet taken as control", it);
		struct mrc_ack_hdr a;
		rnd_ack_hdr(&a);
		n = mrce_wire_put_ack(buf, &a);
		CHECK(!is_ctrl_copy(buf, n), "it %d: ACK taken as control", it);
		struct mrc_probe_hdr p;
		rnd_probe_hdr(&p);
		n = mrce_wire_put_probe(buf, &p);
		CHECK(!is_ctrl_copy(buf, n), "it %d: probe taken as control", it);
	}
}

/* Single packets for tools (mrce_pkt_build / mrce_pkt_parse): byte for
 * byte what the wire encoders make of the same fields (the packets
 * tools/fabric/probe and tools/forge sent when they laid out headers
 * themselves), accepted by the engine's decoder, and parsed back; raw
 * hides the opcode from the decoder until parse undoes it. */
static void test_pkt_build(void **state)
{
	(void)state;
	uint8_t b[MRCE_PKT_MAX(MRC_MAX_PAYLOAD)], w[sizeof(b)], pay[MRC_MAX_PAYLOAD];
	for (int it = 0; it < 200; it++) {
		uint16_t plen = (uint16_t)(rnd() % 2 ? rnd() % (MRC_MAX_PAYLOAD + 1) : 0);
		for (size_t i = 0; i < plen; i++)
			pay[i] = (uint8_t)rnd();
		struct mrce_pkt_desc d = { .kind = MRCE_PKT_WRITE + (uint8_t)(rnd() % 4),
			.ev = (uint16_t)rnd(), .plen = plen, .dqpn = (uint32_t)rnd(),
			.psn = (uint32_t)rnd(), .msn = (uint32_t)rnd(), .rkey = (uint32_t)rnd(),
			.token = rnd(), .payload = pay };
		if (d.kind == MRCE_PKT_WRITE_IMM)
			d.imm = (uint32_t)rnd();
		size_t n = mrce_pkt_build(b, &d), wn;
		if (d.kind == MRCE_PKT_ACK || d.kind == MRCE_PKT_NOQP) {
			struct mrc_ack_hdr h = { .nack = d.kind == MRCE_PKT_NOQP ? MRC_NACK_NOQP : 0,
				.dqpn = d.dqpn, .cum_psn = d.psn, .trig_psn = d.psn,
				.sack_base = d.psn, .ev = d.ev, .token = d.token };
			wn = mrce_wire_put_ack(w, &h);
		} else {
			struct mrc_data_hdr h = { .op = d.kind == MRCE_PKT_WRITE ? MRC_OP_WRITE :
				MRC_OP_WRITE_IMM, .flags = MRC_F_FIRST | MRC_F_LAST, .dqpn = d.dqpn,
				.psn = d.psn, .ev = d.ev, .plen = plen, .msn = d.msn, .rkey = d.rkey,
				.mlen = plen, .imm = d.imm, .token = d.token };
			wn = mrce_wire_put_data(w, &h);
			if (plen) {
				memcpy(w + wn, pay, plen);
				mrce_wire_put_trailer(w + wn + plen, pay, plen);
				wn += plen + MRC_TRAILER_LEN;
			}
		}
		CHECK(n == wn && !memcmp(b, w, n), "kind %u plen %u: %zu bytes, encoders %zu",
		      d.kind, plen, n, wn);
		struct mrc_pkt_view v;
		enum mrce_wire_drop why;
		CHECK(mrce_wire_decode(b, n, &v, &why) == 0, "kind %u refused: %s", d.kind,
		      mrce_wire_drop_name(why));
		struct mrce_pkt_info pi;
		CHECK(mrce_pkt_parse(b, n, 0, &pi) == 0 && pi.kind == d.kind && pi.ev == d.ev &&
		      pi.dqpn == d.dqpn && !pi.trimmed, "kind %u: parse disagrees", d.kind);
	}
	/* raw: an opcode nobody takes, then parsed as the WRITE it was. */
	memset(pay, 0xa5, 200);
	struct mrce_pkt_desc d = { .kind = MRCE_PKT_WRITE, .raw = 1, .ev = 9, .plen = 200,
				   .dqpn = 0x1234, .payload = pay };
	size_t n = mrce_pkt_build(b, &d);
	struct mrc_pkt_view v;
	enum mrce_wire_drop why;
	CHECK(mrce_wire_decode(b, n, &v, &why) == -EBADMSG && why == MRC_DROP_OPCODE,
	      "a raw packet decoded");
	struct mrce_pkt_info pi;
	CHECK(mrce_pkt_parse(b, n, 1, &pi) == 0 && pi.kind == MRCE_PKT_WRITE && pi.plen == 200 &&
	      pi.ev == 9, "raw WRITE not parsed back");
	/* Trimmed by a switch: parsed as trimmed; a bad kind builds nothing. */
	d.raw = 0;
	n = mrce_wire_trim(b, mrce_pkt_build(b, &d));
	CHECK(mrce_pkt_parse(b, n, 0, &pi) == 0 && pi.trimmed, "trimmed WRITE not seen trimmed");
	d.kind = 0;
	CHECK(mrce_pkt_build(b, &d) == 0, "kind 0 built a packet");
	b[1] = 0x77;
	CHECK(mrce_pkt_parse(b, n, 0, &pi) == -EBADMSG, "a bad opcode parsed");
}

static void test_names(void **state)
{
	(void)state;
	for (int i = 0; i < MRC_DROP__COUNT; i++) {
		const char *s = mrce_wire_drop_name((enum mrce_wire_drop)i);
		assert_non_null(s);
		assert_true(s[0] != '\0');
		for (const char *c = s; *c; c++)
			CHECK(islower((unsigned char)*c) || *c == '_',
			      "drop name '%s' is not a counter name", s);
		for (int j = 0; j < i; j++)
			CHECK(strcmp(s, mrce_wire_drop_name((enum mrce_wire_drop)j)),
			      "drop names %d and %d equal", i, j);
	}
	assert_string_equal(mrce_wire_drop_name(MRC_DROP_TRUNCATED), "truncated");
	assert_string_equal(mrce_wire_drop_name(MRC_DROP_HCRC), "bad_hcrc");
	assert_non_null(mrce_wire_drop_name(MRC_DROP__COUNT));
	assert_string_equal(mrce_op_name(MRC_OP_WRITE), "WRITE");
	assert_string_equal(mrce_op_name(MRC_OP_ACK), "ACK");
	assert_string_equal(mrce_op_name(MRC_OP_PROBE_REPLY), "PROBE_REPLY");
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
		cmocka_unit_test_setup(test_is_ctrl, reseed),
		cmocka_unit_test_setup(test_pkt_build, reseed),
		cmocka_unit_test_setup(test_names, reseed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Shared pieces of the wire-format tests (test_wire.c: layout and round
 * trips; test_wire_drop.c: hostile input): exact-size decoding for ASan,
 * expected drops, and random headers that satisfy every field rule.
 * Include after <cmocka.h> and tests/support/seeded.h, once per binary. */
#ifndef MRC_TESTS_WIRE_CASE_H
#define MRC_TESTS_WIRE_CASE_H

#include <endian.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "transport/crc32c.h"
#include "transport/wire.h"

#define PKT_MAX (MRC_DATA_HDR_LEN + MRC_MAX_PAYLOAD + MRC_TRAILER_LEN)


static inline uint64_t below(uint64_t n) { return n ? rnd() % n : 0; }


static const uint8_t data_ops[] = {
	MRC_OP_WRITE, MRC_OP_WRITE_IMM, MRC_OP_SEND, MRC_OP_SEND_IMM,
	MRC_OP_ATOMIC_ADD,
};
#define NDATA_OPS (sizeof data_ops / sizeof data_ops[0])

/* ---- helpers -------------------------------------------------------------- */

/* Decodes a private, exactly-sized heap copy so that ASan catches any read
 * past buf[len). */
static inline int decode_copy(const uint8_t *buf, size_t len, struct mrc_pkt_view *v,
		       enum mrce_wire_drop *why)
{
	uint8_t *c = malloc(len ? len : 1);
	assert_non_null(c);
	memcpy(c, buf, len);
	*why = MRC_DROP__COUNT;
	int rc = mrce_wire_decode(c, len, v, why);
	/* The view's payload must not outlive c: callers only compare it. */
	if (rc == 0 && v->payload)
		v->payload = buf + (v->payload - c);
	free(c);
	return rc;
}

static inline void expect_drop(const uint8_t *buf, size_t len, enum mrce_wire_drop want,
			const char *what)
{
	struct mrc_pkt_view v;
	enum mrce_wire_drop why;
	int rc = decode_copy(buf, len, &v, &why);
	CHECK(rc == -EBADMSG && why == want, "%s: rc=%d why=%s, want %s", what,
	      rc, rc ? mrce_wire_drop_name(why) : "accepted",
	      mrce_wire_drop_name(want));
}

static inline void expect_ok(const uint8_t *buf, size_t len, struct mrc_pkt_view *v,
		      const char *what)
{
	enum mrce_wire_drop why;
	int rc = decode_copy(buf, len, v, &why);
	CHECK(rc == 0 && why == MRC_DROP_NONE, "%s: rc=%d why=%s", what, rc,
	      mrce_wire_drop_name(why));
}

/* Recomputes hcrc after a test edited header bytes, with the same rule as
 * the wire (TRIMMED bit of the flags as 0), written out independently. */
static inline void rehcrc(uint8_t *buf, size_t hl)
{
	uint8_t tmp[MRC_HDR_MAX];
	memcpy(tmp, buf, hl - 4);
	tmp[3] &= (uint8_t)~MRC_F_TRIMMED;
	uint32_t c = htobe32(mrce__crc32c_sw(0, tmp, hl - 4));
	memcpy(buf + hl - 4, &c, 4);
}

static inline size_t build_data(uint8_t *buf, const struct mrc_data_hdr *h,
			 const uint8_t *payload)
{
	size_t n = mrce_wire_put_data(buf, h);
	assert_int_equal(n, MRC_DATA_HDR_LEN);
	if (h->plen) {
		memcpy(buf + n, payload, h->plen);
		mrce_wire_put_trailer(buf + n + h->plen, payload, h->plen);
		n += h->plen + MRC_TRAILER_LEN;
	}
	return n;
}

static inline uint16_t rnd_plen(uint32_t cap)
{
	uint32_t m = cap < MRC_MAX_PAYLOAD ? cap : MRC_MAX_PAYLOAD;
	switch (below(4)) {
	case 0: return 0;
	case 1: return (uint16_t)m;
	case 2: return (uint16_t)below((uint64_t)(m < 64 ? m : 64) + 1);
	default: return (uint16_t)below((uint64_t)m + 1);
	}
}

static inline uint32_t rnd_mlen(void)
{
	switch (below(4)) {
	case 0: return 0;
	case 1: return (uint32_t)below(64) + 1;
	case 2: return (uint32_t)below(100000) + 1;
	default: return (uint32_t)rnd();
	}
}

/* A random header that satisfies every field rule for op. */
static inline void rnd_data_hdr(struct mrc_data_hdr *h, uint8_t op)
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

static inline void rnd_ack_hdr(struct mrc_ack_hdr *a)
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

static inline void rnd_probe_hdr(struct mrc_probe_hdr *p)
{
	memset(p, 0, sizeof *p);
	p->op = below(2) ? MRC_OP_PROBE : MRC_OP_PROBE_REPLY;
	p->ev = (uint16_t)rnd();
	p->seq = (uint32_t)rnd();
	p->ts = rnd();
	p->ts_echo = rnd();
	p->token = rnd();
}

static inline void fill(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)rnd();
}

static inline int data_eq(const struct mrc_data_hdr *a, const struct mrc_data_hdr *b)
{
	return a->op == b->op && a->flags == b->flags && a->dqpn == b->dqpn &&
	       a->psn == b->psn && a->ev == b->ev && a->plen == b->plen &&
	       a->msn == b->msn && a->rkey == b->rkey && a->off == b->off &&
	       a->ts == b->ts && a->mlen == b->mlen && a->imm == b->imm &&
	       a->token == b->token && a->pb_cum_psn == b->pb_cum_psn &&
	       a->pb_sack == b->pb_sack && a->pb_hold == b->pb_hold;
}

static inline int ack_eq(const struct mrc_ack_hdr *a, const struct mrc_ack_hdr *b)
{
	return a->flags == b->flags && a->nack == b->nack && a->dqpn == b->dqpn &&
	       a->cum_psn == b->cum_psn && a->trig_psn == b->trig_psn &&
	       a->sack_base == b->sack_base && a->ev == b->ev &&
	       a->ts_echo == b->ts_echo && a->token == b->token &&
	       !memcmp(a->sack, b->sack, sizeof a->sack);
}

static inline int probe_eq(const struct mrc_probe_hdr *a, const struct mrc_probe_hdr *b)
{
	return a->op == b->op && a->ev == b->ev && a->seq == b->seq &&
	       a->ts == b->ts && a->ts_echo == b->ts_echo && a->token == b->token;
}

#endif

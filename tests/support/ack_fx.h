/* The fixture of the ACK tests (test_ack_piggyback, test_ack_xqp): two
 * engines on the in-memory channel, 64-byte WRITE_IMMs from node 0 on qa
 * and from node 1 on q1 (qb for one QP pair; a second pair's QP for
 * cross-QP ACKs), and the hand-driven steps both take (packets out of an
 * engine, into the other, decoded).  Include after <cmocka.h> and
 * etest.h. */
#ifndef MRC_TESTS_ACK_FX_H
#define MRC_TESTS_ACK_FX_H

#include <stdint.h>
#include <string.h>

#include "tests/support/chan.h"
#include "tests/support/pingpong.h"
#include "tests/support/seeded.h"

struct pkt {
	size_t len;
	uint16_t ev;
	uint8_t b[MRCE_TX_PKT_MAX];
};

struct ack_fx {
	struct etest t;
	uint32_t q1;                   /* node 1's sending QP: t.qb or qc */
	uint32_t qc, qd;               /* test_ack_xqp's second pair (1 -> 0) */
	uint32_t k0_remote, k1_local;  /* node 0 REMOTE_WRITE, node 1 LOCAL_READ */
	uint8_t mem0[4096], mem1[4096];
	struct pp pp;                  /* packets handed over */
};

/* The channel as cfg says; pairs 2: a second QP pair, node 1's qc to node
 * 0's qd, carries node 1's messages.  0 or -errno. */
static inline int ack_fx_init(struct ack_fx *f, const struct chan_cfg *cfg, int pairs)
{
	memset(f, 0, sizeof *f);
	struct mrce_qp_attr attr = { .pd = ETEST_PD };
	int rc = etest_init(&f->t, cfg, 1 << 16, 1 << 16, 0);
	f->q1 = f->t.qb;
	if (!rc && pairs == 2) {
		rc = chan_qp_pair(f->t.ch, 1, 0, &attr, &attr, &f->qc, &f->qd);
		f->q1 = f->qc;
	}
	if (!rc)
		rc = mrce_mr_add(f->t.ch->node[0].e, ETEST_PD, f->mem0, sizeof f->mem0,
				 MRCE_ACCESS_REMOTE_WRITE, &f->k0_remote);
	if (!rc)
		rc = mrce_mr_add(f->t.ch->node[1].e, ETEST_PD, f->mem1, sizeof f->mem1,
				 MRCE_ACCESS_LOCAL_READ, &f->k1_local);
	return rc;
}

static inline struct mrce *E(struct ack_fx *f, int n) { return f->t.ch->node[n].e; }
static inline uint32_t P(struct ack_fx *f, int n) { return f->t.ch->node[n].peer[!n]; }

/* Node n posts a 64-byte WRITE_IMM to the other node (imm = wr_id). */
static inline void post_msg(void *arg, int n, uint64_t wr_id)
{
	struct ack_fx *f = arg;
	int rc = n == 0 ?
		etest_post(f->t.ch, 0, f->t.qa, MRC_SQE_WRITE_IMM, wr_id, f->t.lkey, 0, 64,
			   f->t.rkey, 0, (uint32_t)wr_id, 0) :
		etest_post(f->t.ch, 1, f->q1, MRC_SQE_WRITE_IMM, wr_id, f->k1_local, 0, 64,
			   f->k0_remote, 0, (uint32_t)wr_id, 0);
	CHECK(rc == 0, "post on node %d: %d", n, rc);
}

/* Up to max (<= 8) packets node n sends now. */
static inline int take(struct ack_fx *f, int n, struct pkt *out, int max)
{
	struct mrce_tx_pkt t[8];
	int k = mrce_tx(E(f, n), f->t.ch->now, t, max < 8 ? max : 8);
	for (int i = 0; i < k; i++) {
		out[i].len = mrce_tx_pkt_copy(&t[i], out[i].b);
		out[i].ev = t[i].ev;
	}
	return k;
}

static inline int rx(struct ack_fx *f, int n, const struct pkt *p)
{
	return mrce_rx(E(f, n), f->t.ch->now, P(f, n), p->b, p->len, 0);
}

static inline struct mrc_pkt_view view(const struct pkt *p)
{
	struct mrc_pkt_view v;
	enum mrce_wire_drop why;
	CHECK(mrce_wire_decode(p->b, p->len, &v, &why) == 0, "own packet: %s",
	      mrce_wire_drop_name(why));
	return v;
}

static inline struct mrce_qp_info qinfo(struct ack_fx *f, int n, uint32_t qpn)
{
	struct mrce_qp_info qi;
	CHECK(mrce_qp_info(E(f, n), qpn, &qi) == 0, "qp_info");
	return qi;
}

static inline struct mrce_stats stats(struct ack_fx *f, int n)
{
	struct mrce_stats s;
	mrce_stats(E(f, n), &s);
	return s;
}

#endif

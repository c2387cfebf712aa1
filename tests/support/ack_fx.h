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

static inline int ack_fx_pp_done(struct chan *ch, void *arg)
{
	struct ack_fx *f = arg;
	return pp_done(ch, &f->pp, f->t.qa, f->q1);
}

/* A ping-pong of rounds rounds (node 0 on qa, node 1 on q1), counting
 * the data packets that carry flag; then the last held ACK leaves. */
static inline void ack_fx_pingpong(struct ack_fx *f, uint64_t rounds, uint16_t flag)
{
	f->pp.post = post_msg;
	f->pp.arg = f;
	f->pp.flag = flag;
	pp_watch(f->t.ch, &f->pp, 1);
	f->pp.want_rounds = rounds;
	post_msg(f, 0, 1);
	int rc = chan_run(f->t.ch, ack_fx_pp_done, f, 10000000000ull, ETEST_MAX_STEPS);
	CHECK(rc == 0, "ping-pong did not finish: %d (rounds %llu)", rc,
	      (unsigned long long)f->pp.rounds);
	chan_run(f->t.ch, NULL, NULL, 1000000, ETEST_MAX_STEPS);
}

/* After a ping-pong of pp.want_rounds rounds, engine stats s0 and s1:
 * the ACKs rode on data (tx of them sent, rx taken, as the engines count
 * them).  The very first request is answered by a QP that had never sent
 * (its ACK is not held), and the last reply has no request after it: at
 * most those two go as packets, the last at its deadline. */
static inline void ack_fx_check_pingpong(struct ack_fx *f, const struct mrce_stats *s0,
					 const struct mrce_stats *s1, uint64_t tx, uint64_t rx)
{
	const struct pp *q = &f->pp;
	CHECK(q->acks[0] + q->acks[1] <= 2, "ACK packets in a ping-pong: %llu + %llu",
	      (unsigned long long)q->acks[0], (unsigned long long)q->acks[1]);
	CHECK(q->flagged[0] + q->flagged[1] >= 2 * q->want_rounds - 3,
	      "data packets carrying an ACK: %llu + %llu of %llu",
	      (unsigned long long)q->flagged[0], (unsigned long long)q->flagged[1],
	      (unsigned long long)(q->data[0] + q->data[1]));
	CHECK(tx == q->flagged[0] + q->flagged[1], "ACKs sent on data: %llu", (unsigned long long)tx);
	CHECK(rx == tx, "ACKs taken from data: %llu of %llu", (unsigned long long)rx,
	      (unsigned long long)tx);
	CHECK(s0->tx_retx + s1->tx_retx == 0 && s0->rto_fires + s1->rto_fires == 0,
	      "no retransmission on a clean channel");
	CHECK(s0->ack_delay_expired == 1, "last ACK held then sent: %llu",
	      (unsigned long long)s0->ack_delay_expired);
	CHECK(!mrce_tx_pending(E(f, 0)) && !mrce_tx_pending(E(f, 1)), "idle at the end");
}

#endif

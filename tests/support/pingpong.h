/* The ping-pong of the ACK tests (test_ack_piggyback, test_ack_xqp) on the
 * in-memory channel: each message received is answered at once, node 0
 * starts the next round when the answer lands, and the packets handed
 * over are counted by kind and source node.  Include after etest.h. */
#ifndef MRC_TESTS_PINGPONG_H
#define MRC_TESTS_PINGPONG_H

#include <stdint.h>

#include "tests/support/chan.h"

struct pp {
	/* node n posts message id (a 64-byte WRITE_IMM, imm = id) */
	void (*post)(void *arg, int n, uint64_t id);
	void *arg;
	uint16_t flag;                 /* the data flag counted in flagged[] */
	uint64_t acks[2], data[2], flagged[2];
	uint64_t rounds, want_rounds;
	int posted;                    /* answered since the last pump */
};

static inline void pp_count_tx(struct chan *ch, uint32_t src, uint32_t dst, uint16_t ev,
			       const uint8_t *p, size_t len, void *arg)
{
	(void)ch; (void)dst; (void)ev; (void)len;
	struct pp *q = arg;
	if (p[1] == MRC_OP_ACK)
		q->acks[src]++;
	else if (mrc_op_is_data(p[1])) {
		q->data[src]++;
		if (((uint16_t)p[2] << 8 | p[3]) & q->flag)
			q->flagged[src]++;
	}
}

static inline void pp_answer(struct chan *ch, uint32_t node, const struct mrce_wc *wc, void *arg)
{
	struct pp *q = arg;
	(void)ch;
	if (wc->op != MRCE_WC_RECV_WRITE_IMM)
		return;
	if (node == 0 && ++q->rounds >= q->want_rounds)
		return;
	q->post(q->arg, (int)node, wc->imm + 1);
	q->posted = 1;
}

/* The channel polls completions after it transmits; the daemon core runs
 * them first, so that an answer leaves in the same turn as the ACKs
 * (daemon/core/tx.c, mrcd_flush).  Do as it does; then 1 when every
 * round was answered and completions of the WRITE_IMMs on qp0 of node 0
 * and qp1 of node 1 (UINT32_MAX: any) number want_rounds each. */
static inline int pp_done(struct chan *ch, struct pp *q, uint32_t qp0, uint32_t qp1)
{
	while (q->posted) {
		q->posted = 0;
		chan_pump(ch);
	}
	return q->rounds >= q->want_rounds &&
	       chan_count_wc(ch, 0, qp0, MRCE_WC_WRITE_IMM) >= q->want_rounds &&
	       chan_count_wc(ch, 1, qp1, MRCE_WC_WRITE_IMM) >= q->want_rounds;
}

/* Hooks the counting (and, with answer, the answering) to the channel. */
static inline void pp_watch(struct chan *ch, struct pp *q, int answer)
{
	ch->cfg.keep_logs = 1;
	ch->on_tx = pp_count_tx;
	ch->on_wc = answer ? pp_answer : NULL;
	ch->hook_arg = q;
}

#endif

/* The window pool: a QP's window state (sender slots; effect records and
 * receive completions) is a block of a per-engine pool, held only while
 * the QP needs it.  In an all-to-all or a training step most QPs are idle
 * most of the time, and a block per QP for its life was most of mrcsim's
 * memory (docs/sim.md, "Window state on demand").  Each pool is one zmem
 * mapping, set up at mrce_create (its untouched pages cost nothing), and a
 * block given back is taken again before an untouched one, so the pages
 * resident are those of the QPs busy at once.  A block's old contents are
 * never read: the sender writes a slot at its PSN's first send and reads
 * only PSNs in flight, or (a late ACK's spurious check, ack_rx.c) PSNs
 * sent since the QP took the block (slots_from); the receiver writes an
 * effect record for every PSN it places and reads only placed ones;
 * completions are written before they are polled.  Taking and giving back is a stack pop and push: no
 * allocation on the packet path. */
#include <errno.h>

#include "transport/wpool.h"
#include "transport/zmem.h"

static size_t send_bytes(const struct mrce_cfg *c)
{
	return (size_t)c->window * sizeof(struct mrce__slot);
}

static size_t recv_bytes(const struct mrce_cfg *c)
{
	return (size_t)c->window * (sizeof(struct mrce__rslot) + sizeof(struct mrce__rcqe));
}

size_t mrce__wpool_pair_bytes(const struct mrce_cfg *c)
{
	return send_bytes(c) + recv_bytes(c);
}

int mrce__wpool_init(struct mrce *e)
{
	const struct mrce_cfg *c = &e->cfg;
	e->wp_n = c->window_pool ? c->window_pool : c->max_qps;
	e->wp_send = mrce__zalloc(e->wp_n * send_bytes(c));
	e->wp_recv = mrce__zalloc(e->wp_n * recv_bytes(c));
	/* An entry is written when its block comes back: untouched until then. */
	e->wp_send_free = mrce__zalloc(e->wp_n * sizeof(uint32_t));
	e->wp_recv_free = mrce__zalloc(e->wp_n * sizeof(uint32_t));
	return e->wp_send && e->wp_recv && e->wp_send_free && e->wp_recv_free ? 0 : -ENOMEM;
}

void mrce__wpool_fini(struct mrce *e)
{
	mrce__zfree(e->wp_send, e->wp_n * send_bytes(&e->cfg));
	mrce__zfree(e->wp_recv, e->wp_n * recv_bytes(&e->cfg));
	mrce__zfree(e->wp_send_free, e->wp_n * sizeof(uint32_t));
	mrce__zfree(e->wp_recv_free, e->wp_n * sizeof(uint32_t));
}

/* The index of the block to use: the last given back, else a new one. */
static int take(uint32_t *stack, uint32_t *nfree, uint32_t *hwm, uint32_t n, uint32_t *i)
{
	if (*nfree)
		*i = stack[--*nfree];
	else if (*hwm < n)
		*i = (*hwm)++;
	else
		return -ENOBUFS;
	return 0;
}

static void wait_push(struct mrce *e, struct mrce__qp *qp)
{
	if (qp->in_wwait)
		return;
	qp->in_wwait = 1;
	qp->wwait_next = NULL;
	if (e->wwait_tail)
		e->wwait_tail->wwait_next = qp;
	else
		e->wwait_head = qp;
	e->wwait_tail = qp;
	e->st.wpool_waits++;
}

static int send_take(struct mrce *e, struct mrce__qp *qp)
{
	uint32_t i;
	if (take(e->wp_send_free, &e->wp_send_nfree, &e->wp_send_hwm, e->wp_n, &i))
		return -ENOBUFS;
	qp->slots = (struct mrce__slot *)(e->wp_send + i * send_bytes(&e->cfg));
	qp->slots_from = qp->snd_nxt;   /* quiescent: all before it acked */
	e->st.wpool_send_busy++;
	e->st.wpool_send_hwm = e->wp_send_hwm;
	return 0;
}

int mrce__wpool_send_get(struct mrce *e, struct mrce__qp *qp)
{
	if (qp->slots)
		return 0;
	/* Behind the QPs already waiting: a block given back is theirs. */
	if (qp->in_wwait || e->wwait_head || send_take(e, qp)) {
		wait_push(e, qp);
		return -ENOBUFS;
	}
	return 0;
}

int mrce__wpool_recv_get(struct mrce *e, struct mrce__qp *qp)
{
	uint32_t i;
	if (qp->rslots)
		return 0;
	if (take(e->wp_recv_free, &e->wp_recv_nfree, &e->wp_recv_hwm, e->wp_n, &i))
		return -ENOBUFS;
	uint8_t *b = e->wp_recv + i * recv_bytes(&e->cfg);
	qp->rslots = (struct mrce__rslot *)b;
	qp->rcq = (struct mrce__rcqe *)(b + e->cfg.window * sizeof(struct mrce__rslot));
	e->st.wpool_recv_busy++;
	e->st.wpool_recv_hwm = e->wp_recv_hwm;
	return 0;
}

static void send_put(struct mrce *e, struct mrce__qp *qp)
{
	size_t i = ((uint8_t *)qp->slots - e->wp_send) / send_bytes(&e->cfg);
	e->wp_send_free[e->wp_send_nfree++] = (uint32_t)i;
	e->st.wpool_send_busy--;
	qp->slots = NULL;
}

static void recv_put(struct mrce *e, struct mrce__qp *qp)
{
	size_t i = ((uint8_t *)qp->rslots - e->wp_recv) / recv_bytes(&e->cfg);
	e->wp_recv_free[e->wp_recv_nfree++] = (uint32_t)i;
	e->st.wpool_recv_busy--;
	qp->rslots = NULL;
	qp->rcq = NULL;
}

/* The sender is quiescent when all it sent is acked and nothing is left
 * to send (a failed QP sends nothing more); the receiver when no PSN
 * beyond rcv_nxt is placed (a hole's later packets keep their effect
 * records) and every completion was polled. */
void mrce__wpool_settle(struct mrce *e, struct mrce__qp *qp)
{
	int rts = qp->state == MRCE_QPS_RTS;
	if (qp->slots && (!rts || (qp->snd_una == qp->snd_nxt && qp->sq_seg == qp->sq_tail)))
		send_put(e, qp);
	if (qp->rslots && qp->rcq_head == qp->rcq_tail &&
	    (!rts || !(qp->rbits[0] | qp->rbits[1] | qp->rbits[2] | qp->rbits[3])))
		recv_put(e, qp);
}

void mrce__wpool_drop(struct mrce *e, struct mrce__qp *qp)
{
	if (qp->slots)
		send_put(e, qp);
	if (qp->rslots)
		recv_put(e, qp);
	if (!qp->in_wwait)
		return;
	struct mrce__qp *prev = NULL;
	for (struct mrce__qp *c = e->wwait_head; c; prev = c, c = c->wwait_next) {
		if (c != qp)
			continue;
		if (prev)
			prev->wwait_next = c->wwait_next;
		else
			e->wwait_head = c->wwait_next;
		if (e->wwait_tail == qp)
			e->wwait_tail = prev;
		break;
	}
	qp->in_wwait = 0;
}

void mrce__wpool_grant(struct mrce *e, uint64_t now)
{
	while (mrce__wpool_grantable(e)) {
		struct mrce__qp *qp = e->wwait_head;
		e->wwait_head = qp->wwait_next;
		if (!e->wwait_head)
			e->wwait_tail = NULL;
		qp->in_wwait = 0;
		/* Failed or aborted while it waited: nothing left to send. */
		if (qp->state != MRCE_QPS_RTS || qp->sq_seg == qp->sq_tail || qp->slots)
			continue;
		send_take(e, qp);
		mrce__qp_activate(e, qp, now);
	}
}

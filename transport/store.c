/* The engine's store (store.h): memory registration, QP lookup, and the
 * queues the engine files share (control packets, events, QPs that may
 * send, QPs with completions).  Calls no other engine file. */
#include <errno.h>
#include <stdlib.h>

#include "transport/store.h"

/* ---- memory registration ------------------------------------------- */

/* A key is a 32-bit generation, not a slot number: the n-th registration
 * gets mix(n), a bijection of the 32-bit counter, so no key repeats until
 * 2^32 more registrations (and a key still registered is skipped even
 * then).  A stale key of a freed, reused slot therefore never matches.
 * The slot is found by a hash of the key (open addressing, linear probing,
 * at most half full). */
static uint32_t key_mix(uint32_t x)
{
	x *= 0x9e3779b1u;             /* odd: invertible mod 2^32 */
	x ^= x >> 16;                 /* invertible */
	return x;
}

static uint32_t key_home(const struct mrce *e, uint32_t key)
{
	return (key * 0x85ebca6bu >> 7) & e->mr_hmask;
}

/* The hash bucket holding key (its slot + 1), or the empty one it would go in. */
static uint32_t key_bucket(const struct mrce *e, uint32_t key)
{
	uint32_t b = key_home(e, key);
	while (e->mr_hash[b] && e->mrs[e->mr_hash[b] - 1].key != key)
		b = (b + 1) & e->mr_hmask;
	return b;
}

/* Linear probing's deletion: later entries of the cluster move back so a
 * lookup never stops at the hole. */
static void key_unhash(struct mrce *e, uint32_t b)
{
	e->mr_hash[b] = 0;
	for (uint32_t j = (b + 1) & e->mr_hmask; e->mr_hash[j]; j = (j + 1) & e->mr_hmask) {
		uint32_t h = key_home(e, e->mrs[e->mr_hash[j] - 1].key);
		/* moves back when its home is not within (b, j] */
		if (((j - h) & e->mr_hmask) >= ((j - b) & e->mr_hmask)) {
			e->mr_hash[b] = e->mr_hash[j];
			e->mr_hash[j] = 0;
			b = j;
		}
	}
}

int mrce_mr_add(struct mrce *e, uint32_t pd, void *base, uint64_t len,
	       uint32_t access, uint32_t *key)
{
	if (!base || !len || !key || (access & ~0xfu) ||
	    (uintptr_t)base + len < (uintptr_t)base)
		return -EINVAL;
	uint32_t n = e->cfg.max_mrs;
	for (uint32_t k = 0; k < n; k++) {
		uint32_t i = (e->mr_free + k) % n;
		struct mrce__mr *m = &e->mrs[i];
		if (m->valid)
			continue;
		uint32_t kv, b;
		do {
			kv = key_mix(++e->mr_gen);
			b = kv ? key_bucket(e, kv) : 0;
		} while (!kv || e->mr_hash[b]);   /* 0 is no key; a live key is skipped */
		*m = (struct mrce__mr){ .base = base, .len = len, .pd = pd,
			.access = access, .valid = 1, .key = kv };
		e->mr_hash[b] = i + 1;
		e->mr_free = (i + 1) % n;
		*key = kv;
		return 0;
	}
	return -ENOSPC;
}

struct mrce__mr *mrce__mr_get(struct mrce *e, uint32_t key)
{
	if (!key)
		return NULL;
	uint32_t s = e->mr_hash[key_bucket(e, key)];
	return s ? &e->mrs[s - 1] : NULL;
}

int mrce_mr_remove(struct mrce *e, uint32_t key)
{
	struct mrce__mr *m = mrce__mr_get(e, key);
	if (!m)
		return -ENOENT;
	if (m->refs)
		return -EBUSY;
	key_unhash(e, key_bucket(e, key));
	m->valid = 0;
	m->key = 0;
	return 0;
}

/* ---- queues --------------------------------------------------------- */

void mrce__event_push(struct mrce *e, const struct mrce_event *ev)
{
	if (e->evq_tail - e->evq_head > e->evq_mask) {
		e->st.events_dropped++;
		return;
	}
	e->evq[e->evq_tail++ & e->evq_mask] = *ev;
}

/* An empty ring starts again at slot 0 (same FIFO order), so a queue that
 * rarely holds more than a few entries keeps using its first slots: the
 * rest is never touched (never faulted in) and the used slots stay in
 * cache.  Cycling through every slot cost thousands of engines in one
 * process (the simulator) a cache miss per control packet and 26 KiB of
 * resident memory each. */
int mrce_event_pop(struct mrce *e, struct mrce_event *ev)
{
	if (e->evq_head == e->evq_tail) {
		e->evq_head = e->evq_tail = 0;
		return 0;
	}
	*ev = e->evq[e->evq_head++ & e->evq_mask];
	return 1;
}

/* A free control packet, or NULL when the queue is full: ACKs are
 * cumulative and probes are retried, so dropping one is safe. */
struct mrce_tx_pkt *mrce__ctrl_slot(struct mrce *e)
{
	if (e->ctrl_tail - e->ctrl_head > e->ctrl_mask) {
		e->st.ctrl_overflow++;
		return NULL;
	}
	struct mrce_tx_pkt *t = &e->ctrl[e->ctrl_tail++ & e->ctrl_mask];
	t->tclass = MRCE_TC_DEFAULT;   /* a QP's ACK sets its own */
	return t;
}

void mrce__qp_ready(struct mrce *e, struct mrce__qp *qp)
{
	if (qp->in_ready)
		return;
	qp->in_ready = 1;
	qp->ready_next = NULL;
	if (e->ready_tail)
		e->ready_tail->ready_next = qp;
	else
		e->ready_head = qp;
	e->ready_tail = qp;
}

void mrce__qp_activate(struct mrce *e, struct mrce__qp *qp, uint64_t now)
{
	if (qp->in_active || !mrce__qp_can_send(e, qp, now))
		return;
	unsigned b = mrce__band(qp->tclass);
	qp->in_active = 1;
	qp->active_next = NULL;
	if (e->active_tail[b])
		e->active_tail[b]->active_next = qp;
	else
		e->active_head[b] = qp;
	e->active_tail[b] = qp;
}

/* The next QP that may send, off its band's list: URGENT first, but while
 * both bands wait every (100 / bulk_min_pct)th turn is the other band's,
 * so bulk keeps its minimum share under any urgent load (a deficit
 * counter: exact over time, no floating point). */
struct mrce__qp *mrce__active_pop(struct mrce *e)
{
	unsigned b;
	if (!e->active_head[0])
		b = 1;
	else if (!e->active_head[1])
		b = 0;
	else {
		e->share_credit += e->cfg.bulk_min_pct;
		b = 0;
		if (e->share_credit >= 100) {
			e->share_credit -= 100;
			e->st.tx_share_turns++;
			b = 1;
		}
	}
	struct mrce__qp *qp = e->active_head[b];
	if (!qp)
		return NULL;
	e->active_head[b] = qp->active_next;
	if (!e->active_head[b])
		e->active_tail[b] = NULL;
	qp->in_active = 0;
	return qp;
}

struct mrce__qp *mrce__qp_get(struct mrce *e, uint32_t qpn)
{
	uint32_t i = qpn & 0xffff;
	if (i >= e->qp_hwm)
		return NULL;
	struct mrce__qp *qp = &e->qps[i];
	return qp->used && qp->qpn == qpn ? qp : NULL;
}

/* The engine's timers: which peers and QPs have a deadline armed, and the
 * earliest of them, so that mrce_next_deadline costs O(1) and mrce_tick
 * visits only what is due, however many idle QPs exist.
 *
 * A binary min-heap of timer ids keyed by each one's earliest deadline,
 * with a position back-pointer per id, rather than a hierarchical timing
 * wheel: the deadlines span five orders of magnitude (RACK at microseconds,
 * RTO and probes at milliseconds, no-path at a second) and are re-armed on
 * nearly every ACK, and mrce_next_deadline must return the exact earliest
 * one (the simulator runs the engine at exact virtual times, and mrcd sleeps
 * until it).  A wheel has O(1) arming but needs slots fine enough for
 * microseconds and deep enough for a second, and finding its next deadline
 * means a scan of slots; the heap holds only armed ids (an idle QP has none)
 * and costs O(log armed) per change, at most 17 levels.  Hand-written:
 * common/heap.h (the simulator's event queue) can neither re-key nor remove
 * an entry and grows by allocation, while the engine allocates nothing
 * after mrce_create and re-keys a QP on nearly every ACK; libc has no
 * indexed heap.
 *
 * Timer ids: peer p is p, QP slot i is max_peers + i, so sorting the due
 * ids runs peers before QPs, each in index order, which is the order in
 * which the engine always ran them (results stay the same).
 *
 * The key of an id is recomputed from the QP's or peer's own fields by
 * mrce__qp_timer_sync / mrce__peer_timer_sync, called wherever those fields
 * may have changed: at the end of each entry point for the QP or peer it
 * touched, and where one changes several (a path back, a failed QP).  A key
 * that is too early only costs a tick that finds nothing due; tests check
 * that none is too late or missing (mrce__timers_check, tests/support/chan.c). */
#include <errno.h>
#include <stdlib.h>

#include "transport/timers.h"

int mrce__timers_init(struct mrce *e)
{
	uint32_t n = e->cfg.max_peers + e->cfg.max_qps;
	e->tkey = calloc(n, sizeof(*e->tkey));
	e->tpos = calloc(n, sizeof(*e->tpos));
	e->theap = calloc(n, sizeof(*e->theap));
	e->tdue = calloc(n, sizeof(*e->tdue));
	return e->tkey && e->tpos && e->theap && e->tdue ? 0 : -ENOMEM;
}

void mrce__timers_fini(struct mrce *e)
{
	free(e->tkey);
	free(e->tpos);
	free(e->theap);
	free(e->tdue);
}

size_t mrce__timers_bytes_per_qp(void)
{
	struct mrce *e = NULL;
	return sizeof(*e->tkey) + sizeof(*e->tpos) + sizeof(*e->theap) + sizeof(*e->tdue);
}

/* ---- the heap (tpos[id] = position + 1; 0: not in it) ------------------ */

static void hput(struct mrce *e, uint32_t pos, uint32_t id)
{
	e->theap[pos] = id;
	e->tpos[id] = pos + 1;
}

static void sift_up(struct mrce *e, uint32_t pos)
{
	uint32_t id = e->theap[pos];
	uint64_t k = e->tkey[id];
	while (pos) {
		uint32_t up = (pos - 1) / 2;
		if (e->tkey[e->theap[up]] <= k)
			break;
		hput(e, pos, e->theap[up]);
		pos = up;
	}
	hput(e, pos, id);
}

static void sift_down(struct mrce *e, uint32_t pos)
{
	uint32_t id = e->theap[pos], n = e->theap_n;
	uint64_t k = e->tkey[id];
	for (;;) {
		uint32_t c = 2 * pos + 1;
		if (c >= n)
			break;
		if (c + 1 < n && e->tkey[e->theap[c + 1]] < e->tkey[e->theap[c]])
			c++;
		if (e->tkey[e->theap[c]] >= k)
			break;
		hput(e, pos, e->theap[c]);
		pos = c;
	}
	hput(e, pos, id);
}

static void heap_remove(struct mrce *e, uint32_t id)
{
	uint32_t pos = e->tpos[id] - 1, last = e->theap[--e->theap_n];
	e->tpos[id] = 0;
	if (last == id)
		return;
	hput(e, pos, last);
	if (pos && e->tkey[e->theap[(pos - 1) / 2]] > e->tkey[last])
		sift_up(e, pos);
	else
		sift_down(e, pos);
}

/* Id's deadline becomes key (UINT64_MAX: none armed). */
static void timer_set(struct mrce *e, uint32_t id, uint64_t key)
{
	uint32_t at = e->tpos[id];
	if (key == UINT64_MAX) {
		if (at)
			heap_remove(e, id);
		return;
	}
	if (at && e->tkey[id] == key)
		return;
	uint64_t old = e->tkey[id];
	e->tkey[id] = key;
	if (!at) {
		hput(e, e->theap_n++, id);
		sift_up(e, e->theap_n - 1);
	} else if (key < old) {
		sift_up(e, at - 1);
	} else {
		sift_down(e, at - 1);
	}
}

/* ---- keys ----------------------------------------------------------------- */

/* The QP's earliest deadline (UINT64_MAX: none). */
static uint64_t qp_deadline(const struct mrce__qp *qp)
{
	uint64_t d = UINT64_MAX;
	if (qp->rnr_until && qp->rnr_until < d)
		d = qp->rnr_until;
	if (qp->rack_deadline && qp->rack_deadline < d)
		d = qp->rack_deadline;
	if (qp->rto_deadline && qp->rto_deadline < d)
		d = qp->rto_deadline;
	if (qp->nopath_deadline && qp->nopath_deadline < d)
		d = qp->nopath_deadline;
	return d;
}

static uint64_t qp_key(const struct mrce__qp *qp)
{
	return qp->used && qp->state == MRCE_QPS_RTS ? qp_deadline(qp) : UINT64_MAX;
}

static uint64_t peer_key(const struct mrce__peer *p)
{
	return p->used && (p->nbad || p->nsuspect) ? p->next_probe_due : UINT64_MAX;
}

void mrce__qp_timer_sync(struct mrce *e, struct mrce__qp *qp)
{
	timer_set(e, e->cfg.max_peers + (uint32_t)(qp - e->qps), qp_key(qp));
}

void mrce__peer_timer_sync(struct mrce *e, uint32_t peer)
{
	timer_set(e, peer, peer_key(&e->peers[peer]));
}

/* ---- what is due (mrce_next_deadline, mrce_tick: engine.c) -------------- */

uint64_t mrce__timers_next(const struct mrce *e)
{
	return e->theap_n ? e->tkey[e->theap[0]] : UINT64_MAX;
}

/* Ascending ids, in place: a heapsort, since the engine may not allocate
 * (glibc's qsort may call malloc). */
static void ids_sift(uint32_t *a, uint32_t pos, uint32_t n)
{
	uint32_t v = a[pos];
	for (;;) {
		uint32_t c = 2 * pos + 1;
		if (c >= n)
			break;
		if (c + 1 < n && a[c + 1] > a[c])
			c++;
		if (a[c] <= v)
			break;
		a[pos] = a[c];
		pos = c;
	}
	a[pos] = v;
}

static void sort_ids(uint32_t *a, uint32_t n)
{
	for (uint32_t s = n / 2; s-- > 0;)
		ids_sift(a, s, n);
	for (uint32_t end = n; end-- > 1;) {
		uint32_t t = a[0];
		a[0] = a[end];
		a[end] = t;
		ids_sift(a, 0, end);
	}
}

uint32_t mrce__timers_take_due(struct mrce *e, uint64_t now)
{
	uint32_t n = 0;
	while (e->theap_n && e->tkey[e->theap[0]] <= now) {
		uint32_t id = e->theap[0];
		heap_remove(e, id);
		e->tdue[n++] = id;
	}
	sort_ids(e->tdue, n);
	return n;
}

/* ---- self-check (tests) --------------------------------------------------- */

int mrce__timers_check(const struct mrce *e)
{
	/* Slots above the high-water marks were never used: counting the armed
	 * ids below them proves those are not in the heap either. */
	uint32_t np = e->cfg.max_peers, armed = 0;
	for (uint32_t id = 0; id < np + e->qp_hwm; id++) {
		if (id == e->peer_hwm && id < np)
			id = np;
		if (id >= np + e->qp_hwm)
			break;
		uint64_t want = id < np ? peer_key(&e->peers[id]) : qp_key(&e->qps[id - np]);
		uint32_t at = e->tpos[id];
		if (want == UINT64_MAX ? at != 0 : !at || e->tkey[id] != want)
			return -EPROTO;
		if (at && (at > e->theap_n || e->theap[at - 1] != id))
			return -EFAULT;
		armed += at != 0;
	}
	if (armed != e->theap_n)
		return -EFAULT;
	for (uint32_t pos = 1; pos < e->theap_n; pos++)
		if (e->tkey[e->theap[(pos - 1) / 2]] > e->tkey[e->theap[pos]])
			return -EFAULT;
	return 0;
}

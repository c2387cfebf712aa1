/* The progress engine and the executor of a schedule: put-then-signal
 * with per-peer credit windows over the QPs, the shared-memory rings to
 * the ranks of this host, and abort propagation (coll_int.h). */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "coll/coll_int.h"
#include "coll/devmem.h"

/* Immediates: the top two bits say what a WRITE_IMM is. */
#define IMM_KIND(x) ((x) >> 30)
#define IMM_ARG(x) ((x) & 0x3fffffffu)
/* IMM_DATA_ANY: a chunk of a schedule that spreads a peer's chunks over
 * its plane-pinned QPs (mrc__coll_sched.any_plane); the argument is the
 * chunk's ordinal among every chunk spread to that rank, counted across
 * collectives (mrc__coll_peer.any_tx). */
enum { IMM_DATA = 0, IMM_CREDIT = 1, IMM_ABORT = 2, IMM_DATA_ANY = 3 };
/* wr_id: kind in the top bits, as the immediates. */
#define WR(kind) ((uint64_t)(kind) << 62)

/* ---- progress ----------------------------------------------------------- */

static uint64_t slot_off(const struct mrc_coll *c, uint32_t peer, uint64_t msg)
{
	return ((uint64_t)peer * c->window + msg % c->window) * c->chunk;
}

/* A signal to a peer that is gone is dropped (0); -ENOSPC: the SQ is
 * full, try again later. */
static int post_signal(struct mrc_coll *c, uint32_t j, uint32_t kind, uint32_t arg)
{
	struct mrc__coll_peer *p = &c->p[j];
	if (p->gone)
		return 0;
	int r = mrc_post_write_imm(p->qp, WR(kind), mrc_mr_key(c->tx), 0, 0, p->rkey, 0,
				   kind << 30 | IMM_ARG(arg));
	if (r == -ENOSPC)
		return r;
	if (!r)
		p->wr_posted++;
	return 0;
}

int mrc__coll_fail(struct mrc_coll *c, int err)
{
	if (c->err)
		return c->err;
	c->err = err;
	/* The ranks of our host see it in the rings' abort words. */
	for (uint32_t j = 0; j < c->n; j++)
		if (c->p[j].shm) {
			mrc__coll_ring_abort(&c->p[j].stx);
			mrc__coll_ring_abort(&c->p[j].srx);
		}
	/* Tell every peer, so that no rank waits on us until its timeout. */
	for (uint32_t j = 0; j < c->np; j++)
		if (j % c->n != c->me)
			post_signal(c, j, IMM_ABORT, (uint32_t)-err);   /* best effort */
	return err;
}

int mrc_coll_abort(struct mrc_coll *c, int err)
{
	return mrc__coll_fail(c, err < 0 ? err : -ECONNABORTED);
}

/* Reads every completion waiting; returns how many (or the error). */
int mrc__coll_poll_peers(struct mrc_coll *c)
{
	int got = 0;
	for (uint32_t j = 0; j < c->np; j++) {
		struct mrc__coll_peer *p = &c->p[j];
		if (j % c->n == c->me)
			continue;
		if (p->shm && (mrc__coll_ring_aborted(&p->stx) || (p->srx.h && mrc__coll_ring_aborted(&p->srx))))
			return mrc__coll_fail(c, -ECONNABORTED);
		struct mrc_completion wc[32];
		int k = mrc_poll_cq(p->qp, wc, 32);
		if (k < 0)
			return mrc__coll_fail(c, k);
		got += k;
		for (int i = 0; i < k; i++) {
			if (wc[i].op == MRC_CQE_RECV_WRITE_IMM) {
				uint32_t imm = wc[i].imm;
				if (IMM_KIND(imm) == IMM_CREDIT) {
					p->credits += IMM_ARG(imm);
				} else if (IMM_KIND(imm) == IMM_ABORT) {
					mrc__coll_fail(c, -ECONNABORTED);
				} else if ((IMM_KIND(imm) == IMM_DATA && IMM_ARG(imm) != IMM_ARG(p->arrived)) ||
					   p->arrived - p->consumed >= c->window) {
					mrc__coll_fail(c, -EPROTO);   /* out of step: a bug */
				} else {
					/* A spread chunk's ordinal; UINT32_MAX: not spread. */
					p->aord[p->arrived % c->window] =
						IMM_KIND(imm) == IMM_DATA_ANY ? IMM_ARG(imm) : UINT32_MAX;
					p->alen[p->arrived % c->window] = wc[i].byte_len;
					p->arrived++;
				}
				continue;
			}
			/* Our own WRITE_IMM. */
			p->wr_done++;
			uint32_t kind = (uint32_t)(wc[i].wr_id >> 62);
			int data = kind == IMM_DATA || kind == IMM_DATA_ANY;
			if (data) {
				mrc__coll_strag_delivered(c, p);
				p->data_done++;
			}
			if (wc[i].status) {
				if (data)
					mrc__coll_fail(c, wc[i].status);
				else
					p->gone = 1;   /* a peer that finished and left */
			}
		}
	}
	return c->err ? c->err : got;
}

/* Sleeps until a completion may be waiting, for at most ms. */
int mrc__coll_wait_peers(struct mrc_coll *c, int ms)
{
	/* One doorbell for every QP of the context: empty it before arming,
	 * so a ring that comes after an arm is not read away. */
	mrc_ctx_drain(c->ctx);
	for (uint32_t j = 0; j < c->np; j++) {
		if (j % c->n == c->me)
			continue;
		int r = mrc_arm_cq(c->p[j].qp);
		if (r < 0)
			return mrc__coll_fail(c, r);
		if (r == 1)
			return 0;
	}
	struct epoll_event ev[8];
	int k = epoll_wait(c->epfd, ev, 8, ms);
	for (int i = 0; i < k; i++)
		if (ev[i].data.u32 == UINT32_MAX && (ev[i].events & (EPOLLHUP | EPOLLRDHUP | EPOLLERR)))
			return mrc__coll_fail(c, -ECONNRESET);   /* mrcd died */
	return 0;
}

/* The idle part of every wait loop: a few yields (a peer on this host
 * may need the core), then sleep on the doorbells; -ETIMEDOUT (and abort)
 * once nothing happened for timeout_ms. */

static int idle_step(struct mrc_coll *c, struct mrc__coll_idle *w, int progressed)
{
	int64_t t = mrc__coll_now_ms();
	if (progressed) {
		w->last = t;
		w->spins = 0;
		return 0;
	}
	if (t - w->last > c->timeout_ms)
		return mrc__coll_fail(c, -ETIMEDOUT);
	if (w->spins++ < 64) {
		sched_yield();
		return 0;
	}
	int64_t left = c->timeout_ms - (t - w->last) + 1;
	/* A rank of our host rings no doorbell when it fills or frees a
	 * shared-memory slot: look again soon while we wait on one (w->shm). */
	int cap = w->shm ? 1 : 20;
	return mrc__coll_wait_peers(c, left < cap ? (int)left : cap);
}

/* ---- the executor -------------------------------------------------------- */

static uint8_t *buf_of(uint8_t b, const void *in, void *out, uint8_t *tmp)
{
	return b == SB_IN ? (uint8_t *)in : b == SB_OUT ? out : tmp;
}

/* Next step at or after i of this kind and peer (s->n: none). */
static size_t next_step(const struct mrc__coll_sched *s, size_t i, uint8_t kind, uint32_t peer)
{
	while (i < s->n && !(s->s[i].kind == kind && s->s[i].peer == peer))
		i++;
	return i;
}

/* Combines an arrived chunk (a QP slot or a ring's) into step i's place:
 * the step is done. */
static void place(struct mrc_coll *c, struct mrc__coll_exec *x, size_t i, const uint8_t *chunk)
{
	const struct mrc__coll_step *st = &x->s->s[i];
	uint8_t *dst = buf_of(st->dst, x->in, x->out, x->tmp) + st->dst_off;
	if (st->reduce)
		c->ops->reduce(dst, buf_of(st->src, x->in, x->out, x->tmp) + st->src_off, chunk,
			       st->len / x->esz, x->dtype, x->op);
	else
		c->ops->copy(dst, chunk, st->len);
	x->done[i] = 1;
	x->left--;
	x->prog++;
}

/* Combines the chunk in QP j's oldest arrived slot into step i's place
 * and frees the slot (its credit goes back with the next pass). */
static int consume(struct mrc_coll *c, struct mrc__coll_exec *x, uint32_t j, size_t i)
{
	struct mrc__coll_peer *p = &c->p[j];
	const uint8_t *chunk = c->rxb + slot_off(c, j, p->consumed);
	if (p->alen[p->consumed % c->window] != x->s->s[i].len)
		return mrc__coll_fail(c, -EPROTO);   /* ranks disagree on sizes */
	place(c, x, i, chunk);
	p->consumed++;
	p->owed++;
	return 0;
}

/* QP j may take another chunk: the peer has a free slot and our staging
 * slot is no longer in flight. */
static int has_room(const struct mrc_coll *c, uint32_t j)
{
	const struct mrc__coll_peer *p = &c->p[j];
	return p->sent - p->credits < c->window && p->sent - p->data_done < c->window;
}

/* Step i's chunk to QP j: copy to staging, then one WRITE_WITH_IMM
 * carries data and signal together.  1: posted; 0: the SQ is full. */
static int post_chunk(struct mrc_coll *c, struct mrc__coll_exec *x, uint32_t j, size_t i, uint32_t imm)
{
	struct mrc__coll_peer *p = &c->p[j];
	const struct mrc__coll_step *st = &x->s->s[i];
	uint64_t off = slot_off(c, j, p->sent);
	c->ops->copy(c->txb + off, buf_of(st->src, x->in, x->out, x->tmp) + st->src_off, st->len);
	int r = mrc_post_write_imm(p->qp, WR(IMM_KIND(imm)), mrc_mr_key(c->tx), off, st->len,
				   p->rkey, slot_off(c, j - j % c->n + c->me, p->sent), imm);
	if (r == -ENOSPC)
		return 0;
	if (r < 0)
		return mrc__coll_fail(c, r);
	p->tpost[p->sent % c->window] = mrc__coll_strag_now_ns();
	p->wr_posted++;
	p->sent++;
	x->done[i] = 1;
	x->left--;
	x->prog++;
	return 1;
}

/* A peer of our host: its arrived chunks combined into place in order,
 * then our ready chunks copied into its ring while it has free slots (the
 * QP path's consume and post_chunk, with the rings' tail and head as
 * signal and credits). */
static int shm_peer(struct mrc_coll *c, struct mrc__coll_exec *x, uint32_t j, size_t *rc, size_t *sc)
{
	struct mrc__coll_peer *p = &c->p[j];
	const struct mrc__coll_sched *s = x->s;
	while (rc[j] < s->n) {
		const struct mrc__coll_step *st = &s->s[rc[j]];
		if (st->dep >= 0 && !x->done[st->dep])
			break;
		const uint8_t *chunk;
		uint32_t len;
		int k = mrc__coll_ring_peek(&p->srx, &chunk, &len);
		if (k < 0)
			return mrc__coll_fail(c, k);
		if (!k)
			break;
		if (len != st->len)
			return mrc__coll_fail(c, -EPROTO);   /* ranks disagree on sizes */
		place(c, x, rc[j], chunk);
		mrc__coll_ring_pop(&p->srx);
		rc[j] = next_step(s, rc[j] + 1, SK_RECV, j);
	}
	while (sc[j] < s->n) {
		const struct mrc__coll_step *st = &s->s[sc[j]];
		if (st->dep >= 0 && !x->done[st->dep])
			break;
		int k = mrc__coll_ring_room(&p->stx);
		if (k < 0)
			return mrc__coll_fail(c, k);
		if (!k)
			break;
		if (st->len > p->stx.slot_bytes)
			return mrc__coll_fail(c, -EINVAL);
		c->ops->copy(mrc__coll_ring_slot(&p->stx), buf_of(st->src, x->in, x->out, x->tmp) + st->src_off,
			     st->len);
		if ((k = mrc__coll_ring_push(&p->stx, (uint32_t)st->len)))
			return mrc__coll_fail(c, k);
		x->done[sc[j]] = 1;
		x->left--;
		x->prog++;
		sc[j] = next_step(s, sc[j] + 1, SK_SEND, j);
	}
	return 0;
}

/* Spreading (any_plane): rank r's chunks go, in order, to whichever of
 * its plane-pinned QPs has room, so a plane that drains slower (a dead
 * spine, a congested uplink) takes fewer of them; each carries its
 * ordinal, and the receiver finds the step by it (rstep: rank r's RECV
 * steps in order from rfirst[r]).  Steps without dependencies only. */
static int spread_peer(struct mrc_coll *c, struct mrc__coll_exec *x, uint32_t r, size_t *sc,
		       const size_t *rstep, const size_t *rfirst)
{
	struct mrc__coll_peer *pr = &c->p[r];
	for (uint32_t pl = 0; pl < c->planes; pl++) {
		uint32_t j = r + (1 + pl) * c->n;
		struct mrc__coll_peer *p = &c->p[j];
		while (p->arrived > p->consumed) {
			/* Ordinals count on across collectives: a chunk of the
			 * rank's next collective (it finished this one sooner)
			 * waits in its slot, as do those behind it. */
			uint32_t a = p->aord[p->consumed % c->window];
			uint32_t k = IMM_ARG(a - (uint32_t)pr->any_rx);
			if (a == UINT32_MAX || k >= rfirst[r + 1] - rfirst[r])
				break;   /* the next collective's (a forest's, or spread) */
			int e = consume(c, x, j, rstep[rfirst[r] + k]);
			if (e)
				return e;
		}
	}
	/* Planes in turn from the one after the last chunk's, while any has
	 * room and at most a window's chunks are out to the rank over all
	 * planes: a plane gets a new chunk when one of its own is taken, so
	 * the split follows what each plane delivers (a window per plane
	 * would hand each plane its share at once). */
	uint64_t out = 0;
	for (uint32_t pl = 0; pl < c->planes; pl++)
		out += c->p[r + (1 + pl) * c->n].sent - c->p[r + (1 + pl) * c->n].credits;
	for (uint32_t t = 0; sc[r] < x->s->n && t < c->planes && out < c->window;) {
		uint32_t j = r + (1 + (pr->any_tx + t) % c->planes) * c->n;
		if (!has_room(c, j)) {
			t++;
			continue;
		}
		int k = post_chunk(c, x, j, sc[r], (uint32_t)IMM_DATA_ANY << 30 | IMM_ARG(pr->any_tx));
		if (k <= 0)
			return k;
		pr->any_tx++;
		out++;
		t = 0;
		sc[r] = next_step(x->s, sc[r] + 1, SK_SEND, r);
	}
	return 0;
}

/* Local copies done at once; the rest counted; for a spread schedule,
 * its receives indexed by source rank (rfirst: prefix counts, rstep: the
 * steps; fill0: scratch counts, which the caller overwrites after). */
static void prep_steps(struct mrc_coll *c, struct mrc__coll_exec *x, int spread, size_t *rfirst,
		       size_t *rstep, size_t *fill0)
{
	const struct mrc__coll_sched *s = x->s;
	const void *in = x->in;
	void *out = x->out;
	for (size_t i = 0; i < s->n; i++) {
		const struct mrc__coll_step *st = &s->s[i];
		if (st->kind == SK_COPY) {
			c->ops->copy(buf_of(st->dst, in, out, x->tmp) + st->dst_off,
				     buf_of(st->src, in, out, x->tmp) + st->src_off, st->len);
			x->done[i] = 1;
		} else {
			x->left++;
			if (spread && st->kind == SK_RECV)
				rfirst[st->peer + 1]++;
		}
	}
	if (spread) {
		for (uint32_t r = 0; r < c->n; r++)
			rfirst[r + 1] += rfirst[r];
		for (size_t i = 0, *fill = fill0; i < s->n; i++)
			if (s->s[i].kind == SK_RECV)
				rstep[rfirst[s->s[i].peer] + fill[s->s[i].peer]++] = i;
	}
}

/* A peer over QPs: arrived chunks combined into place in order (their
 * slots freed), sends whose data is ready while there is room, and the
 * credits owed, at once: the sender's pipeline depends on them. */
static int qp_peer(struct mrc_coll *c, struct mrc__coll_exec *x, uint32_t j, size_t *rc, size_t *sc,
		   int spread_j)
{
	const struct mrc__coll_sched *s = x->s;
	struct mrc__coll_peer *p = &c->p[j];
	int err;
	/* Arrived chunks, in order: combine into place, free the slot. */
	while (rc[j] < s->n && p->arrived > p->consumed) {
		const struct mrc__coll_step *st = &s->s[rc[j]];
		if (st->dep >= 0 && !x->done[st->dep])
			break;   /* combines with a chunk still to come */
		if ((err = consume(c, x, j, rc[j])))
			return err;
		rc[j] = next_step(s, rc[j] + 1, SK_RECV, j);
	}
	/* Sends whose data is ready, while there is room. */
	while (!spread_j && sc[j] < s->n) {
		const struct mrc__coll_step *st = &s->s[sc[j]];
		if ((st->dep >= 0 && !x->done[st->dep]) || !has_room(c, j))
			break;
		int k = post_chunk(c, x, j, sc[j], (uint32_t)IMM_DATA << 30 | IMM_ARG(p->sent));
		if (k < 0)
			return k;
		if (!k)
			break;
		sc[j] = next_step(s, sc[j] + 1, SK_SEND, j);
	}
	/* Credits go back at once: the sender's pipeline depends on them. */
	if (p->owed && post_signal(c, j, IMM_CREDIT, p->owed) == 0)
		p->owed = 0;
	return 0;
}

void mrc__coll_exec_end(struct mrc_coll *c, struct mrc__coll_exec *x)
{
	if (x->tmp)
		mrc__coll_use(c, x->ops);   /* the table that allocated it */
	mrc__coll_tmp_free(c, x->tmp), free(x->done), free(x->sc), free(x->rc);
	free(x->rstep), free(x->rfirst);
	memset(x, 0, sizeof(*x));
}

int mrc__coll_exec_start(struct mrc_coll *c, struct mrc__coll_exec *x,
			 const struct mrc__coll_sched *s, const void *in, void *out, int dtype,
			 int op)
{
	*x = (struct mrc__coll_exec){ .s = s, .in = in, .out = out,
				      .esz = mrc_coll_dtype_size(dtype), .dtype = dtype, .op = op };
	if (c->err)
		return c->err;
	int pr = mrc__coll_pick(c, in, out);    /* host or device table */
	if (pr)
		return pr;
	x->ops = c->ops;
	x->spread = s->any_plane && c->sets > 1;
	x->done = calloc(s->n ? s->n : 1, 1);
	x->sc = calloc(c->np, sizeof(*x->sc)), x->rc = calloc(c->np, sizeof(*x->rc));
	x->rstep = x->spread ? calloc(s->n ? s->n : 1, sizeof(*x->rstep)) : NULL;
	x->rfirst = x->spread ? calloc(c->n + 1, sizeof(*x->rfirst)) : NULL;
	if (s->tmp_bytes)
		x->tmp = mrc__coll_tmp_alloc(c, s->tmp_bytes);
	if (!x->done || !x->sc || !x->rc || (s->tmp_bytes && !x->tmp) ||
	    (x->spread && (!x->rstep || !x->rfirst))) {
		mrc__coll_exec_end(c, x);
		return -ENOMEM;
	}
	prep_steps(c, x, x->spread, x->rfirst, x->rstep, x->rc);
	for (uint32_t j = 0; j < c->np; j++) {
		x->sc[j] = next_step(s, 0, SK_SEND, j);
		x->rc[j] = x->spread && j < c->n && !c->p[j].shm ? s->n : next_step(s, 0, SK_RECV, j);
	}
	mrc__coll_strag_begin(c);
	return 0;
}

/* One pass over the peers: 1 when every step is done, 0 when some are
 * left (x->prog: how many moved in this pass; x->shm: one waits on a
 * shared-memory ring), or the error. */
int mrc__coll_exec_step(struct mrc_coll *c, struct mrc__coll_exec *x)
{
	const struct mrc__coll_sched *s = x->s;
	size_t *sc = x->sc, *rc = x->rc;
	int err;
	mrc__coll_use(c, x->ops);
	x->prog = mrc__coll_poll_peers(c);
	if (x->prog < 0)
		return x->prog;
	if (!x->left) {
		for (uint32_t r = 0; x->spread && r < c->n; r++)
			if (!c->p[r].shm)   /* spread chunks only */
				c->p[r].any_rx += x->rfirst[r + 1] - x->rfirst[r];
		mrc__coll_strag_end(c);
		return 1;
	}
	x->shm = 0;
	for (uint32_t j = 0; j < c->np; j++) {
		struct mrc__coll_peer *p = &c->p[j];
		if (j % c->n == c->me)
			continue;
		if (p->shm) {   /* never spread: one ordered ring each way */
			if ((err = shm_peer(c, x, j, rc, sc)))
				return err;
			x->shm |= rc[j] < s->n || sc[j] < s->n;
			continue;
		}
		if (x->spread && j < c->n &&
		    (err = spread_peer(c, x, j, sc, x->rstep, x->rfirst)))
			return err;
		if ((err = qp_peer(c, x, j, rc, sc, x->spread && j < c->n)))
			return err;
	}
	return c->err;
}

int mrc__coll_idle(struct mrc_coll *c, int progressed, int shm)
{
	c->idle.shm = shm;
	return idle_step(c, &c->idle, progressed);
}

void mrc__coll_idle_reset(struct mrc_coll *c)
{
	c->idle = (struct mrc__coll_idle){ mrc__coll_now_ms(), 0, 0 };
}

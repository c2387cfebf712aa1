/* Straggler records (docs/coll.md "Stragglers", `mrcctl stragglers`):
 * libmrc-coll files what mrc_coll_straggler named on its own client
 * socket; the record is kept with the connection's SO_PEERCRED uid and
 * pid, never values the client sent, in a bounded ring of its uid (the
 * oldest overwritten, counted).  Each client is rate-bounded (a token
 * bucket) and the uids with rings are bounded, so no client can make
 * mrcd hold more than STRAG_USERS x STRAG_RING records. */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "daemon/clients/clients_int.h"

#define STRAG_RING 32              /* records kept per uid */
#define STRAG_USERS 64             /* uids with a ring */
#define STRAG_RATE 20              /* records per second per client ... */
#define STRAG_BURST 40             /* ... after a burst of this many */

struct strag_ring {
	uid_t uid;
	uint32_t head, n;              /* next slot; records held */
	struct mrcd_strag_view r[STRAG_RING];
};

static struct {
	struct strag_ring *u[STRAG_USERS];
	uint32_t nu;
	struct mrcd_strag_counters k;
} G;

static struct strag_ring *ring_of(uid_t uid)
{
	for (uint32_t i = 0; i < G.nu; i++)
		if (G.u[i]->uid == uid)
			return G.u[i];
	if (G.nu == STRAG_USERS)
		return NULL;
	struct strag_ring *g = calloc(1, sizeof(*g));
	if (g) {
		g->uid = uid;
		G.u[G.nu++] = g;
	}
	return g;
}

/* The client's token bucket: STRAG_RATE per second, STRAG_BURST at most. */
static int rate_take(struct mrcd_client *c)
{
	uint64_t now = mrcd_now(), per = 1000000000ull / STRAG_RATE;
	if (!c->strag_ns) {
		c->strag_ns = now;
		c->strag_tok = STRAG_BURST;
	}
	uint64_t add = (now - c->strag_ns) / per;
	if (add) {
		c->strag_tok = add >= STRAG_BURST ? STRAG_BURST
			: (uint32_t)(c->strag_tok + add > STRAG_BURST ? STRAG_BURST : c->strag_tok + add);
		c->strag_ns += add * per;   /* keeps the remainder toward the next token */
	}
	if (!c->strag_tok)
		return 0;
	c->strag_tok--;
	return 1;
}

int mrcd__do_straggler(struct mrcd_client *c, const struct mrc_cli_msg *m)
{
	if (!rate_take(c)) {
		G.k.rate_refused++;
		return fail(c, m, -EAGAIN, "more than %d straggler records a second", STRAG_RATE);
	}
	struct strag_ring *g = ring_of(c->uid);
	if (!g) {
		G.k.users_refused++;
		return fail(c, m, -ENOSPC, "straggler records of %d users held already", STRAG_USERS);
	}
	struct mrcd_strag_view *v = &g->r[g->head];
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	v->time_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	v->uid = c->uid;
	v->pid = c->pid;
	memcpy(&v->s, m->body, sizeof(v->s));   /* checked by mrc__cli_dec_req */
	g->head = (g->head + 1) % STRAG_RING;
	if (g->n == STRAG_RING)
		G.k.dropped++;
	else
		g->n++;
	G.k.filed++;
	return ok(c, m, NULL, 0);
}

int mrcd_strag_next(uint32_t *it, struct mrcd_strag_view *v)
{
	/* *it counts records over the rings in order, oldest first in each */
	uint32_t k = *it;
	for (uint32_t i = 0; i < G.nu; i++) {
		const struct strag_ring *g = G.u[i];
		if (k < g->n) {
			*v = g->r[(g->head + STRAG_RING - g->n + k) % STRAG_RING];
			(*it)++;
			return 1;
		}
		k -= g->n;
	}
	return 0;
}

void mrcd_strag_counters(struct mrcd_strag_counters *k)
{
	*k = G.k;
	k->users = G.nu;
	k->ring = STRAG_RING;
}

void mrcd__strag_free(void)
{
	for (uint32_t i = 0; i < G.nu; i++)
		free(G.u[i]);
	memset(&G, 0, sizeof(G));
}

/* The loss evidence of mrc_coll_straggler (docs/coll.md "Stragglers"):
 * a QP's retransmissions tell a lossy link from a slow CPU, which delays
 * deliveries alike.  Only the caller's own QPs. */
static struct mrc_cli_qp_stats_rep stats_rep(const struct mrce_qp_info *i)
{
	return (struct mrc_cli_qp_stats_rep){ .tx_pkts = i->tx_pkts, .retx = i->retx,
					      .rto_fires = i->rto_fires, .nacks_rx = i->nacks_rx };
}

int mrcd__do_qp_stats(struct mrcd_client *c, const struct mrc_cli_msg *m)
{
	struct mrce_qp_info info;
	if (!qp_engine_info(c, m, &info))
		return 0;   /* replied */
	struct mrc_cli_qp_stats_rep rep = stats_rep(&info);
	return ok(c, m, &rep, sizeof(rep));
}

/* QP_STATS_N: up to MRC_CLI_QP_STATS_N_MAX QPs' counters in one round
 * trip (mrc_coll_straggler asks for all its QPs at once).  Each QPN is
 * looked up among the caller's own QPs as QP_STATS does; any other gets
 * -ENOENT and zero counters, so a client learns nothing of another's
 * traffic, not even which of its numbers are live. */
int mrcd__do_qp_stats_n(struct mrcd_client *c, const struct mrc_cli_msg *m)
{
	struct mrc_cli_qp_stats_n q;
	memcpy(&q, m->body, sizeof(q));   /* n checked by mrc__cli_dec_req */
	struct mrc_cli_qp_stats_n_rep rep = { .n = q.n };
	for (uint32_t i = 0; i < q.n; i++) {
		struct mrc_cli_qp_stats_n_rec *r = &rep.rec[i];
		struct mrce_qp_info info = { 0 };
		r->qpn = q.qpn[i];
		r->status = find_qp(c, q.qpn[i]) ? mrce_qp_info(mrcd_engine(c->d), q.qpn[i], &info)
						 : -ENOENT;
		if (!r->status)
			r->s = stats_rep(&info);
	}
	return ok(c, m, &rep, sizeof(rep));
}

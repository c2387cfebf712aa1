/* Fabric-link health in mrcsim (issue 34, docs/health.md "In mrcsim"):
 * each host runs health/'s localisation, fed from its engine's events and
 * EV state the way mrcd's daemon/core/health.c feeds it, and denies the
 * EVs crossing a DENIED link through mrce_ev_set_bad as deny.c does.
 *
 * Time: mrcd evaluates on a 10 ms timer; here each host evaluates when
 * it is next serviced at or after its tick (a host nobody services is not
 * sending).  The tick is the option's (health=shared,1ms), 10 ms unless
 * set, so short runs can be studied at a finer grain.
 *
 * Sharing (health=shared), as mrcd, by health/feed.h's one rule and
 * bound: every MRC_HEALTH_SHARE_TICKS ticks a host with a failure of its
 * own or a link not OK exports its newest observations (at most
 * MRCE_CTRL_HEALTH_MAX, as the CTRL message carries) to its next
 * MRC_HEALTH_SHARE_PEERS peers in turn, who merge them SHARE_LAT_NS
 * later; a failure is told at once to MRC_HEALTH_TELL_PEERS peers at most
 * every MRC_HEALTH_TELL_TICKS ticks.  mrcd's receive bound (one share and
 * one tell per sender per 50 ms) is not modelled: it never drops a share,
 * and may drop tells.
 *
 * Suspicion (health/suspect.h), as mrcd: a host's path retired for a
 * failure takes its paths through the same uplink out at once, and with
 * sharing the failure is told to its peers at once, acted on when it
 * arrives (not at the tick: mrcd acts on a HEALTH as it reads it).
 *
 * Figures (health set, off included): packets that entered a blackholed
 * port, the hosts whose data packets they were, and when the last one did;
 * and hosts that ever held DENIED a link with no fault on it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "health/feed.h"
#include "health/suspect.h"
#include "sim/report_int.h"
#include "transport/engine_wire.h"

#define SHARE_LAT_NS 10000ull
#define MSG_MAX MRCE_CTRL_HEALTH_MAX

struct hmsg {
	uint32_t from, n;
	uint64_t at_ns;            /* delivered then */
	struct mrc_health_obs obs[MSG_MAX];
	uint64_t age[MSG_MAX];
};

struct hhost {
	struct mrc_health *h;
	uint64_t next_ns;
	uint32_t ticks;
	struct mrc_health_share_st share;
	uint64_t **prev;           /* [peer][engine ev] tx_pkts last tick */
	uint8_t **mine;            /* [peer][engine ev] denied by us */
	uint8_t *live;             /* [peer] the next feed reads its EVs */
	uint64_t dropped;          /* the engine's events_dropped, last feed */
	uint32_t *inbox, nin, cin, hin;   /* message ids; head hin */
	uint32_t sin;              /* inbox head for suspicions (on delivery) */
};

struct sim_health {
	struct hhost *hh;
	struct hmsg *log;
	uint32_t nlog, clog;
	uint8_t *sent;             /* [host] its packets entered a dead port */
	uint8_t *wrong;            /* [host] it held a healthy link DENIED */
	uint32_t nwrong;
	uint64_t *sent_msgs;       /* [host] HEALTH messages it sent */
	uint64_t *per_msgs;        /* [2 host]: its sharing period, and the
	                              messages it sent in it */
	uint64_t max_per;          /* the most one host sent in one period */
	/* suspicions (own and told), and the peers whose EVs they read */
	uint64_t sus_n, sus_peers;
	/* peers the per-tick feed read, and left unread as idle */
	uint64_t feed_read, feed_idle;
	/* the first wrong denial: which host, link, when, on what evidence */
	uint32_t w_host, w_link;
	uint64_t w_ns;
	struct mrc_health_link w_li;
};

static inline uint64_t now_ns(const struct mrc_sim *s) { return s->now / SIM_PS_PER_NS; }

static uint32_t peer_nev(const struct mrc_sim *s, const struct sim_host *x, uint32_t p)
{
	return x->evmap ? x->nevmap[p] : s->fab.nev;
}

static uint32_t fab_ev(const struct sim_host *x, uint32_t p, uint32_t ev)
{
	return x->evmap ? x->evmap[p][ev] : ev;
}

int sim_health_init(struct mrc_sim *s)
{
	uint32_t H = s->fab.n_hosts;
	if (!s->cfg.health)
		return 0;
	struct sim_health *g = calloc(1, sizeof(*g));
	if (!g || !(g->hh = calloc(H, sizeof(*g->hh))) || !(g->sent = calloc(H, 1)) ||
	    !(g->wrong = calloc(H, 1)) || !(g->sent_msgs = calloc(H, sizeof(uint64_t))) ||
	    !(g->per_msgs = calloc(2 * (size_t)H, sizeof(uint64_t))))
		goto oom;
	s->health = g;
	if (s->cfg.health == MRC_SIM_HEALTH_OFF)
		return 0;
	/* a small table: a host's own paths and what its peers send */
	/* slack: mrcd's 20 ms is two of its ticks; a failure re-reported
	 * each tick is that much newer than the last ACK of a working path. */
	struct mrc_health_cfg hc = { .max_obs = 4096,
				     .slack_ns = 2 * s->cfg.health_tick_ns,
				     .confirm_ns = mrc_health_confirm_ns(s->cfg.health_tick_ns,
									 s->ecfg.probe_interval_ns) };
	for (uint32_t i = 0; i < H; i++) {
		struct hhost *q = &g->hh[i];
		const struct sim_host *x = &s->hosts[i];
		q->prev = calloc(x->npeers + 1, sizeof(*q->prev));
		q->mine = calloc(x->npeers + 1, sizeof(*q->mine));
		q->live = malloc(x->npeers + 1);
		if (!q->prev || !q->mine || !q->live || mrc_health_new(s->fab.topo, i, &hc, &q->h))
			goto oom;
		memset(q->live, 1, x->npeers + 1);
		for (uint32_t p = 0; p < x->npeers; p++)
			if (!(q->prev[p] = calloc(peer_nev(s, x, p), sizeof(uint64_t))) ||
			    !(q->mine[p] = calloc(peer_nev(s, x, p), 1)))
				goto oom;
	}
	return 0;
oom:
	sim_health_free(s);
	return -ENOMEM;
}

void sim_health_free(struct mrc_sim *s)
{
	struct sim_health *g = s->health;
	if (!g)
		return;
	for (uint32_t i = 0; g->hh && i < s->fab.n_hosts; i++) {
		struct hhost *q = &g->hh[i];
		for (uint32_t p = 0; p < s->hosts[i].npeers; p++) {
			if (q->prev)
				free(q->prev[p]);
			if (q->mine)
				free(q->mine[p]);
		}
		free(q->prev);
		free(q->mine);
		free(q->live);
		free(q->inbox);
		mrc_health_free(q->h);
	}
	free(g->hh);
	free(g->log);
	free(g->sent);
	free(g->wrong);
	free(g->sent_msgs);
	free(g->per_msgs);
	free(g);
	s->health = NULL;
}

/* A packet of host src entered a blackholed port.  Senders and the last
 * time count data only: a retired EV, or one health set ASSUMED_BAD, is
 * probed into the dead link on purpose, to see it heal. */
void sim_health_dead(struct mrc_sim *s, const struct sim_pkt *k)
{
	struct sim_health *g = s->health;
	if (!g || !k->plen)
		return;
	uint32_t l = k->route[0] >> 1;
	const struct mrc_node *n = &s->fab.nodes[s->fab.lower[l]];
	if (n->tier == 0 && n->index < s->fab.n_hosts && !g->sent[n->index]) {
		g->sent[n->index] = 1;
		s->hfig.senders++;
	}
	s->hfig.last_ps = s->now;
}

/* Whether a path between hosts a and b can cross link at all: a host's
 * or a leaf's uplink carries only the paths that start or end below it
 * (a route goes up, then down).  suspect() reads every EV of a peer only
 * where this holds: in an all-to-all it read every EV of every peer for
 * each failure told, to each of up to 512 receivers, and that took most
 * of mrcsim's time with sharing on (docs/health.md "The cost of a
 * told failure"). */
static int may_cross(const struct mrc_topo *t, uint32_t a, uint32_t b, uint32_t link)
{
	const struct mrc_link *l = &t->links[link];
	uint8_t tier = t->nodes[l->lower].tier;
	if (tier > MRC_TIER_LEAF)
		return 1;
	for (int i = 0; i < 2; i++) {
		uint32_t hl = t->host_link[(size_t)(i ? b : a) * t->planes + l->plane];
		if (hl != MRC_TOPO_NONE &&
		    (tier == MRC_TIER_HOST ? t->links[hl].lower : t->links[hl].upper) == l->lower)
			return 1;
	}
	return 0;
}

/* health/suspect.h, as mrcd's health event hook: the host's GOOD paths
 * to any peer through the uplink a failure retired one of its paths on
 * go out of use (probed) at once. */
static void suspect(struct mrc_sim *s, uint32_t h, uint32_t link)
{
	const struct sim_host *x = &s->hosts[h];
	s->health->sus_n++;
	for (uint32_t p = 0; p < x->npeers; p++) {
		if (!may_cross(s->fab.topo, h, x->peer_host[p], link))
			continue;
		s->health->sus_peers++;
		uint32_t nev = peer_nev(s, x, p), good = 0;
		struct mrce_ev_info i;
		for (uint32_t ev = 0; ev < nev; ev++)
			good += !mrce_ev_info(x->eng, p, ev, &i) && i.state == MRCE_EV_GOOD;
		/* Never below half the peer's paths: a liar naming every
		 * uplink of its leaf leaves the rest (health/suspect.h). */
		for (uint32_t ev = 0; ev < nev && 2 * good >= nev + 2; ev++) {
			if (mrce_ev_info(x->eng, p, ev, &i) || i.state != MRCE_EV_GOOD ||
			    !mrc_health_path_crosses(s->fab.topo, h, x->peer_host[p],
						     fab_ev(x, p, ev), link))
				continue;
			if (!mrce_ev_set_bad(x->eng, now_ns(s), p, ev)) {
				s->hfig.suspects++;
				good--;
			}
		}
	}
}

static void post(struct mrc_sim *s, uint32_t h, const struct mrc_health_obs *o, size_t n,
		 uint64_t now, uint32_t first, uint32_t npost);

/* What mrcd's health event hook takes: EVs retired for a failure, EVs
 * back by probes, probes answered. */
void sim_health_event(struct mrc_sim *s, uint32_t h, const struct mrce_event *ev)
{
	struct sim_health *g = s->health;
	if (!g || !g->hh[h].h || ev->peer >= s->hosts[h].npeers)
		return;
	const struct sim_host *x = &s->hosts[h];
	uint32_t peer = x->peer_host[ev->peer], fev = fab_ev(x, ev->peer, ev->ev), link;
	g->hh[h].live[ev->peer] = 1;   /* an EV of it changed state */
	mrc_health_feed_event(g->hh[h].h, peer, fev, ev);
	if (!mrc_health_suspect_uplink(s->fab.topo, h, peer, fev, ev, &link))
		return;
	suspect(s, h, link);
	/* As mrcd: the failure goes to the peers at once (sharing on), at
	 * most once per tick. */
	struct hhost *q = &g->hh[h];
	uint64_t now = now_ns(s);
	uint32_t first, n;
	if (s->cfg.health != MRC_SIM_HEALTH_SHARED ||
	    !(n = mrc_health_tell_peers(&q->share, now, s->cfg.health_tick_ns, x->npeers, &first)))
		return;
	struct mrc_health_obs o = { .src = h, .dst = peer, .ev = (uint16_t)fev, .ok = 0,
				    .ts_ns = now };
	post(s, h, &o, 1, now, first, n);
}

/* As mrcd on a HEALTH's arrival (not at the tick): each failure told
 * suspects the teller's uplink here too (health/suspect.h). */
static void told(struct mrc_sim *s, uint32_t h, uint64_t now)
{
	struct sim_health *g = s->health;
	struct hhost *q = &g->hh[h];
	for (; q->sin < q->nin && g->log[q->inbox[q->sin]].at_ns <= now; q->sin++) {
		const struct hmsg *m = &g->log[q->inbox[q->sin]];
		for (uint32_t i = 0; i < m->n; i++) {
			uint32_t link;
			if (m->obs[i].src == m->from &&
			    mrc_health_suspect_told(s->fab.topo, &m->obs[i], &link))
				suspect(s, h, link);
		}
	}
}

/* A data packet of host h to its peer p (engine numbering) went out:
 * an EV of p carried it, so the next feed reads p. */
void sim_health_tx(struct mrc_sim *s, uint32_t h, uint32_t p)
{
	struct sim_health *g = s->health;
	if (g && g->hh[h].live && p < s->hosts[h].npeers)
		g->hh[h].live[p] = 1;
}

/* mrcd's per-tick feed: GOOD EVs that carried packets work, EVs still
 * retired for a failure keep failing, ECN and trims counted.  Only the
 * peers whose EVs can say something are read: one that sent since
 * (sim_health_tx), changed an EV's state (sim_health_event) or has one
 * ASSUMED_BAD; a peer whose EVs are GOOD and unused, or DENIED (the
 * EVs a fabric lacks), says nothing.
 * Reading every EV of every peer each tick cost O(peers x EVs) per host
 * per tick, most of the time left with sharing on at 512 hosts. */
static void feed(struct mrc_sim *s, uint32_t h, uint64_t now)
{
	struct hhost *q = &s->health->hh[h];
	const struct sim_host *x = &s->hosts[h];
	struct mrce_stats st;
	mrce_stats(x->eng, &st);
	if (st.events_dropped != q->dropped) {
		q->dropped = st.events_dropped;   /* a state change went unseen */
		memset(q->live, 1, x->npeers);
	}
	for (uint32_t p = 0; p < x->npeers; p++) {
		if (!q->live[p]) {
			s->health->feed_idle++;
			continue;
		}
		s->health->feed_read++;
		q->live[p] = 0;
		for (uint32_t ev = 0; ev < peer_nev(s, x, p); ev++) {
			struct mrce_ev_info i;
			if (q->mine[p][ev] || mrce_ev_info(x->eng, p, ev, &i))
				continue;
			uint32_t peer = x->peer_host[p], fev = fab_ev(x, p, ev);
			mrc_health_feed_ev(q->h, peer, fev, &i, q->prev[p][ev], now);
			q->prev[p][ev] = i.tx_pkts;
			q->live[p] |= i.state == MRCE_EV_ASSUMED_BAD;
		}
	}
}

/* One HEALTH message of host h to npost of its peers from first on
 * (health/feed.h's turn), delivered SHARE_LAT_NS later. */
static void post(struct mrc_sim *s, uint32_t h, const struct mrc_health_obs *o, size_t n,
		 uint64_t now, uint32_t first, uint32_t npost)
{
	struct sim_health *g = s->health;
	if (g->nlog == g->clog) {
		uint32_t c = g->clog ? 2 * g->clog : 64;
		struct hmsg *nl = realloc(g->log, c * sizeof(*nl));
		if (!nl)
			return;
		g->log = nl;
		g->clog = c;
	}
	struct hmsg *m = &g->log[g->nlog];
	m->from = h;
	m->n = (uint32_t)n;
	m->at_ns = now + SHARE_LAT_NS;
	for (size_t i = 0; i < n; i++) {
		m->obs[i] = o[i];
		m->age[i] = now - o[i].ts_ns;
	}
	const struct sim_host *x = &s->hosts[h];
	for (uint32_t k = 0; k < npost; k++) {
		uint32_t p = (uint32_t)(((uint64_t)first + k) % x->npeers);
		struct hhost *r = &g->hh[x->peer_host[p]];
		if (r->nin == r->cin) {
			uint32_t c = r->cin ? 2 * r->cin : 16;
			uint32_t *ni = realloc(r->inbox, c * sizeof(*ni));
			if (!ni)
				continue;
			r->inbox = ni;
			r->cin = c;
		}
		r->inbox[r->nin++] = g->nlog;
		s->hfig.share_msgs++;
		s->hfig.tell_msgs += n == 1 && !o[0].ok;
		s->hfig.recs += n;
		g->sent_msgs[h]++;
	}
	/* the bound's figure: messages a host sent within one sharing period */
	uint64_t per = now / (MRC_HEALTH_SHARE_TICKS * s->cfg.health_tick_ns), *c = &g->per_msgs[2 * h];
	if (c[0] != per) {
		c[0] = per;
		c[1] = 0;
	}
	c[1] += npost;
	if (c[1] > g->max_per)
		g->max_per = c[1];
	g->nlog++;
}

static void share(struct mrc_sim *s, uint32_t h, uint64_t now, int period)
{
	struct hhost *q = &s->health->hh[h];
	struct mrc_health_obs o[MSG_MAX];
	size_t n;
	uint32_t first, np;
	if (!mrc_health_feed_share(q->h, now, period, o, MSG_MAX, &n, &q->share))
		return;
	np = mrc_health_share_peers(&q->share, period, s->hosts[h].npeers, &first);
	post(s, h, o, n, now, first, np);
}

static void receive(struct mrc_sim *s, uint32_t h, uint64_t now)
{
	struct sim_health *g = s->health;
	struct hhost *q = &g->hh[h];
	for (; q->hin < q->nin && g->log[q->inbox[q->hin]].at_ns <= now; q->hin++) {
		const struct hmsg *m = &g->log[q->inbox[q->hin]];
		/* The age is the sender's; merge restamps it on our clock.  Aged
		 * by the time since it was sent: mrcd ignores the transit (us
		 * against its 10 ms tick), but here the tick is a few us, and
		 * news 2 ticks old read as fresh outranked the sender's own
		 * newer retraction of it (a healthy link denied). */
		uint64_t age[MSG_MAX], sent = m->at_ns - SHARE_LAT_NS;
		for (uint32_t i = 0; i < m->n; i++)
			age[i] = m->age[i] + (now - sent);
		int took = mrc_health_merge(q->h, m->from, m->obs, age, m->n, now);
		s->hfig.refused += m->n - (uint32_t)(took > 0 ? took : 0);
	}
}

/* deny.c's HEALTH reason: an EV is denied while it crosses a DENIED
 * link; only EVs this module denied are re-admitted. */
static void apply(struct mrc_sim *s, uint32_t h, uint64_t now)
{
	struct hhost *q = &s->health->hh[h];
	const struct sim_host *x = &s->hosts[h];
	for (uint32_t p = 0; p < x->npeers; p++)
		for (uint32_t ev = 0; ev < peer_nev(s, x, p); ev++) {
			int d = mrc_health_path_denied(q->h, x->peer_host[p], fab_ev(x, p, ev)) == 1;
			struct mrce_ev_info i;
			if (d == q->mine[p][ev] || mrce_ev_info(x->eng, p, ev, &i))
				continue;
			if (!d) {
				q->mine[p][ev] = 0;   /* it comes back through its probes */
				q->live[p] = 1;       /* and the feed reads it again */
				continue;
			}
			if (i.state != MRCE_EV_GOOD)
				continue;   /* out already: retired, or someone else's denial */
			/* As deny.c: ASSUMED_BAD, not DENIED, so the EV is probed and
			 * answers its peer's probes, and a healed link comes back. */
			if (!mrce_ev_set_bad(x->eng, now, p, ev)) {
				q->mine[p][ev] = 1;
				s->hfig.denials++;
			}
		}
}

/* The figure that says a denial was wrong: this host holds DENIED a link
 * with no fault in either direction. */
static void check_denied(struct mrc_sim *s, uint32_t h)
{
	struct sim_health *g = s->health;
	uint32_t ids[64];
	size_t n;
	if (g->wrong[h] || mrc_health_links(g->hh[h].h, MRC_HEALTH_DENIED, ids, 64, &n))
		return;
	for (size_t i = 0; i < n && i < 64; i++)
		if (s->ports[2 * ids[i]].state == PS_OK && s->ports[2 * ids[i] + 1].state == PS_OK) {
			if (!g->nwrong) {
				g->w_host = h;
				g->w_link = ids[i];
				g->w_ns = now_ns(s);
				mrc_health_link_get(g->hh[h].h, ids[i], &g->w_li);
			}
			g->wrong[h] = 1;
			g->nwrong++;
			return;
		}
}

void sim_health_tick(struct mrc_sim *s, uint32_t h)
{
	struct sim_health *g = s->health;
	if (!g || !g->hh[h].h)
		return;
	struct hhost *q = &g->hh[h];
	uint64_t now = now_ns(s), tick = s->cfg.health_tick_ns;
	if (s->cfg.health == MRC_SIM_HEALTH_SHARED)
		told(s, h, now);
	if (now < q->next_ns)
		return;
	q->next_ns = (now / tick + 1) * tick;
	feed(s, h, now);
	if (s->cfg.health == MRC_SIM_HEALTH_SHARED) {
		receive(s, h, now);
		share(s, h, now, ++q->ticks % MRC_HEALTH_SHARE_TICKS == 0);
	}
	if (mrc_health_eval(q->h, now) > 0) {
		apply(s, h, now);
		check_denied(s, h);
	}
}

/* The figures, as a text report line (json 0) or a JSON member. */
void sim_health_fmt(const struct mrc_sim *s, int json, char *buf, size_t len)
{
	static const char *const names[] = { "unset", "off", "local", "shared" };
	struct fct_stats fs;
	sim_rep_fct_stats(s, &fs);
	free(fs.sorted);
	const char *mode = names[s->cfg.health & 3];
	const struct sim_health *g = s->health;
	unsigned long long maxh = 0;
	for (uint32_t h = 0; g && g->sent_msgs && h < s->fab.n_hosts; h++)
		maxh = g->sent_msgs[h] > maxh ? g->sent_msgs[h] : maxh;
	/* the first wrong denial, with its evidence at that host */
	char fw[160] = "";
	if (g && g->nwrong) {
		const struct mrc_link *l = &s->fab.topo->links[g->w_link];
		snprintf(fw, sizeof(fw), json ? ", \"first_wrong\": \"host %u %s-%s at %.3f us, "
			 "failed paths %u from %u hosts, working %u\"" :
			 "; first wrong: host %u %s-%s at %.3f us, failed paths %u from %u hosts, "
			 "working %u", g->w_host, s->fab.topo->nodes[l->lower].name,
			 s->fab.topo->nodes[l->upper].name, (double)g->w_ns / 1e3,
			 g->w_li.fail_paths, g->w_li.fail_hosts, g->w_li.good_paths);
	}
	unsigned long long tells = (unsigned long long)s->hfig.tell_msgs,
		recs = (unsigned long long)s->hfig.recs,
		refused = (unsigned long long)s->hfig.refused;
	unsigned long long lost = (unsigned long long)s->drop_blackhole,
		senders = (unsigned long long)s->hfig.senders,
		last = (unsigned long long)(s->hfig.last_ps / SIM_PS_PER_NS),
		msgs = (unsigned long long)s->hfig.share_msgs,
		den = (unsigned long long)s->hfig.denials,
		sus = (unsigned long long)s->hfig.suspects,
		wrong = s->health ? s->health->nwrong : 0;
	if (json)
		snprintf(buf, len, "  \"health\": {\"mode\": \"%s\", \"tick_ns\": %llu, "
			 "\"dead_link_pkts\": %llu, \"dead_link_senders\": %llu, "
			 "\"last_dead_ns\": %llu, \"slowest_ideal\": %.4f, \"share_msgs\": %llu, "
			 "\"denied_evs\": %llu, \"suspected_evs\": %llu, \"wrong_deny_hosts\": %llu, "
			 "\"told_msgs\": %llu, \"share_recs\": %llu, \"recs_refused\": %llu, "
			 "\"max_host_msgs\": %llu, \"max_period_msgs\": %llu, "
			 "\"suspicions\": %llu, \"suspect_peers_read\": %llu, "
			 "\"feed_peers_read\": %llu, \"feed_peers_idle\": %llu%s},\n",
			 mode, (unsigned long long)s->cfg.health_tick_ns, lost, senders, last,
			 fs.max, msgs, den, sus, wrong, tells, recs, refused, maxh,
			 g ? (unsigned long long)g->max_per : 0ull,
			 g ? (unsigned long long)g->sus_n : 0ull,
			 g ? (unsigned long long)g->sus_peers : 0ull,
			 g ? (unsigned long long)g->feed_read : 0ull,
			 g ? (unsigned long long)g->feed_idle : 0ull, fw);
	else
		snprintf(buf, len, "health    %s (tick %llu us): dead-link packets %llu from %llu "
			 "hosts, last at %.3f us; slowest/ideal %.3f; shared %llu, EVs denied "
			 "%llu, suspected %llu, hosts denying a healthy link %llu; told %llu, "
			 "records %llu (%llu not merged), most from one host %llu (%llu in a period)%s\n",
			 mode,
			 (unsigned long long)s->cfg.health_tick_ns / 1000, lost, senders,
			 (double)last / 1e3, fs.max, msgs, den, sus, wrong, tells, recs, refused,
			 maxh, g ? (unsigned long long)g->max_per : 0ull, fw);
}

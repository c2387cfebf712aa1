/* Fabric-link health in mrcd (issue 34, docs/health.md): the engine's
 * path outcomes into health/'s localisation, its DENIED links into
 * deny.c's HEALTH reason, and a read-only view for `mrcctl fabric`.
 *
 * Outcomes: an EV retired for loss or an RTO is a failed path (again at
 * every tick while it stays retired, so the evidence does not expire
 * under a link that is still dead); an EV that
 * comes back by probes, a probe answered, or a GOOD EV in use whose
 * packets are acknowledged (as of its newest ACK, health/feed.c) is a
 * working one; ECN and trims per EV are
 * counted against its links (never a failure).  Every tick (10 ms) the
 * library re-evaluates, and when a link's state changed every peer's EVs
 * are re-derived (mrcd_deny_update).  Every 100 ms, while it has a failure
 * of its own or a link not OK, it sends its newest observations to its
 * peers in a HEALTH message (never answered: no amplification) and merges
 * what peers send, one message per host per 50 ms at most; a host with
 * more than MRC_HEALTH_SHARE_PEERS peers tells them in turn (health/feed.h's
 * bound).  A path retired for a failure also suspects its uplink at once
 * (health/suspect.h: this host's paths through it to every peer out of
 * use, probed), and is told to peers at once (one HEALTH of one failure,
 * within the bound), each of which suspects the teller's uplink on
 * arrival. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/core/core.h"
#include "health/feed.h"
#include "health/record.h"
#include "health/suspect.h"

#define TICK_S 0.01
#define TICK_NS 10000000ull
/* Sending (health/feed.h, the bound mrcsim shares): a share every
 * MRC_HEALTH_SHARE_TICKS ticks to the next MRC_HEALTH_SHARE_PEERS peers in
 * turn, only while this host has something to say (a failed path of its
 * own, or a link not OK); a failure told at once to MRC_HEALTH_TELL_PEERS
 * peers in turn at most every MRC_HEALTH_TELL_TICKS ticks.  Receiving:
 * from any one host, one share and one failure told at once (a HEALTH of
 * one failed path) are merged per HEALTH_RX_MIN_NS at most, the rest
 * dropped: a tell must not use up the share's turn, or a host whose
 * probes keep failing into a dead link (told every tick) keeps its peers
 * from ever merging its shares, and the link is never located. */
#define HEALTH_RX_MIN_NS 50000000ull

struct mrcd_health {
	struct mrc_health *h;
	struct mrc_health_record *rec;  /* every conviction (health/record.h) */
	ev_timer tick;
	/* [peer] -> [ev] last seen tx_pkts and ecn + trims, on first use */
	uint64_t **prev;
	struct mrc_health_held **held;  /* [peer] -> [ev], health/feed.h */
	uint32_t nprev;
	uint32_t ticks;
	struct mrc_health_share_st share;
	uint64_t *rx_last;      /* [2 host + told] when its last HEALTH (share,
	                           or failure told at once) was merged */
};

static void feed_peer(struct mrcd *d, uint32_t peer, uint64_t now)
{
	struct mrcd_health *m = d->health;
	struct mrcd_peer *p = &d->peers[peer];
	if (!m->prev[peer] && !(m->prev[peer] = calloc(2 * (size_t)p->nev, sizeof(uint64_t))))
		return;
	if (!m->held[peer] && !(m->held[peer] = calloc(p->nev, sizeof(*m->held[peer]))))
		return;
	uint64_t *prev = m->prev[peer];
	for (uint32_t ev = 0; ev < p->nev; ev++) {
		struct mrce_ev_info i;
		/* Health's own denial leaves the EV probed (deny.c): its
		 * return by probes is evidence; other reasons' are not. */
		if ((p->deny[ev] & ~MRCD_DENY_HEALTH) || mrce_ev_info(d->eng, peer, ev, &i))
			continue;
		uint64_t cong = i.ecn + i.trims;
		if (cong > prev[2 * ev + 1])
			mrc_health_path_congested(m->h, p->host, ev, cong - prev[2 * ev + 1]);
		mrc_health_feed_ev(m->h, p->host, ev, &i, prev[2 * ev], now);
		/* A suspected uplink's hold only: a denied link's EVs are out
		 * on located evidence already, and their probes adding to it
		 * would only make a wrong denial stick. */
		if (p->deny[ev] & MRCD_DENY_HEALTH)
			m->held[peer][ev].since = 0;
		else
			mrc_health_feed_held(m->h, p->host, ev, &i, &m->held[peer][ev], now);
		prev[2 * ev] = i.tx_pkts;
		prev[2 * ev + 1] = cong;
	}
}

static const char *host_name(const struct mrcd *d, uint32_t host)
{
	return d->topo->nodes[d->topo->hosts[host]].name;
}

/* Each conviction counted and recorded, its evidence logged: brief ones
 * happen between any two polls of `mrcctl fabric`. */
static void note_convictions(struct mrcd *d, uint64_t now)
{
	struct mrcd_health *m = d->health;
	uint64_t seq0 = mrc_health_record_located(m->rec);
	if (mrc_health_record_note(m->rec, m->h, now) <= 0)
		return;
	d->st.health_located = mrc_health_record_located(m->rec);
	d->st.health_denied = mrc_health_record_denied(m->rec);
	struct mrc_health_rec r;
	for (uint32_t i = 0; !mrc_health_record_get(m->rec, i, &r); i++) {
		if (r.seq < seq0 && r.denied_ns != now)
			continue;
		char ev[MRC_HEALTH_REC_EVIDENCE * 40] = "";
		size_t o = 0;
		for (uint32_t k = 0; k < r.n_evidence && o < sizeof(ev); k++)
			o += (size_t)snprintf(ev + o, sizeof(ev) - o, " %s->%s/ev%u@-%llums",
					      host_name(d, r.evidence[k].src),
					      host_name(d, r.evidence[k].dst), r.evidence[k].ev,
					      (unsigned long long)((now - r.evidence[k].ts_ns) / 1000000));
		const struct mrc_link *l = &d->topo->links[r.link];
		/* `mrcctl events` (kind fabric); the log line has the rest. */
		mrcd_note(d, "fabric", "fabric link %s-%s convicted: %s, %u failed paths from %u hosts:%.120s",
			  d->topo->nodes[l->lower].name, d->topo->nodes[l->upper].name,
			  mrc_health_state_name(r.state), r.fail_paths, r.fail_hosts, ev);
		mrcd_log(MRCD_LOG_WARNING,
			 "fabric link %s-%s convicted: %s (failed paths %u from %u hosts, working %u, "
			 "newest working %lld ms ago; evidence:%s)",
			 d->topo->nodes[l->lower].name, d->topo->nodes[l->upper].name,
			 mrc_health_state_name(r.state), r.fail_paths, r.fail_hosts, r.good_paths,
			 r.good_ns ? (long long)((int64_t)(now - r.good_ns) / 1000000) : -1LL, ev);
	}
}

static void log_changes(struct mrcd *d, uint64_t now)
{
	uint32_t ids[64];
	size_t n;
	mrc_health_links(d->health->h, MRC_HEALTH_SUSPECT, ids, 64, &n);
	for (size_t k = 0; k < n && k < 64; k++) {
		struct mrc_health_link li;
		mrc_health_link_get(d->health->h, ids[k], &li);
		if (li.changed_ns != now)
			continue;
		const struct mrc_link *l = &d->topo->links[ids[k]];
		mrcd_log(li.state >= MRC_HEALTH_LOCATED ? MRCD_LOG_WARNING : MRCD_LOG_INFO,
			 "fabric link %s-%s: %s (failed paths %u from %u hosts, working %u)",
			 d->topo->nodes[l->lower].name, d->topo->nodes[l->upper].name,
			 mrc_health_state_name(li.state), li.fail_paths, li.fail_hosts,
			 li.good_paths);
	}
}

/* health/suspect.h: this host's GOOD paths to any peer through the uplink
 * a failure retired one of its paths on go out of use at once, probed
 * (ASSUMED_BAD, as deny.c's HEALTH reason; no deny bit, so a probe
 * answered brings one back). */
static void suspect(struct mrcd *d, uint32_t link, uint64_t now)
{
	for (uint32_t peer = 0; peer < d->max_peers; peer++) {
		const struct mrcd_peer *p = &d->peers[peer];
		struct mrce_ev_info i;
		uint32_t good = 0;
		if (!p->used || p->host == d->self)
			continue;
		for (uint32_t ev = 0; ev < p->nev; ev++)
			good += !mrce_ev_info(d->eng, peer, ev, &i) && i.state == MRCE_EV_GOOD;
		/* Never below half the peer's paths: a liar naming every
		 * uplink of its leaf leaves the rest (health/suspect.h). */
		for (uint32_t ev = 0; ev < p->nev && 2 * good >= p->nev + 2; ev++)
			if (!mrce_ev_info(d->eng, peer, ev, &i) && i.state == MRCE_EV_GOOD &&
			    mrc_health_path_crosses(d->topo, d->self, p->host, ev, link) &&
			    !mrce_ev_set_bad(d->eng, now, peer, ev)) {
				d->st.health_suspects++;
				good--;
			}
	}
}

static uint32_t npeers(const struct mrcd *d)
{
	uint32_t n = 0;
	for (uint32_t peer = 0; peer < d->max_peers; peer++)
		n += d->peers[peer].used && d->peers[peer].host != d->self;
	return n;
}

/* m to n peers from the first-th on (wrapping), the peers numbered in
 * slot order: health/feed.h's turn. */
static void send_some(struct mrcd *d, const struct mrce_ctrl_health *m, uint32_t first,
		      uint32_t n)
{
	uint8_t body[MRCE_CTRL_HEALTH_LEN(MRCE_CTRL_HEALTH_MAX)];
	size_t blen = mrce_ctrl_health_encode(body, m);
	uint32_t np = npeers(d), k = 0;
	for (uint32_t peer = 0; n && peer < d->max_peers; peer++) {
		const struct mrcd_peer *p = &d->peers[peer];
		if (!p->used || p->host == d->self)
			continue;
		/* k's place in the turn that starts at first */
		uint32_t at = (k++ + np - first % np) % np;
		if (at < n && !mrcd_cm_send_body(d, p->host, body, blen))
			d->st.health_tx++;
	}
}

/* This host's newest observations to every peer, if it has a failure of
 * its own or a link not OK to speak of. */
static void share(struct mrcd *d, uint64_t now, int period)
{
	struct mrc_health_obs o[MRCE_CTRL_HEALTH_MAX];
	size_t n;
	if (!mrc_health_feed_share(d->health->h, now, period, o, MRCE_CTRL_HEALTH_MAX, &n,
				   &d->health->share))
		return;
	struct mrce_ctrl_health m = { .n = (uint32_t)n };
	for (size_t i = 0; i < n; i++) {
		uint64_t age = (now - o[i].ts_ns) / 1000;
		m.obs[i] = (struct mrce_ctrl_health_obs){ .dst = o[i].dst, .ev = o[i].ev,
			.ok = o[i].ok, .age_us = age > UINT32_MAX ? UINT32_MAX : (uint32_t)age };
	}
	uint32_t first, np = mrc_health_share_peers(&d->health->share, period, npeers(d), &first);
	send_some(d, &m, first, np);
}

void mrcd_health_rx(struct mrcd *d, uint32_t host, const uint8_t *body, size_t blen)
{
	struct mrcd_health *m = d->health;
	if (!m || !d->cfg.health_share || host >= d->nhosts || host == d->self)
		return;
	uint64_t now = mrcd_now();
	struct mrce_ctrl_health h;
	if (mrce_ctrl_health_decode(body, blen, &h)) {
		d->st.health_rx_bad++;
		return;
	}
	uint64_t *last = &m->rx_last[2 * (size_t)host + (h.n == 1 && !h.obs[0].ok)];
	if (*last && now - *last < HEALTH_RX_MIN_NS) {
		d->st.health_rx_limited++;
		return;
	}
	*last = now;
	struct mrc_health_obs o[MRCE_CTRL_HEALTH_MAX];
	uint64_t age[MRCE_CTRL_HEALTH_MAX];
	uint8_t news[MRCE_CTRL_HEALTH_MAX];
	for (uint32_t i = 0; i < h.n; i++) {
		/* Its own paths only: the source is the envelope's sender. */
		o[i] = (struct mrc_health_obs){ .src = host, .dst = h.obs[i].dst,
			.ev = h.obs[i].ev, .ok = h.obs[i].ok };
		age[i] = (uint64_t)h.obs[i].age_us * 1000;
		news[i] = !o[i].ok && !mrc_health_knows_failed(m->h, host, o[i].dst, o[i].ev);
	}
	if (mrc_health_merge(m->h, host, o, age, h.n, now) < 0)
		return;
	d->st.health_rx++;
	/* Each failure told suspects the teller's uplink here too, once: a
	 * failure this host already held (shared again every 100 ms while
	 * it stands) took those paths out before, and doing it again at
	 * every share kept every peer's paths through the teller's healthy
	 * uplink cycling out and back (thousands of EVs a run on the
	 * emulated fabric) until their late probe answers read as failures
	 * (mrc_health_feed_held) and a healthy uplink was denied. */
	for (uint32_t i = 0; d->cfg.health_suspect && i < h.n; i++) {
		uint32_t link;
		if (news[i] && mrc_health_suspect_told(d->topo, &o[i], &link))
			suspect(d, link, now);
	}
}

static void on_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct mrcd *d = w->data;
	uint64_t now = mrcd_now();
	for (uint32_t peer = 0; peer < d->max_peers && peer < d->health->nprev; peer++)
		if (d->peers[peer].used)
			feed_peer(d, peer, now);
	if (d->cfg.health_share)
		share(d, now, ++d->health->ticks % MRC_HEALTH_SHARE_TICKS == 0);
	int changed = mrc_health_eval(d->health->h, now);
	if (changed <= 0)
		return;
	d->st.health_changes += (uint64_t)changed;
	note_convictions(d, now);
	log_changes(d, now);
	for (uint32_t peer = 0; peer < d->max_peers; peer++)
		for (uint32_t ev = 0; d->peers[peer].used && ev < d->peers[peer].nev; ev++)
			mrcd_deny_update(d, peer, ev, now);
	mrcd_kick(d);
}

int mrcd_health_init(struct mrcd *d)
{
	if (!d->topo)
		return 0;   /* loopback mode: no fabric to speak of */
	struct mrcd_health *m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->nprev = d->max_peers;
	m->prev = calloc(m->nprev, sizeof(*m->prev));
	m->held = calloc(m->nprev, sizeof(*m->held));
	m->rx_last = calloc(2 * (size_t)d->nhosts, sizeof(*m->rx_last));
	/* mrcd.conf's health_* keys (config.c checks them). */
	struct mrc_health_cfg hc = { .min_paths = d->cfg.health_min_paths,
		.k_hosts = d->cfg.health_k_hosts,
		.ttl_ns = (uint64_t)d->cfg.health_ttl_ms * 1000000,
		.confirm_ns = mrc_health_confirm_ns((uint64_t)(TICK_S * 1e9),
						    (uint64_t)d->cfg.probe_interval_us * 1000) };
	int rc = m->prev && m->held && m->rx_last ? mrc_health_new(d->topo, d->self, &hc, &m->h) : -ENOMEM;
	if (!rc && (rc = mrc_health_record_new(d->topo, &m->rec)))
		mrc_health_free(m->h);
	if (rc) {
		free(m->prev);
		free(m->held);
		free(m->rx_last);
		free(m);
		return rc;
	}
	d->health = m;
	ev_timer_init(&m->tick, on_tick, TICK_S, TICK_S);
	m->tick.data = d;
	ev_timer_start(d->loop, &m->tick);
	return 0;
}

void mrcd_health_fini(struct mrcd *d)
{
	struct mrcd_health *m = d->health;
	if (!m)
		return;
	ev_timer_stop(d->loop, &m->tick);
	for (uint32_t i = 0; i < m->nprev; i++) {
		free(m->prev[i]);
		free(m->held[i]);
	}
	free(m->prev);
	free(m->held);
	free(m->rx_last);
	mrc_health_free(m->h);
	mrc_health_record_free(m->rec);
	free(m);
	d->health = NULL;
}

/* A reloaded topology: the library keeps a pointer to the old one (freed
 * next) and its link ids may differ, so it starts again on the new one
 * with no evidence, and every path it denied is re-derived. */
int mrcd_health_reload(struct mrcd *d)
{
	if (!d->health)
		return 0;
	mrcd_health_fini(d);
	int rc = mrcd_health_init(d);
	uint64_t now = mrcd_now();
	for (uint32_t peer = 0; peer < d->max_peers; peer++)
		for (uint32_t ev = 0; d->peers[peer].used && ev < d->peers[peer].nev; ev++)
			mrcd_deny_update(d, peer, ev, now);
	return rc;
}

void mrcd_health_event(struct mrcd *d, const struct mrce_event *ev)
{
	if (!d->health || ev->peer >= d->max_peers || !d->peers[ev->peer].used)
		return;
	struct mrcd_peer *p = &d->peers[ev->peer];
	uint32_t link;
	mrc_health_feed_event(d->health->h, p->host, ev->ev, ev);
	if (p->host != d->self && d->cfg.health_suspect &&
	    mrc_health_suspect_uplink(d->topo, d->self, p->host, ev->ev, ev, &link)) {
		suspect(d, link, ev->time_ns);
		/* Told to peers at once, within the bound (health/feed.h). */
		uint32_t first, n;
		if (d->cfg.health_share &&
		    (n = mrc_health_tell_peers(&d->health->share, ev->time_ns, TICK_NS,
					       npeers(d), &first))) {
			struct mrce_ctrl_health t = { .n = 1 };
			t.obs[0] = (struct mrce_ctrl_health_obs){ .dst = p->host,
				.ev = (uint16_t)ev->ev, .ok = 0, .age_us = 0 };
			send_some(d, &t, first, n);
		}
	}
	/* Taken out of use by a suspected uplink: the probe counts now are
	 * what its outcome is read against. */
	struct mrce_ev_info i;
	if (ev->type == MRCE_EVT_EV_STATE && ev->new_state == MRCE_EV_ASSUMED_BAD &&
	    ev->reason == MRCE_RSN_DENY && ev->ev < p->nev && !(p->deny[ev->ev] & MRCD_DENY_HEALTH) &&
	    ev->peer < d->health->nprev &&
	    d->health->held[ev->peer] && !mrce_ev_info(d->eng, ev->peer, ev->ev, &i))
		mrc_health_feed_held(d->health->h, p->host, ev->ev, &i,
				     &d->health->held[ev->peer][ev->ev], ev->time_ns);
	/* Back by its own probes while health held it out of use: its
	 * outcome now overrides the shared evidence (mrc_health_path_denied),
	 * so denied_by must say so at once, not at the next link change. */
	if (ev->type == MRCE_EVT_EV_STATE && ev->new_state == MRCE_EV_GOOD &&
	    ev->ev < p->nev && (p->deny[ev->ev] & MRCD_DENY_HEALTH))
		mrcd_deny_update(d, ev->peer, ev->ev, ev->time_ns);
}

int mrcd_health_denies(const struct mrcd *d, uint32_t host, uint32_t ev)
{
	return d->health && mrc_health_path_denied(d->health->h, host, ev);
}

int mrcd_fabric_next(const struct mrcd *d, uint32_t *it, struct mrcd_fabric_view *v)
{
	if (!d->health)
		return 0;
	for (; *it < d->topo->n_links; (*it)++) {
		struct mrc_health_link li;
		if (mrc_health_link_get(d->health->h, *it, &li) || li.state == MRC_HEALTH_OK)
			continue;
		const struct mrc_link *l = &d->topo->links[*it];
		*v = (struct mrcd_fabric_view){ .link = *it, .plane = l->plane,
			.lower = d->topo->nodes[l->lower].name,
			.upper = d->topo->nodes[l->upper].name,
			.state = mrc_health_state_name(li.state), .denied = li.state == MRC_HEALTH_DENIED,
			.fail_paths = li.fail_paths, .fail_hosts = li.fail_hosts,
			.good_paths = li.good_paths, .cong = li.cong, .changed_ns = li.changed_ns };
		(*it)++;
		return 1;
	}
	return 0;
}

int mrcd_fabric_conviction(const struct mrcd *d, uint32_t i, struct mrcd_fabric_conv *v)
{
	struct mrc_health_rec r;
	if (!d->health || mrc_health_record_get(d->health->rec, i, &r))
		return 0;
	const struct mrc_link *l = &d->topo->links[r.link];
	*v = (struct mrcd_fabric_conv){ .seq = r.seq, .link = r.link, .plane = l->plane,
		.lower = d->topo->nodes[l->lower].name, .upper = d->topo->nodes[l->upper].name,
		.state = mrc_health_state_name(r.state), .located_ns = r.located_ns,
		.denied_ns = r.denied_ns, .cleared_ns = r.cleared_ns, .fail_paths = r.fail_paths,
		.fail_hosts = r.fail_hosts, .good_paths = r.good_paths, .good_ns = r.good_ns,
		.n_evidence = r.n_evidence };
	for (uint32_t k = 0; k < r.n_evidence && k < MRCD_FABRIC_EVIDENCE; k++)
		v->evidence[k] = (struct mrcd_fabric_path){ .src = host_name(d, r.evidence[k].src),
			.dst = host_name(d, r.evidence[k].dst),
			.ev = r.evidence[k].ev, .ts_ns = r.evidence[k].ts_ns };
	return 1;
}

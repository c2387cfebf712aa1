/* The operator views of the daemon's state as JSON (docs/ctl.md is the
 * contract): status, planes, peers, paths, qps, stats, topology, version.
 * Per-plane numbers are sums over every peer's EVs of that plane; rates
 * come from 1 s samples of those sums and of the datapath counters. */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/isotime.h"
#include "daemon/clients/clients.h"
#include "daemon/oper/oper.h"

#include "mrc/error.h"
#include "mrc/version.h"

const char *mrcd_oper_host_name(struct mrcd *d, uint32_t host, char *buf, size_t len)
{
	const struct mrc_topo *t = mrcd_topology(d);
	if (host == UINT32_MAX || host >= mrcd_n_hosts(d))
		snprintf(buf, len, "?");
	else if (t)
		snprintf(buf, len, "%s", t->nodes[t->hosts[host]].name);
	else
		snprintf(buf, len, "self");
	return buf;
}

int mrcd_oper_find_host(struct mrcd *d, const char *name, uint32_t *host)
{
	if (!mrcd_topology(d)) {
		if (!strcmp(name, "self") || !strcmp(name, "0")) {
			*host = 0;
			return 0;
		}
		return -ENOENT;
	}
	return mrc_topo_host_lookup(mrcd_topology(d), name, host);
}

void mrcd_oper_ev_where(struct mrcd *d, uint32_t ev, int *plane, int *spine)
{
	uint32_t pl = 0, sp = 0;
	*plane = 0;
	*spine = -1;
	if (!mrcd_topology(d) || mrc_topo_ev_decode(mrcd_topology(d), ev, &pl, &sp))
		return;
	*plane = (int)pl;
	*spine = sp == MRC_PATH_SPINE_DIRECT ? -1 : (int)sp;
}

int mrcd_oper_path_exists(const struct mrcd_peer_view *p, uint32_t ev)
{
	return !(p->deny[ev] & MRCD_DENY_MISSING);
}

static void host_addr(struct mrcd *d, uint32_t host, char *buf, size_t len)
{
	struct in6_addr a;
	(void)mrcd_host_addr(d, host, &a);   /* :: when it has none */
	inet_ntop(AF_INET6, &a, buf, (socklen_t)len);
}

static void iso(struct oper *o, uint64_t mono, char *buf, size_t len)
{
	mrc__iso_time((uint64_t)((int64_t)mono + o->real_off_ns), 3, buf, len);
}

/* ---- sums ---------------------------------------------------------------- */

struct sums {
	uint64_t tx, lost, trims, ecn, probes, probes_ok;
	uint32_t st[3];
};

static void add(struct sums *s, const struct mrce_ev_info *i)
{
	s->tx += i->tx_pkts;
	s->lost += i->lost;
	s->trims += i->trims;
	s->ecn += i->ecn;
	s->probes += i->probes_sent;
	s->probes_ok += i->probes_ok;
	if (i->state < 3)
		s->st[i->state]++;
}

static void plane_sums(struct mrcd *d, struct sums *pl)
{
	memset(pl, 0, sizeof(*pl) * MRCE_MAX_PLANES);
	struct mrcd_peer_view pe;
	for (uint32_t it = 0; mrcd_peer_next(d, &it, &pe);) {
		for (uint32_t ev = 0; ev < pe.nev; ev++) {
			struct mrce_ev_info i;
			if (mrcd_oper_path_exists(&pe, ev) && !mrce_ev_info(mrcd_engine(d), pe.id, ev, &i) &&
			    i.plane < MRCE_MAX_PLANES)
				add(&pl[i.plane], &i);
		}
	}
}

static json_t *states(const uint32_t st[3])
{
	return json_pack("{s:i, s:i, s:i}", "GOOD", (int)st[0], "ASSUMED_BAD", (int)st[1],
			 "DENIED", (int)st[2]);
}

static uint32_t count_qps(struct mrcd *d, uint32_t peer)
{
	uint32_t n = 0, qpn;
	for (uint32_t it = 0; mrcd_qp_bound_next(d, &it, &qpn);) {
		struct mrce_qp_info qi;
		if (peer == UINT32_MAX ||
		    (!mrce_qp_info(mrcd_engine(d), qpn, &qi) && qi.state != MRCE_QPS_RESET && qi.peer == peer))
			n++;
	}
	return n;
}

void mrcd_oper_sample(struct oper *o)
{
	struct mrcd *d = o->d;
	uint64_t now = mrcd_now();
	double dt = o->sample_ns ? (double)(now - o->sample_ns) / 1e9 : 0;
	struct sums pl[MRCE_MAX_PLANES];
	plane_sums(d, pl);
	for (int i = 0; i < MRCE_MAX_PLANES; i++) {
		o->plane_tx_rate[i] = dt > 0 ? (uint64_t)((double)(pl[i].tx - o->plane_tx[i]) / dt) : 0;
		o->plane_lost_rate[i] = dt > 0 ? (uint64_t)((double)(pl[i].lost - o->plane_lost[i]) / dt) : 0;
		o->plane_tx[i] = pl[i].tx;
		o->plane_lost[i] = pl[i].lost;
	}
	struct mrc_dp_stats ds;
	mrc_dp_get_stats(mrcd_datapath(d), &ds);
	if (dt > 0) {
		o->dp_tx_rate = (uint64_t)((double)(ds.tx_pkts - o->dp_tx) / dt);
		o->dp_rx_rate = (uint64_t)((double)(ds.rx_pkts - o->dp_rx) / dt);
		o->dp_txb_rate = (uint64_t)((double)(ds.tx_bytes - o->dp_txb) / dt);
		o->dp_rxb_rate = (uint64_t)((double)(ds.rx_bytes - o->dp_rxb) / dt);
	}
	o->dp_tx = ds.tx_pkts;
	o->dp_rx = ds.rx_pkts;
	o->dp_txb = ds.tx_bytes;
	o->dp_rxb = ds.rx_bytes;
	o->sample_ns = now;
}

/* ---- verbs --------------------------------------------------------------- */

json_t *mrcd_oper_version(struct oper *o)
{
	(void)o;
	return json_pack("{s:s, s:i}", "version", MRC_VERSION, "protocol", MRC_OPER_VERSION);
}

json_t *mrcd_oper_planes(struct oper *o)
{
	struct mrcd *d = o->d;
	struct sums pl[MRCE_MAX_PLANES];
	plane_sums(d, pl);
	json_t *a = json_array();
	for (uint32_t i = 0; i < mrcd_n_planes(d); i++) {
		uint32_t rdown = 0;
		struct mrcd_peer_view pe;
		for (uint32_t it = 0; mrcd_peer_next(d, &it, &pe);)
			rdown += pe.remote_down >> i & 1;
		const char *nic = mrcd_topology(d) ? mrcd_plane_if(d, i) : "lo";
		json_t *e = json_pack("{s:i, s:s, s:i, s:s, s:s, s:i, s:I, s:I, s:I, s:I, s:f, s:I, s:I, s:I, s:I, s:o}",
			"plane", (int)i, "nic", nic, "ifindex", (int)if_nametoindex(nic),
			"link", (mrcd_local_down(d) >> i & 1) ? "down" : "up",
			"admin", (mrcd_admin_planes(d) >> i & 1) ? "disabled" : "enabled",
			"peers_reporting_down", (int)rdown,
			"tx_pkts", (json_int_t)pl[i].tx, "tx_pps", (json_int_t)o->plane_tx_rate[i],
			"lost", (json_int_t)pl[i].lost, "lost_pps", (json_int_t)o->plane_lost_rate[i],
			"loss_ratio", pl[i].tx ? (double)pl[i].lost / (double)pl[i].tx : 0.0,
			"trims", (json_int_t)pl[i].trims, "ecn", (json_int_t)pl[i].ecn,
			"probes_sent", (json_int_t)pl[i].probes, "probes_ok", (json_int_t)pl[i].probes_ok,
			"evs", states(pl[i].st));
		if (o->state.planes >> i & 1 && mrcd_admin_planes(d) >> i & 1)
			json_object_set_new(e, "restored", json_true());
		json_array_append_new(a, e);
	}
	return json_pack("{s:o}", "planes", a);
}

static json_t *peer_json(struct oper *o, const struct mrcd_peer_view *pe)
{
	struct mrcd *d = o->d;
	uint32_t p = pe->id;
	struct sums s = { 0 };
	uint64_t rtt_min = 0, rtt_sum = 0;
	uint32_t nrtt = 0, nexist = 0;
	for (uint32_t ev = 0; ev < pe->nev; ev++) {
		struct mrce_ev_info i;
		if (!mrcd_oper_path_exists(pe, ev) || mrce_ev_info(mrcd_engine(d), p, ev, &i))
			continue;
		nexist++;
		add(&s, &i);
		if (i.srtt_ns) {
			rtt_sum += i.srtt_ns;
			nrtt++;
			if (!rtt_min || i.srtt_ns < rtt_min)
				rtt_min = i.srtt_ns;
		}
	}
	char name[64], addr[64];
	host_addr(d, pe->host, addr, sizeof(addr));
	json_t *rd = json_array();
	for (uint32_t i = 0; i < mrcd_n_planes(d); i++)
		if (pe->remote_down >> i & 1)
			json_array_append_new(rd, json_integer(i));
	return json_pack("{s:s, s:i, s:i, s:s, s:i, s:o, s:i, s:o, s:I, s:I, s:I, s:I, s:f, s:f}",
		"peer", mrcd_oper_host_name(d, pe->host, name, sizeof(name)), "host", (int)pe->host,
		"id", (int)p, "address", addr, "paths", (int)nexist, "evs", states(s.st),
		"qps", (int)count_qps(d, p), "remote_planes_down", rd,
		"tx_pkts", (json_int_t)s.tx, "lost", (json_int_t)s.lost,
		"trims", (json_int_t)s.trims, "ecn", (json_int_t)s.ecn,
		"srtt_us_min", (double)rtt_min / 1e3,
		"srtt_us_avg", nrtt ? (double)rtt_sum / nrtt / 1e3 : 0.0);
}

json_t *mrcd_oper_peers(struct oper *o)
{
	json_t *a = json_array();
	struct mrcd_peer_view pe;
	for (uint32_t it = 0; mrcd_peer_next(o->d, &it, &pe);)
		json_array_append_new(a, peer_json(o, &pe));
	return json_pack("{s:o}", "peers", a);
}

int mrcd_oper_paths(struct oper *o, const char *peer, json_t **out, char *err, size_t errlen)
{
	struct mrcd *d = o->d;
	uint32_t host;
	if (mrcd_oper_find_host(d, peer, &host)) {
		snprintf(err, errlen, "no host '%s' in the topology", peer);
		return -ENOENT;
	}
	struct mrcd_peer_view v, *pe = &v;
	uint32_t p = mrcd_peer_find(d, host);
	if (p == UINT32_MAX || mrcd_peer_get(d, p, pe)) {
		snprintf(err, errlen, "host '%s' is not a peer yet (no traffic; `mrcctl probe %s` makes it one)",
			 peer, peer);
		return -ENOENT;
	}
	json_t *a = json_array();
	uint64_t now = mrcd_now(), started = mrcd_started_ns(d);
	for (uint32_t ev = 0; ev < pe->nev; ev++) {
		struct mrce_ev_info i;
		if (mrce_ev_info(mrcd_engine(d), p, ev, &i))
			continue;
		int pl, sp;
		mrcd_oper_ev_where(d, ev, &pl, &sp);
		int exists = mrcd_oper_path_exists(pe, ev);
		char addr[64], t[48];
		inet_ntop(AF_INET6, &pe->dst[ev], addr, sizeof(addr));
		iso(o, i.last_change_ns ? i.last_change_ns : started, t, sizeof(t));
		json_t *e = json_pack("{s:i, s:i, s:i, s:b, s:s, s:s, s:s, s:s, s:f, s:f, s:f, s:I, s:I, s:I, s:I, s:I, s:I, s:b, s:b}",
			"ev", (int)ev, "plane", pl, "spine", sp, "exists", exists,
			"address", exists ? addr : "", "state", mrce_ev_state_name(i.state),
			"reason", mrce_ev_reason_name(i.last_reason), "last_change", t,
			"last_change_age_s", i.last_change_ns && now > i.last_change_ns ?
				(double)(now - i.last_change_ns) / 1e9 : (double)(now - started) / 1e9,
			"srtt_us", (double)i.srtt_ns / 1e3, "rttvar_us", (double)i.rttvar_ns / 1e3,
			"tx_pkts", (json_int_t)i.tx_pkts, "lost", (json_int_t)i.lost,
			"trims", (json_int_t)i.trims, "ecn", (json_int_t)i.ecn,
			"probes_sent", (json_int_t)i.probes_sent, "probes_ok", (json_int_t)i.probes_ok,
			"admin_denied", (pe->deny[ev] & (MRCD_DENY_ADMIN_PLANE | MRCD_DENY_ADMIN_PATH)) != 0,
			"detour", (int)i.detour);
		json_t *why = json_array();
		for (unsigned bit = 1; bit <= MRCD_DENY_HEALTH; bit <<= 1)
			if (pe->deny[ev] & bit)
				json_array_append_new(why, json_string(mrcd_deny_name(bit)));
		json_object_set_new(e, "denied_by", why);
		if ((pe->deny[ev] & MRCD_DENY_ADMIN_PATH) && mrcd_oper_state_path_restored(o, host, ev))
			json_object_set_new(e, "restored", json_true());
		json_array_append_new(a, e);
	}
	char name[64];
	*out = json_pack("{s:s, s:i, s:o}", "peer", mrcd_oper_host_name(d, host, name, sizeof(name)),
			 "host", (int)host, "paths", a);
	return 0;
}

static const char *qp_state(uint8_t s)
{
	return s == MRCE_QPS_RTS ? "RTS" : s == MRCE_QPS_ERROR ? "ERROR" : "RESET";
}

/* The EVs the QP used (sent on, or lost on), with its packets on each:
 * how its spray spread and where it lost. */
static json_t *qp_evs(struct mrcd *d, uint32_t qpn, const struct mrce_qp_info *q)
{
	json_t *a = json_array();
	static struct mrce_qp_ev_stat st[MRCE_MAX_EVS];   /* one loop thread */
	int n = q->state == MRCE_QPS_RESET ? 0 : mrce_qp_ev_stats(mrcd_engine(d), qpn, st, MRCE_MAX_EVS);
	for (int ev = 0; ev < n; ev++) {
		if (!st[ev].tx_pkts && !st[ev].lost_pkts)
			continue;
		int pl, sp;
		mrcd_oper_ev_where(d, (uint32_t)ev, &pl, &sp);
		json_array_append_new(a, json_pack("{s:i, s:i, s:i, s:I, s:I}", "ev", ev,
			"plane", pl, "spine", sp, "tx_pkts", (json_int_t)st[ev].tx_pkts,
			"lost_pkts", (json_int_t)st[ev].lost_pkts));
	}
	return a;
}

static json_t *qp_json(struct mrcd *d, uint32_t qpn, const struct mrce_qp_info *q)
{
	char name[64] = "", hex[16];
	struct mrcd_peer_view pe;
	uint32_t host = q->state != MRCE_QPS_RESET && !mrcd_peer_get(d, q->peer, &pe) ?
			pe.host : UINT32_MAX;
	mrcd_oper_host_name(d, host, name, sizeof(name));
	snprintf(hex, sizeof(hex), "%#x", qpn);
	json_t *j = json_pack("{s:I, s:s, s:s, s:s, s:i, s:I, s:i, s:i, s:f, s:f, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
		"qpn", (json_int_t)qpn, "qpn_hex", hex, "state", qp_state(q->state), "peer", name,
		"host", host == UINT32_MAX ? -1 : (int)host, "rqpn", (json_int_t)q->rqpn,
		"inflight", (int)q->inflight, "cwnd_bytes", (int)q->cwnd_bytes,
		"srtt_us", (double)q->srtt_ns / 1e3, "rto_us", (double)q->rto_ns / 1e3,
		"tx_pkts", (json_int_t)q->tx_pkts, "retx", (json_int_t)q->retx,
		"rto_fires", (json_int_t)q->rto_fires, "trims_rx", (json_int_t)q->trims_rx,
		"nacks_rx", (json_int_t)q->nacks_rx, "bytes_acked", (json_int_t)q->bytes_acked,
		"rx_pkts", (json_int_t)q->rx_pkts, "rx_dups", (json_int_t)q->rx_dups,
		"bytes_placed", (json_int_t)q->bytes_placed);
	if (q->state == MRCE_QPS_ERROR)
		json_object_set_new(j, "error", json_string(mrc_strerror(q->error)));
	/* Losses it declared that later proved to be reordering. */
	json_object_set_new(j, "spurious", json_integer((json_int_t)q->spurious));
	json_object_set_new(j, "rto_spurious", json_integer((json_int_t)q->rto_spurious));
	/* Per-plane use: which planes the QP's packets went over. */
	json_t *pl = json_array();
	for (uint32_t i = 0; i < mrcd_n_planes(d) && i < MRCE_MAX_PLANES; i++)
		json_array_append_new(pl, json_integer((json_int_t)q->plane_tx[i]));
	json_object_set_new(j, "plane_tx_pkts", pl);
	json_object_set_new(j, "plane_mask", json_integer((json_int_t)q->plane_mask));
	char pm[16] = "all";
	if (q->plane_mask)
		snprintf(pm, sizeof(pm), "%#x", q->plane_mask);
	json_object_set_new(j, "planes", json_string(pm));
	json_object_set_new(j, "class", json_string(mrce_tclass_name(q->tclass)));   /* traffic class */
	json_object_set_new(j, "evs", qp_evs(d, qpn, q));
	if (q->ev_other_tx || q->ev_other_lost)
		json_object_set_new(j, "evs_other", json_pack("{s:I, s:I}",
			"tx_pkts", (json_int_t)q->ev_other_tx, "lost_pkts", (json_int_t)q->ev_other_lost));
	return j;
}

int mrcd_oper_qps(struct oper *o, int64_t qp, json_t **out, char *err, size_t errlen)
{
	struct mrcd *d = o->d;
	struct mrce_qp_info q;
	json_t *a = json_array();
	if (qp >= 0) {
		if (mrce_qp_info(mrcd_engine(d), (uint32_t)qp, &q)) {
			json_decref(a);
			snprintf(err, errlen, "no QP %lld (%#llx)", (long long)qp, (unsigned long long)qp);
			return -ENOENT;
		}
		json_array_append_new(a, qp_json(d, (uint32_t)qp, &q));
	} else {
		/* The engine has no QP iterator; every QP mrcd serves is bound
		 * to a completion owner, so the binding table lists them. */
		uint32_t qpn;
		for (uint32_t it = 0; mrcd_qp_bound_next(d, &it, &qpn);)
			if (!mrce_qp_info(mrcd_engine(d), qpn, &q))
				json_array_append_new(a, qp_json(d, qpn, &q));
	}
	*out = json_pack("{s:o}", "qps", a);
	return 0;
}

/* Ring polling (daemon/core/mrcd.h struct mrcd_ring_stats): the polled
 * QPs now (active and parked) are gauges, the rest counters. */
json_t *mrcd_oper_rings(struct mrcd *d)
{
	const struct mrcd_ring_stats *r = mrcd_ring_stats(d);
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
		"polled_active", (json_int_t)(r->polled_qps - r->polled_parked),
		"polled_parked", (json_int_t)r->polled_parked,
		"parks", (json_int_t)r->parks, "notify_wakeups", (json_int_t)r->notify_wakeups,
		"notify_spurious", (json_int_t)r->notify_spurious,
		"notify_ticks", (json_int_t)r->notify_ticks,
		"poll_interval_us", (json_int_t)r->poll_interval_us,
		"poll_rounds", (json_int_t)r->poll_rounds, "ring_polls", (json_int_t)r->ring_polls,
		"rx_turn_polls", (json_int_t)r->rx_turn_polls,
		"urgent_turns", (json_int_t)r->urgent_turns,
		"urgent_posts", (json_int_t)r->urgent_posts, "urgent_rx", (json_int_t)r->urgent_rx);
}

json_t *mrcd_oper_status(struct oper *o)
{
	struct mrcd *d = o->d;
	struct mrce_stats es;
	mrce_stats(mrcd_engine(d), &es);
	struct sums pl[MRCE_MAX_PLANES], all = { 0 };
	plane_sums(d, pl);
	uint32_t up = 0, npeers = 0;
	json_t *dis = json_array();
	for (uint32_t i = 0; i < mrcd_n_planes(d); i++) {
		up += !(mrcd_local_down(d) >> i & 1);
		if (mrcd_admin_planes(d) >> i & 1)
			json_array_append_new(dis, json_integer(i));
		for (int s = 0; s < 3; s++)
			all.st[s] += pl[i].st[s];
	}
	struct mrcd_peer_view pe;
	for (uint32_t it = 0; mrcd_peer_next(d, &it, &pe);)
		npeers++;
	char name[64], addr[64], t[48], hn[256] = "";
	gethostname(hn, sizeof(hn) - 1);
	host_addr(d, mrcd_self_host(d), addr, sizeof(addr));
	iso(o, mrcd_started_ns(d), t, sizeof(t));
	json_t *totals = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
		"tx_pkts", (json_int_t)es.tx_pkts, "rx_pkts", (json_int_t)es.rx_pkts,
		"tx_data", (json_int_t)es.tx_data, "retransmits", (json_int_t)es.tx_retx,
		"trims", (json_int_t)es.rx_trimmed, "ecn", (json_int_t)es.rx_ecn,
		"loss_detected", (json_int_t)es.loss_detected, "ev_changes", (json_int_t)es.ev_changes,
		"bytes_placed", (json_int_t)es.bytes_placed, "msgs_completed", (json_int_t)es.msgs_completed);
	return json_pack("{s:s, s:i, s:s, s:{s:s, s:i, s:s}, s:s, s:s, s:f, s:s, s:i, s:i, s:o, s:i, s:i, s:o, s:o, s:s, s:s, s:o, s:o, s:s}",
		"version", MRC_VERSION, "protocol", MRC_OPER_VERSION, "hostname", hn,
		"host", "name", mrcd_oper_host_name(d, mrcd_self_host(d), name, sizeof(name)),
		"index", (int)mrcd_self_host(d), "address", addr,
		"mode", mrcd_topology(d) ? "srv6" : "loopback", "topology", mrcd_config(d)->topology,
		"uptime_s", (double)(mrcd_now() - mrcd_started_ns(d)) / 1e9, "started", t,
		"planes", (int)mrcd_n_planes(d), "planes_up", (int)up, "planes_admin_disabled", dis,
		"peers", (int)npeers, "qps", (int)count_qps(d, UINT32_MAX),
		"ev_states", states(all.st), "totals", totals,
		"socket", o->path, "metrics_listen", mrcd_config(d)->metrics_listen, "rings", mrcd_oper_rings(d),
		"admin_state", mrcd_oper_state_json(o), "datapath", mrc_dp_name(mrcd_datapath(d)));
}

json_t *mrcd_oper_topology(struct oper *o)
{
	struct mrcd *d = o->d;
	char name[64], addr[64];
	const struct mrc_topo *t = mrcd_topology(d);
	if (!t)
		return json_pack("{s:s, s:i, s:s, s:i, s:[{s:s, s:i, s:s}]}", "mode", "loopback",
				 "planes", 1, "self", "self", "evs", 1, "hosts", "name", "self",
				 "index", 0, "address", "::1");
	char blk[64];
	inet_ntop(AF_INET6, &t->block, blk, sizeof(blk));
	json_t *hosts = json_array(), *planes = json_array();
	for (uint32_t h = 0; h < t->n_hosts; h++) {
		host_addr(d, h, addr, sizeof(addr));
		char us[8];
		snprintf(us, sizeof(us), "%#06x", t->nodes[t->hosts[h]].usid);
		json_array_append_new(hosts, json_pack("{s:s, s:i, s:s, s:s}", "name",
			t->nodes[t->hosts[h]].name, "index", (int)h, "usid", us, "address", addr));
	}
	for (uint32_t p = 0; p < t->planes; p++) {
		json_t *lv = json_array(), *sp = json_array();
		for (uint32_t i = 0; i < t->n_leaves[p]; i++)
			json_array_append_new(lv, json_string(t->nodes[t->leaves[p][i]].name));
		for (uint32_t i = 0; i < t->n_spines[p]; i++)
			json_array_append_new(sp, json_string(t->nodes[t->spines[p][i]].name));
		json_array_append_new(planes, json_pack("{s:i, s:s, s:o, s:o}", "plane", (int)p,
			"nic", mrcd_plane_if(d, p), "leaves", lv, "spines", sp));
	}
	char bs[80];
	snprintf(bs, sizeof(bs), "%s/%u", blk, t->block_bits);
	return json_pack("{s:s, s:s, s:s, s:i, s:s, s:i, s:i, s:o, s:o}", "mode", "srv6",
		"file", mrcd_config(d)->topology, "block", bs, "planes", (int)t->planes,
		"self", mrcd_oper_host_name(d, mrcd_self_host(d), name, sizeof(name)),
		"evs", (int)mrc_topo_ev_count(t), "links", (int)t->n_links,
		"plane_list", planes, "hosts", hosts);
}

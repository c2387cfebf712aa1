/* The daemon's data plane glue: peers and their EV -> uSID address tables,
 * datagrams from the datapath into the engine (or the connection manager),
 * the engine's packets out through the datapath, completions to their
 * owners, engine events to the log, and the plane link monitor. */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "auth/auth.h"
#include "daemon/core/core.h"
#include "mrc/error.h"
#include "daemon/core/enc.h"
#include "srv6/linkmon.h"
#include "transport/wire.h"

#define NO_ID UINT32_MAX

/* ---- peers ---------------------------------------------------------- */

static int peer_table(struct mrcd *d, uint32_t host, struct mrcd_peer *p)
{
	if (!d->topo) {
		/* Loopback: the only host is this one, one path through lo. */
		p->nev = 1;
		p->dst = calloc(1, sizeof(*p->dst));
		p->plane = calloc(1, 1);
		p->deny = calloc(1, 1);
		if (!p->dst || !p->plane || !p->deny)
			return -ENOMEM;
		p->dst[0] = in6addr_loopback;
		return 0;
	}
	p->nev = mrc_topo_ev_count(d->topo);
	p->dst = calloc(p->nev, sizeof(*p->dst));
	p->plane = calloc(p->nev, 1);
	p->deny = calloc(p->nev, 1);
	if (!p->dst || !p->plane || !p->deny)
		return -ENOMEM;
	for (uint32_t ev = 0; ev < p->nev; ev++) {
		uint32_t pl = 0, sp = 0;
		mrc_topo_ev_decode(d->topo, ev, &pl, &sp);
		p->plane[ev] = (uint8_t)pl;
		p->dst[ev] = mrcd_peer_dst(d, d->topo, host, ev);
	}
	return 0;
}

struct in6_addr mrcd_peer_dst(const struct mrcd *d, const struct mrc_topo *t, uint32_t host,
			      uint32_t ev)
{
	struct in6_addr a = { 0 };
	struct mrc_path path;
	struct mrc_srv6_err e;
	/* The self pair: every EV names this host, and the datagrams never
	 * leave the process (local.c), so none is missing; each EV is still
	 * a path of its own to the engine, probed and sprayed as any other. */
	if (host == d->self)
		return d->self_addr;
	if (mrc_topo_path(t, d->self, host, ev, &path) ||
	    mrc_usid_encode(&d->blk, path.usids, path.n_usids, &a, &e))
		memset(&a, 0, sizeof(a));   /* no such path (MRCD_DENY_MISSING) */
	return a;
}

/* AEAD mode: the host pair's MAC keys (PROBE, PROBE_REPLY, NOQP). */
static int enc_peer_keys(struct mrcd *d, uint32_t id, uint32_t host)
{
	uint8_t tx[MRC_AUTH_PAIR_KEY_BYTES], rx[MRC_AUTH_PAIR_KEY_BYTES];
	int rc = mrc_auth_pair_keys(d->auth, d->self, host, tx, rx);
	if (!rc)
		rc = mrcd_enc_set_peer(d->enc, id, tx, rx);
	sodium_memzero(tx, sizeof tx);
	sodium_memzero(rx, sizeof rx);
	return rc;
}

static int set_probe_tokens(struct mrcd *d, uint32_t id, uint32_t host)
{
	uint64_t ptx, prx;
	uint64_t pe = host == d->self ? d->ctrl_tx.epoch : d->host_epoch[host];
	int rc = mrc_auth_probe_tokens_epoch(d->auth, d->self, host, d->ctrl_tx.epoch, pe,
					     &ptx, &prx);
	if (!rc)
		rc = mrce_peer_set_probe_tokens(d->eng, id, ptx, prx);
	return rc;
}

void mrcd_peer_epoch(struct mrcd *d, uint32_t host, uint64_t epoch)
{
	if (host >= d->nhosts || host == d->self || d->host_epoch[host] == epoch)
		return;
	d->host_epoch[host] = epoch;
	uint32_t id = d->peer_of_host[host];
	if (id != NO_ID && set_probe_tokens(d, id, host))
		mrcd_log(MRCD_LOG_WARNING, "host %u: probe tokens not renewed", host);
}

int mrcd_peer_of_host(struct mrcd *d, uint32_t host, uint32_t *out)
{
	if (host >= d->nhosts)
		return -EINVAL;
	if (d->peer_of_host[host] != NO_ID) {
		*out = d->peer_of_host[host];
		return 0;
	}
	struct mrcd_peer p = { .used = 1, .host = host };
	int rc = peer_table(d, host, &p);
	uint32_t id = 0;
	if (!rc)
		rc = mrce_peer_add(d->eng, p.nev, p.plane, &id);
	if (!rc && id >= d->max_peers)
		rc = -ENOSPC;
	if (rc) {
		free(p.dst);
		free(p.plane);
		free(p.deny);
		return rc;
	}
	/* Probes carry per-host-pair tokens from the key and both boot
	 * epochs (require_tokens); the peer's is learnt from its CTRL. */
	rc = set_probe_tokens(d, id, host);
	if (!rc && d->enc)
		rc = enc_peer_keys(d, id, host);
	if (rc) {
		mrce_peer_remove(d->eng, id);
		free(p.dst);
		free(p.plane);
		free(p.deny);
		return rc;
	}
	/* Spine paths between hosts of one leaf are detours: the engine
	 * uses them only when the leaf's one-hop path of the plane is not
	 * GOOD (they add uplink load and no capacity). */
	for (uint32_t ev = 0; d->topo && ev < p.nev; ev++) {
		uint32_t pl = 0, sp = 0;
		struct mrc_path path;
		int direct;
		if (mrc_topo_ev_decode(d->topo, ev, &pl, &sp) || sp == MRC_PATH_SPINE_DIRECT ||
		    (direct = mrc_topo_ev_of(d->topo, pl, MRC_PATH_SPINE_DIRECT)) < 0 ||
		    mrc_topo_path(d->topo, d->self, host, (uint32_t)direct, &path))
			continue;
		mrce_ev_set_detour(d->eng, id, ev, 1);
	}
	d->peers[id] = p;
	d->peer_of_host[host] = id;
	/* Missing paths, a NIC down here, planes an operator disabled. */
	uint64_t now = mrcd_now();
	for (uint32_t ev = 0; ev < p.nev; ev++)
		mrcd_deny_update(d, id, ev, now);
	*out = id;
	mrcd_log(MRCD_LOG_INFO, "peer host %u added: %u paths", host, p.nev);
	return 0;
}

/* ---- receive ----------------------------------------------------------- */

/* The topology host a source address names: only those hosts take part,
 * and in loopback mode only this host's own loopback address. */
static uint32_t host_of_src(struct mrcd *d, const struct in6_addr *src)
{
	if (!d->topo)
		return IN6_ARE_ADDR_EQUAL(src, &in6addr_loopback) ? 0 : NO_ID;
	uint16_t usid;
	if (mrc_usid_active(&d->blk, src, &usid))
		return NO_ID;
	return d->host_of_usid[usid];
}

void mrcd_node_rx(struct mrcd *d, struct mrc_dp_in *in, uint64_t now)
{
	uint32_t host = host_of_src(d, &in->src);
	if (host == NO_ID) {
		d->st.rx_unknown_src++;
		return;
	}
	/* Daemons send from the MRC port; any other port is a local process
	 * that is not the daemon (e.g. an unprivileged user forging), dropped
	 * before anything reads it. */
	if (in->sport != d->cfg.port) {
		d->st.rx_bad_sport++;
		return;
	}
	if (in->len < 2) {
		d->st.rx_short++;
		return;
	}
	if (mrc_wire_is_ctrl(in->buf, in->len)) {
		mrcd_cm_rx(d, host, in->buf, in->len);
		return;
	}
	/* Only a peer that exists takes data and probes: peers come from
	 * authenticated CTRL or local use, never from an unauthenticated
	 * packet naming a topology address (which would also make us
	 * beacon to that host every second). */
	uint32_t peer = d->peer_of_host[host];
	if (peer == NO_ID) {
		d->st.rx_no_peer++;
		return;
	}
	if (d->enc && mrcd_enc_open(d->enc, peer, in->buf, &in->len))
		return;   /* AEAD mode: forged, replayed, corrupt or unsealed */
	mrce_rx(d->eng, now, peer, in->buf, in->len, in->ecn_ce ? MRC_RX_ECN : 0);
}

/* Batches rx_plane takes per wakeup at most. */
#define RX_ROUNDS 8

/* Receives what waits on one plane; returns how many datagrams. */
static int rx_plane(struct mrcd *d, uint32_t plane)
{
	struct mrc_dp_in in[MRC_DP_BATCH];
	int total = 0;
	/* A bounded number of batches per wakeup keeps other planes and
	 * timers served under load. */
	for (int round = 0; round < RX_ROUNDS; round++) {
		int n = mrc_dp_recv(d->dp, plane, in, MRC_DP_BATCH);
		if (n <= 0)
			break;
		total += n;
		uint64_t now = mrcd_now();
		for (int i = 0; i < n; i++) {
			/* A full batch means datagrams are queueing in the socket:
			 * this host is the bottleneck.  Say so the way a switch
			 * would, with a congestion mark, so senders slow down before
			 * the receive buffer overflows. */
			in[i].ecn_ce |= n == MRC_DP_BATCH;
			mrcd_node_rx(d, &in[i], now);
		}
		if (n < MRC_DP_BATCH)
			break;
	}
	return total;
}

static void on_rx(struct ev_loop *loop, ev_io *w, int revents)
{
	struct mrcd *d = w->data;
	(void)revents;
	/* Every round full: more may wait in the datapath itself, which the
	 * descriptor does not show (datapath.h, recv), so come back next
	 * turn rather than sleep on the fd. */
	if (rx_plane(d, (uint32_t)(w - d->rx_w)) >= RX_ROUNDS * MRC_DP_BATCH)
		ev_feed_event(loop, w, EV_READ);
	mrcd_flush(d);
}

/* A poll-mode datapath (DPDK: no descriptor to wait on) is a poller of the
 * core's busy loop (core.c on_idle): its planes are received from every
 * loop turn, and it never lets the loop sleep, as nothing would wake it.
 * That costs a whole core, spinning, as DPDK always does: give mrcd a
 * dedicated one (docs/datapaths.md). */
static int dp_poll(void *ctx)
{
	struct mrcd *d = ctx;
	int n = 0;
	for (uint32_t pl = 0; pl < d->nplanes; pl++)
		if (!ev_is_active(&d->rx_w[pl]))
			n += rx_plane(d, pl);
	return n;
}

static int dp_arm(void *ctx)
{
	(void)ctx;
	return 1;
}

/* ---- AEAD payload mode (daemon/core/enc.h) ------------------------------ */

_Static_assert(MRCD_ENC_SLOTS >= MRC_DP_BATCH, "a sealed packet per datapath slot");

/* Seals any packet into slot `slot`: the datagram becomes header + what
 * the seal put in the slot (ciphertext and trailer, or a MAC).  < 0: drop
 * it (no key: never sent in clear). */
static int enc_tx(struct mrcd *d, struct mrce_tx_pkt *pk, struct mrc_dp_out *o,
		  unsigned slot)
{
	struct iovec body;
	int rc = mrcd_enc_seal(d->enc, pk, slot, &body);
	if (rc == 1) {
		o->iov[1] = body;
		o->iovcnt = 2;
	}
	return rc < 0 ? rc : 0;
}

int mrcd_node_set_aead(struct mrcd *d, const struct mrc_auth_conn_id *id, int role,
		       const struct mrc_auth_conn *c)
{
	if (!d->enc)
		return 0;
	int req = role == MRC_AUTH_REQUESTER;
	uint32_t qpn = req ? id->req_qpn : id->rep_qpn;
	uint32_t host = req ? id->rep_host : id->req_host;
	uint32_t rqpn = req ? id->rep_qpn : id->req_qpn;
	uint32_t peer;
	const char *why = NULL;
	int rc = mrcd_peer_of_host(d, host, &peer);
	if (!rc)
		rc = mrcd_enc_set(d->enc, qpn, peer, rqpn, c, &why);
	if (rc)
		mrcd_log(MRCD_LOG_WARNING, "qp %#x: AEAD keys not set: %s", qpn,
			 why ? why : strerror(-rc));
	return rc;
}

/* The mode's counters, once at exit (the operator interface does not show
 * them yet): what bench/fabric/auth.sh reads to know the mode was used. */
static void enc_report(struct mrcd *d)
{
	struct mrcd_enc_stats s;
	mrcd_enc_get_stats(d->enc, &s);
	mrcd_log(MRCD_LOG_NOTICE, "payload encryption: %llu packets sealed (%llu failed), "
		 "%llu opened, %llu trimmed; dropped: %llu bad tag, %llu bad crc, %llu bad "
		 "length, %llu unsealed, %llu without keys, %llu replayed, %llu stale NOQP; "
		 "%llu not sent (no key)",
		 (unsigned long long)s.tx_sealed, (unsigned long long)s.tx_fail,
		 (unsigned long long)s.rx_opened, (unsigned long long)s.rx_trimmed,
		 (unsigned long long)s.rx_bad_auth, (unsigned long long)s.rx_bad_pcrc,
		 (unsigned long long)s.rx_bad_len, (unsigned long long)s.rx_missing,
		 (unsigned long long)s.rx_nokey, (unsigned long long)s.rx_replay,
		 (unsigned long long)s.rx_stale, (unsigned long long)s.tx_nokey);
}

void mrcd_node_clear_aead(struct mrcd *d, uint32_t qpn)
{
	if (d->enc)
		mrcd_enc_clear(d->enc, qpn);
}

/* ---- transmit, completions, events ------------------------------------- */

static void log_event(struct mrcd *d, const struct mrce_event *ev)
{
	/* An observer of events logs path changes itself, through a rate
	 * limiter (a flapping link must not flood the journal). */
	int taken;
	mrcd_observe_event(d, ev, &taken);
	if (taken && (ev->type == MRC_EVT_EV_STATE || ev->type == MRC_EVT_FLOOR))
		return;
	uint32_t host = ev->peer < d->max_peers ? d->peers[ev->peer].host : NO_ID;
	switch (ev->type) {
	case MRC_EVT_EV_STATE:
		mrcd_log(ev->new_state == MRC_EV_GOOD ? MRCD_LOG_INFO : MRCD_LOG_NOTICE,
			 "path host %u ev %u: %s -> %s (%s)", host, ev->ev,
			 mrce_ev_state_name(ev->old_state), mrce_ev_state_name(ev->new_state),
			 mrce_ev_reason_name(ev->reason));
		break;
	case MRC_EVT_QP_ERROR:
		mrcd_log(MRCD_LOG_WARNING, "qp %#x (peer host %u) failed: %s", ev->qpn, host,
			 mrc_strerror(ev->err));
		break;
	case MRC_EVT_QP_NO_PATH:
		mrcd_log(MRCD_LOG_WARNING, "qp %#x (peer host %u): every path is denied, waiting",
			 ev->qpn, host);
		break;
	case MRC_EVT_QP_PATH_BACK:
		mrcd_log(MRCD_LOG_NOTICE, "qp %#x (peer host %u): a path is back, resumed",
			 ev->qpn, host);
		break;
	case MRC_EVT_FLOOR:
		mrcd_log(MRCD_LOG_DEBUG, "path host %u ev %u kept in use (ev_floor)", host, ev->ev);
		break;
	default:
		break;
	}
}

void mrcd_flush(struct mrcd *d)
{
	/* Completions first: their owners often post the next work at once
	 * (a reply, the next chunk), which then leaves in the same batch as
	 * the ACKs instead of in a second system call. */
	struct mrce_wc wc[64];
	int n;
	while ((n = mrce_poll_cq(d->eng, wc, 64)) > 0)
		for (int i = 0; i < n; i++) {
			struct mrcd_qpb *b = &d->qpb[wc[i].qpn & 0xffff];
			if (b->fn && b->qpn == wc[i].qpn)
				b->fn(b->ctx, &wc[i]);
			else
				d->st.wc_unbound++;
		}
	struct mrce_event ev;
	while (mrce_poll_event(d->eng, &ev))
		log_event(d, &ev);
	struct mrce_tx_pkt pk[MRC_DP_BATCH];
	struct mrc_dp_out out[MRC_DP_BATCH];
	for (int guard = 0; guard < 1024; guard++) {
		uint64_t now = mrcd_now();
		int m = 0;
		n = mrce_tx(d->eng, now, pk, MRC_DP_BATCH);
		for (int i = 0; i < n; i++) {
			struct mrcd_peer *p = &d->peers[pk[i].peer];
			if (pk[i].peer >= d->max_peers || !p->used || pk[i].ev >= p->nev) {
				d->st.tx_unmapped++;
				continue;
			}
			struct mrc_dp_out *o = &out[m++];
			o->plane = d->topo ? p->plane[pk[i].ev] : 0;
			o->dport = 0;
			o->dst = p->dst[pk[i].ev];
			o->iov[0] = (struct iovec){ pk[i].hdr, pk[i].hdr_len };
			o->iovcnt = 1;
			if (pk[i].plen) {
				o->iov[1] = (struct iovec){ (void *)pk[i].payload, pk[i].plen };
				o->iov[2] = (struct iovec){ pk[i].trailer, MRC_TRAILER_LEN };
				o->iovcnt = 3;
			}
			/* AEAD mode: every packet sealed, or not sent at all. */
			if (d->enc && enc_tx(d, &pk[i], o, (unsigned)m - 1) < 0) {
				m--;
				continue;
			}
			if (d->topo && p->host == d->self) {
				mrcd_local_send(d, o);   /* copied: the slot is free again */
				m--;
			}
		}
		if (m)
			mrc_dp_send(d->dp, out, (uint32_t)m);
		if (n < MRC_DP_BATCH)
			break;
	}
	mrcd_timer_arm(d);
}

void mrcd_timer_arm(struct mrcd *d)
{
	uint64_t dl = mrce_next_deadline(d->eng);
	if (ev_is_pending(&d->timer)) {
		/* Due in this loop turn and not run yet: when the deadline still
		 * holds it stays pending, to run after the watchers still pending
		 * above it, in this turn; re-armed with 0 s it would wait for the
		 * next, and a datagram in every turn would put the tick off
		 * indefinitely. */
		if (dl <= mrcd_now())
			return;
		d->st.timer_superseded++;
	} else if (dl == d->timer_dl && (dl == UINT64_MAX || ev_is_active(&d->timer))) {
		return;   /* armed for that deadline already */
	}
	ev_timer_stop(d->loop, &d->timer);
	d->timer_dl = dl;
	if (dl != UINT64_MAX) {
		/* libev counts from the loop turn's start: bring it to now, or
		 * the timer fires early by what this turn has taken so far and
		 * wakes the loop for a tick with nothing due. */
		ev_now_update(d->loop);
		uint64_t now = mrcd_now();
		double s = dl > now ? (double)(dl - now) / 1e9 : 0.0;
		ev_timer_set(&d->timer, s, 0.0);
		ev_timer_start(d->loop, &d->timer);
	}
}

int mrcd_send_ctrl(struct mrcd *d, uint32_t host, uint32_t plane, uint32_t spine,
		   const void *buf, size_t len, int side)
{
	struct mrc_dp_out o = { .plane = 0, .iovcnt = 1,
		.iov = { { (void *)buf, len } } };
	if (!d->topo) {
		o.dst = in6addr_loopback;
	} else {
		struct mrc_path path;
		int ev = mrc_topo_ev_of(d->topo, plane, spine % d->topo->n_spines[plane]);
		if (ev >= 0 && host == d->self) {
			o.plane = plane;
			d->st.ctrl_tx++;
			return mrcd_local_send(d, &o);
		}
		if (ev < 0 || mrc_topo_path(d->topo, d->self, host, (uint32_t)ev, &path))
			return -ENETUNREACH;
		struct mrc_srv6_err e;
		if (mrc_usid_encode(&d->blk, path.usids, path.n_usids, &o.dst, &e))
			return -EINVAL;
		o.plane = plane;
	}
	d->st.ctrl_tx++;
	return mrc_dp_send(side && d->side ? d->side : d->dp, &o, 1) == 1 ? 0 : -EIO;
}

static uint16_t side_port(const struct mrcd *d)
{
	return mrcd_cfg_side_port(&d->cfg);
}

/* The side channel (core.h, d->side) carries control only. */
static void on_side_rx(struct ev_loop *loop, ev_io *w, int revents)
{
	struct mrcd *d = w->data;
	(void)loop;
	(void)revents;
	struct mrc_dp_in in[MRC_DP_BATCH];
	int n = mrc_dp_recv(d->side, (uint32_t)(w - d->side_w), in, MRC_DP_BATCH);
	uint64_t now = mrcd_now();
	for (int i = 0; i < n; i++) {
		if (!mrc_wire_is_ctrl(in[i].buf, in[i].len)) {
			d->st.rx_side_data++;
			continue;
		}
		/* From a daemon's side port, it stands for its MRC port. */
		if (in[i].sport == side_port(d))
			in[i].sport = (uint16_t)d->cfg.port;
		else
			in[i].sport = 0;   /* counted as rx_bad_sport */
		mrcd_node_rx(d, &in[i], now);
	}
	mrcd_flush(d);
}

/* Opens the side channel when the datapath has endpoints (dpep.h): the
 * udp provider on the same planes, on side_port. */
static int side_open(struct mrcd *d, const struct mrc_dp_cfg *dc, char *err, size_t errlen)
{
	if (!d->topo || !mrc_dp_has_eps(d->dp))
		return 0;
	struct mrc_dp_cfg sc = *dc;
	/* Control only, read one batch per wakeup (on_side_rx): no GRO, whose
	 * split buffers could hold datagrams the descriptor does not show. */
	sc.args = "gro=off";
	sc.port = side_port(d);
	char why[256] = "";
	int rc = mrc_dp_open(&d->side, "udp", &sc, why, sizeof(why));
	if (rc) {
		snprintf(err, errlen, "datapath %s: its side channel for first contact (udp): %s",
			 mrc_dp_name(d->dp), why[0] ? why : strerror(-rc));
		return rc;
	}
	for (uint32_t i = 0; i < d->nplanes; i++) {
		ev_io_init(&d->side_w[i], on_side_rx, mrc_dp_fd(d->side, i), EV_READ);
		ev_set_priority(&d->side_w[i], MRCD_PRI_RX);
		d->side_w[i].data = d;
		ev_io_start(d->loop, &d->side_w[i]);
	}
	mrcd_log(MRCD_LOG_NOTICE, "datapath %s: first contact over udp port %u",
		 mrc_dp_name(d->dp), (unsigned)sc.port);
	return 0;
}

/* The engine's deadline.  Datagrams that arrived before it were already
 * taken in this loop turn: the socket watchers run first (MRCD_PRI_RX), and
 * their flush re-armed this timer past the deadline when the ACKs they
 * carried made it so (daemon.timer_superseded); it runs only when the
 * deadline holds after them.  Poll-mode planes have no watcher: they are
 * polled here first (no system call; a no-op for socket planes). */
static void on_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct mrcd *d = w->data;
	(void)loop;
	(void)revents;
	dp_poll(d);
	mrce_tick(d->eng, mrcd_now());
	mrcd_flush(d);
}

/* ---- plane link monitor ------------------------------------------------ */

static void on_link(const struct mrc_link_event *le, void *arg)
{
	struct mrcd *d = arg;
	for (uint32_t pl = 0; pl < d->nplanes; pl++) {
		if (strcmp(le->name, d->plane_if[pl]))
			continue;
		int down = le->deleted || !mrc_link_event_usable(le);
		uint32_t bit = 1u << pl;
		if (!!(d->local_down & bit) == down)
			return;
		d->local_down ^= bit;
		mrcd_note(d, "plane", "plane %u NIC %s %s", pl, le->name,
			  down ? "down: its paths are denied" : "up: probing its paths");
		uint64_t now = mrcd_now();
		for (uint32_t p = 0; p < d->max_peers; p++)
			if (d->peers[p].used)
				mrcd_plane_apply(d, p, pl, now);
		mrcd_plane_state_changed(d);
		mrcd_flush(d);
		return;
	}
}

static void on_lm(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)loop;
	(void)revents;
	struct mrcd *d = w->data;
	mrc_linkmon_dispatch(d->lm);
}

int mrcd_linkmon_start(struct mrcd *d)
{
	if (!d->topo)
		return 0;
	int rc = mrc_linkmon_open(&d->lm, true, on_link, d);
	if (rc)
		return rc;
	ev_io_init(&d->lm_w, on_lm, mrc_linkmon_fd(d->lm), EV_READ);
	d->lm_w.data = d;
	ev_io_start(d->loop, &d->lm_w);
	mrc_linkmon_dispatch(d->lm);
	return 0;
}

/* ---- setup ------------------------------------------------------------- */

#define REPLAY_WINDOW_NS 5000000000ull   /* CTRL reordering tolerated */

/* The cluster key: without it this daemon could neither prove itself to
 * its peers nor check them, so it does not start. */
static int mrcd_auth_init(struct mrcd *d, char *err, size_t errlen)
{
	const char *why = "";
	int rc = mrc_auth_key_load(d->cfg.key_file, &d->auth, &why);
	if (rc) {
		snprintf(err, errlen, "cluster key %s (key_file): %s; `mrcd --genkey PATH` makes "
			 "one, to copy to every host (owner root, mode 0600; docs/operator.md)",
			 d->cfg.key_file, why);
		return rc;
	}
	/* A fresh epoch per start: peers issue us cookies for it, so nothing
	 * sealed by or for an earlier run is acted on (docs/security.md);
	 * stamps within max_clock_skew_ms of our clock (NTP/PTP). */
	if ((rc = mrc_auth_ctrl_tx_init(&d->ctrl_tx))) {
		snprintf(err, errlen, "CTRL epoch: %s", strerror(-rc));
		return rc;
	}
	struct mrc_auth_replay_cfg rc_cfg = { .self_host = d->self, .max_hosts = d->nhosts,
		.window_ns = REPLAY_WINDOW_NS,
		.max_skew_ns = (uint64_t)d->cfg.max_clock_skew_ms * 1000000,
		.epoch = d->ctrl_tx.epoch };
	if ((rc = mrc_auth_replay_create(&rc_cfg, &d->replay)))
		snprintf(err, errlen, "CTRL replay table: %s", strerror(-rc));
	return rc;
}

static int plane_ifs(struct mrcd *d, char *err, size_t errlen)
{
	if (d->cfg.plane_ifs[0]) {
		char tmp[MRCD_PATH_MAX], *save = NULL;
		snprintf(tmp, sizeof(tmp), "%s", d->cfg.plane_ifs);
		uint32_t n = 0;
		for (char *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
			if (n == d->nplanes || strlen(t) >= 16) {
				snprintf(err, errlen, "plane_ifs: '%s' names more than %u planes or a name over 15 characters",
					 d->cfg.plane_ifs, d->nplanes);
				return -EINVAL;
			}
			snprintf(d->plane_if[n++], 16, "%s", t);
		}
		if (n != d->nplanes) {
			snprintf(err, errlen, "plane_ifs: %u names for %u planes", n, d->nplanes);
			return -EINVAL;
		}
		return 0;
	}
	/* The fabric tool names a host's plane NIC after the leaf it meets. */
	for (uint32_t pl = 0; pl < d->nplanes; pl++)
		snprintf(d->plane_if[pl], 16, "%s",
			 d->topo->nodes[mrc_topo_host_leaf(d->topo, d->self, pl)].name);
	return 0;
}

static int resolve_self(struct mrcd *d, char *err, size_t errlen)
{
	const char *h = d->cfg.host;
	if (!mrc_topo_host_lookup(d->topo, h, &d->self))
		return 0;
	snprintf(err, errlen, "host '%s' is neither a host name nor an index below %u of the topology",
		 h, d->topo->n_hosts);
	return -EINVAL;
}

int mrcd_node_init(struct mrcd *d, char *err, size_t errlen)
{
	int rc;
	mrc_usid_block_default(&d->blk);
	if (d->cfg.topology[0]) {
		if ((rc = mrc_topo_load(d->cfg.topology, &d->topo, err, errlen)))
			return rc;
		d->blk.prefix = d->topo->block;
		d->blk.bits = d->topo->block_bits;
		if ((rc = resolve_self(d, err, errlen)))
			return rc;
		d->nhosts = d->topo->n_hosts;
		d->nplanes = d->topo->planes;
		if ((rc = plane_ifs(d, err, errlen)))
			return rc;
		struct mrc_srv6_err e;
		uint16_t u = d->topo->nodes[d->topo->hosts[d->self]].usid;
		if (mrc_usid_encode(&d->blk, &u, 1, &d->self_addr, &e)) {
			snprintf(err, errlen, "host uSID %#x does not encode", u);
			return -EINVAL;
		}
	} else {
		d->nhosts = d->nplanes = 1;
		d->self_addr = in6addr_loopback;
	}
	if ((rc = mrcd_auth_init(d, err, errlen)))
		return rc;
	d->peer_of_host = malloc(sizeof(uint32_t) * d->nhosts);
	d->host_epoch = calloc(d->nhosts, sizeof(uint64_t));
	d->host_of_usid = malloc(sizeof(uint32_t) * 65536);
	d->qpb = calloc(65536, sizeof(*d->qpb));
	d->max_peers = d->nhosts < 65535 ? d->nhosts + 1 : 65535;
	d->peers = calloc(d->max_peers, sizeof(*d->peers));
	if (!d->peer_of_host || !d->host_epoch || !d->host_of_usid || !d->qpb || !d->peers)
		return -ENOMEM;
	memset(d->peer_of_host, 0xff, sizeof(uint32_t) * d->nhosts);
	memset(d->host_of_usid, 0xff, sizeof(uint32_t) * 65536);
	for (uint32_t h = 0; d->topo && h < d->nhosts; h++)
		d->host_of_usid[d->topo->nodes[d->topo->hosts[h]].usid] = h;

	struct mrce_cfg ec;
	mrce_cfg_default(&ec);
	ec.mtu = d->cfg.mtu;
	ec.window = d->cfg.window;
	ec.ev_floor = d->cfg.ev_floor;
	ec.max_peers = d->max_peers;
	ec.max_qps = 65535;
	ec.max_mrs = d->cfg.max_clients * d->cfg.client_max_mrs;   /* checked by mrcd_cfg_check_limits */
	ec.probe_interval_ns = (uint64_t)d->cfg.probe_interval_us * 1000;
	ec.probe_max_interval_ns = (uint64_t)d->cfg.probe_max_interval_us * 1000;
	ec.rto_min_ns = (uint64_t)d->cfg.rto_min_us * 1000;
	ec.rto_max_ns = (uint64_t)d->cfg.rto_max_us * 1000;
	if (ec.rto_init_ns < ec.rto_min_ns)
		ec.rto_init_ns = ec.rto_min_ns;
	if (ec.rto_init_ns > ec.rto_max_ns)
		ec.rto_init_ns = ec.rto_max_ns;
	ec.cc = strcmp(d->cfg.cc, "fixed") ? MRC_CC_NSCC : MRC_CC_FIXED;
	ec.rnr_retry = d->cfg.rnr_retry;
	ec.qp_ev_stats = d->cfg.qp_ev_stats;
	ec.no_path_timeout_ns = (uint64_t)d->cfg.no_path_timeout_ms * 1000000;
	/* Every QP and peer gets tokens derived from the cluster key. */
	ec.require_tokens = 1;
	const char *why = NULL;
	if ((rc = mrce_create(&ec, &d->eng, &why))) {
		snprintf(err, errlen, "engine: %s", why ? why : strerror(-rc));
		return rc;
	}
	struct mrc_dp_plane pl[MRC_DP_MAX_PLANES];
	memset(pl, 0, sizeof(pl));
	for (uint32_t i = 0; i < d->nplanes; i++) {
		snprintf(pl[i].ifname, sizeof(pl[i].ifname), "%s", d->topo ? d->plane_if[i] : "");
		pl[i].local = d->self_addr;
	}
	struct mrc_dp_cfg dc = { .planes = pl, .nplanes = d->nplanes, .port = (uint16_t)d->cfg.port,
		.args = d->cfg.datapath_args[0] ? d->cfg.datapath_args : NULL };
	char dwhy[256] = "";
	if ((rc = mrc_dp_open(&d->dp, d->cfg.datapath, &dc, dwhy, sizeof(dwhy)))) {
		snprintf(err, errlen, "datapath %s: %s", d->cfg.datapath, dwhy[0] ? dwhy : strerror(-rc));
		return rc;
	}
	if ((rc = side_open(d, &dc, err, errlen)))
		return rc;
	int polled = 0;
	for (uint32_t i = 0; i < d->nplanes; i++) {
		int fd = mrc_dp_fd(d->dp, i);
		if (fd == -EOPNOTSUPP) {
			polled = 1;
			continue;
		}
		if (fd < 0) {
			snprintf(err, errlen, "datapath %s: plane %u: no descriptor to wait on (%s)",
				 mrc_dp_name(d->dp), i, strerror(-fd));
			return fd;
		}
		ev_io_init(&d->rx_w[i], on_rx, fd, EV_READ);
		ev_set_priority(&d->rx_w[i], MRCD_PRI_RX);
		d->rx_w[i].data = d;
		ev_io_start(d->loop, &d->rx_w[i]);
	}
	if (polled) {
		struct mrcd_poller p = { .poll = dp_poll, .arm = dp_arm, .ctx = d };
		if ((rc = mrcd_poller_add(d, &p))) {
			snprintf(err, errlen, "datapath %s: no poller slot", mrc_dp_name(d->dp));
			return rc;
		}
		mrcd_log(MRCD_LOG_NOTICE, "datapath %s is poll-mode: mrcd spins on its core",
			 mrc_dp_name(d->dp));
	}
	ev_init(&d->timer, on_timer);
	d->timer.data = d;
	d->timer_dl = UINT64_MAX;
	if (!strcmp(d->cfg.payload_encryption, "aes-gcm") &&
	    (rc = mrcd_enc_create(&d->enc, &why))) {
		snprintf(err, errlen, "%s", why);
		return rc;
	}
	if (d->enc)
		mrcd_log(MRCD_LOG_NOTICE, "payload encryption: aes-gcm (connections keyed at setup)");
	return 0;
}

void mrcd_node_fini(struct mrcd *d)
{
	mrcd_local_fini(d);
	if (d->lm)
		mrc_linkmon_close(d->lm);
	mrcd_poller_del(d, d);
	for (uint32_t i = 0; d->side && i < d->nplanes; i++)
		ev_io_stop(d->loop, &d->side_w[i]);
	mrc_dp_close(d->side);
	mrc_dp_close(d->dp);
	for (uint32_t p = 0; p < d->max_peers && d->peers; p++) {
		free(d->peers[p].dst);
		free(d->peers[p].plane);
		free(d->peers[p].deny);
	}
	if (d->enc)
		enc_report(d);
	mrcd_enc_free(d->enc);
	mrce_destroy(d->eng);
	mrc_topo_free(d->topo);
	mrc_auth_replay_free(d->replay);
	mrc_auth_free(d->auth);
	free(d->peers);
	free(d->peer_of_host);
	free(d->host_epoch);
	free(d->host_of_usid);
	free(d->qpb);
}

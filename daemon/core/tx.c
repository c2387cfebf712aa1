/* Sending: the engine's packets out through the datapath (sealed in the
 * AEAD mode), completions to their owners, engine events to the log (the
 * engine's timer: timer.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/core/enc.h"
#include "daemon/core/node.h"
#include "mrc/error.h"

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
void mrcd__enc_report(struct mrcd *d)
{
	struct mrce_seal_stats s;
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

int mrcd_aead_counts(struct mrcd *d, uint64_t *sealed, uint64_t *opened, uint64_t *dropped)
{
	if (!d->enc)
		return -ENOENT;
	struct mrce_seal_stats es;
	mrcd_enc_get_stats(d->enc, &es);
	*sealed = es.tx_sealed;
	*opened = es.rx_opened;
	*dropped = es.rx_bad_auth + es.rx_bad_pcrc + es.rx_bad_len + es.rx_missing + es.rx_nokey +
		   es.rx_replay + es.rx_stale + es.tx_nokey;
	return 0;
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
	mrcd_health_event(d, ev);
	mrcd_observe_event(d, ev, &taken);
	if (taken && (ev->type == MRCE_EVT_EV_STATE || ev->type == MRCE_EVT_FLOOR))
		return;
	uint32_t host = ev->peer < d->max_peers ? d->peers[ev->peer].host : MRCD_NO_ID;
	switch (ev->type) {
	case MRCE_EVT_EV_STATE:
		mrcd_log(ev->new_state == MRCE_EV_GOOD ? MRCD_LOG_INFO : MRCD_LOG_NOTICE,
			 "path host %u ev %u: %s -> %s (%s)", host, ev->ev,
			 mrce_ev_state_name(ev->old_state), mrce_ev_state_name(ev->new_state),
			 mrce_ev_reason_name(ev->reason));
		break;
	case MRCE_EVT_QP_ERROR:
		mrcd_log(MRCD_LOG_WARNING, "qp %#x (peer host %u) failed: %s", ev->qpn, host,
			 mrc_strerror(ev->err));
		break;
	case MRCE_EVT_QP_NO_PATH:
		mrcd_log(MRCD_LOG_WARNING, "qp %#x (peer host %u): every path is denied, waiting",
			 ev->qpn, host);
		break;
	case MRCE_EVT_QP_PATH_BACK:
		mrcd_log(MRCD_LOG_NOTICE, "qp %#x (peer host %u): a path is back, resumed",
			 ev->qpn, host);
		break;
	case MRCE_EVT_FLOOR:
		mrcd_log(MRCD_LOG_DEBUG, "path host %u ev %u kept in use (ev_floor)", host, ev->ev);
		break;
	default:
		break;
	}
}

/* The DSCP a packet of class tc is marked with (mrcd.conf dscp_*). */
static uint8_t class_dscp(const struct mrcd *d, uint8_t tc)
{
	switch (tc) {
	case MRCE_TC_URGENT: return (uint8_t)d->cfg.dscp_urgent;
	case MRCE_TC_BULK: return (uint8_t)d->cfg.dscp_bulk;
	default: return (uint8_t)d->cfg.dscp_default;
	}
}

/* The engine's completions to their owners, its events to the log. */
static void deliver(struct mrcd *d)
{
	struct mrce_wc wc[64];
	int n;
	while ((n = mrce_wc_drain(d->eng, wc, 64)) > 0)
		for (int i = 0; i < n; i++) {
			struct mrcd_qpb *b = &d->qpb[wc[i].qpn & 0xffff];
			if (b->fn && b->qpn == wc[i].qpn)
				b->fn(b->ctx, &wc[i]);
			else
				d->st.wc_unbound++;
		}
	struct mrce_event ev;
	while (mrce_event_pop(d->eng, &ev))
		log_event(d, &ev);
}

/* One mrce_tx of up to max packets out through the datapath; returns how
 * many the engine gave. */
static int tx_batch(struct mrcd *d, uint32_t max)
{
	struct mrce_tx_pkt pk[MRC_DP_BATCH];
	struct mrc_dp_out out[MRC_DP_BATCH];
	int m = 0;
	int n = mrce_tx(d->eng, mrcd_now(), pk, max);
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
		o->dscp = class_dscp(d, pk[i].tclass);
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
		if (d->self_inproc && p->host == d->self) {
			mrcd_local_send(d, o);   /* copied: the slot is free again */
			m--;
		}
	}
	if (m)
		mrc_dp_send(d->dp, out, (uint32_t)m);
	return n;
}

void mrcd__flush_some(struct mrcd *d, uint32_t max)
{
	deliver(d);
	if (max)
		tx_batch(d, max < MRC_DP_BATCH ? max : MRC_DP_BATCH);
}

void mrcd_flush(struct mrcd *d)
{
	/* Completions first: their owners often post the next work at once
	 * (a reply, the next chunk), which then leaves in the same batch as
	 * the ACKs instead of in a second system call. */
	deliver(d);
	for (int guard = 0; guard < 1024; guard++) {
		if (tx_batch(d, MRC_DP_BATCH) < MRC_DP_BATCH)
			break;
		/* A window of bulk is many batches: urgent work that came
		 * meanwhile goes first every urgent_turn_us (urgent.c).  The
		 * urgent receive queue is read unless a receive batch is live
		 * (a flush from inside a datagram's work). */
		if (mrcd__urgent_due(d))
			mrcd__urgent_serve(d, !d->rx_batch);
	}
	mrcd_timer_arm(d);
}

int mrcd_send_ctrl(struct mrcd *d, uint32_t host, uint32_t plane, uint32_t spine,
		   const void *buf, size_t len, int side)
{
	struct mrc_dp_out o = { .plane = 0, .iovcnt = 1,
		.iov = { { (void *)buf, len } } };
	if (!d->topo) {
		o.dst = in6addr_loopback;
		if (d->self_inproc) {   /* no side channel in loopback mode */
			d->st.ctrl_tx++;
			return mrcd_local_send(d, &o);
		}
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

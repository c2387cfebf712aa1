/* Receiving: datagrams from the datapath into the engine, or CTRL into
 * the connection manager, after the checks every datagram passes first
 * (daemon/core/node.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/core/enc.h"
#include "daemon/core/node.h"

/* The topology host a source address names: only those hosts take part,
 * and in loopback mode only this host's own loopback address. */
static uint32_t host_of_src(struct mrcd *d, const struct in6_addr *src)
{
	if (!d->topo)
		return IN6_ARE_ADDR_EQUAL(src, &in6addr_loopback) ? 0 : MRCD_NO_ID;
	uint16_t usid;
	if (mrc_usid_active(&d->blk, src, &usid))
		return MRCD_NO_ID;
	return d->host_of_usid[usid];
}

void mrcd_node_rx(struct mrcd *d, struct mrc_dp_in *in, uint64_t now)
{
	mrcd__node_rx_flags(d, in, now, 0);
}

void mrcd__node_rx_flags(struct mrcd *d, struct mrc_dp_in *in, uint64_t now, uint32_t rx_flags)
{
	uint32_t host = host_of_src(d, &in->src);
	if (host == MRCD_NO_ID) {
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
	if (mrce_is_ctrl(in->buf, in->len)) {
		mrcd_cm_rx(d, host, in->buf, in->len);
		return;
	}
	/* Only a peer that exists takes data and probes: peers come from
	 * authenticated CTRL or local use, never from an unauthenticated
	 * packet naming a topology address (which would also make us
	 * beacon to that host every second). */
	uint32_t peer = d->peer_of_host[host];
	if (peer == MRCD_NO_ID) {
		d->st.rx_no_peer++;
		return;
	}
	if (d->enc && mrcd_enc_open(d->enc, peer, in->buf, &in->len))
		return;   /* AEAD mode: forged, replayed, corrupt or unsealed */
	mrce_rx(d->eng, now, peer, in->buf, in->len, rx_flags | (in->ecn_ce ? MRCE_RX_ECN : 0u));
}

/* Batches rx_plane takes per wakeup at most. */
#define RX_ROUNDS 8

/* After datagram i of a batch of n, urgent work first (urgent.c): once
 * the batch's own urgent datagrams (handed up first) are done, so their
 * completions go out before the bulk behind them is read, and every
 * urgent_turn_us of the rest.  The urgent queue is read only once those
 * are done: their buffers are the ones it reuses. */
static void rx_urgent_point(struct mrcd *d, const struct mrc_dp_in *in, int i, int n)
{
	int last = i + 1 == n, urgent_left = !last && in[i + 1].urgent;
	if ((in[i].urgent && !urgent_left && d->urgent_ns) || (!last && mrcd__urgent_due(d)))
		mrcd__urgent_serve(d, !urgent_left);
}

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
		/* The batch's buffers are live: a service from inside one
		 * datagram's work (a flush) must not read the urgent queue. */
		d->rx_batch = 1;
		for (int i = 0; i < n; i++) {
			/* A full batch means datagrams are queueing in the socket:
			 * this host is the bottleneck.  Say so the way a switch
			 * would, with a congestion mark, so senders slow down before
			 * the receive buffer overflows. */
			in[i].ecn_ce |= n == MRC_DP_BATCH;
			mrcd_node_rx(d, &in[i], now);
			rx_urgent_point(d, in, i, n);
		}
		d->rx_batch = 0;
		if (n < MRC_DP_BATCH)
			break;
	}
	return total;
}

void mrcd__on_rx(struct ev_loop *loop, ev_io *w, int revents)
{
	struct mrcd *d = w->data;
	(void)revents;
	mrcd__urgent_arm(d, mrcd_now());
	/* Every round full: more may wait in the datapath itself, which the
	 * descriptor does not show (datapath.h, recv), so come back next
	 * turn rather than sleep on the fd. */
	int n = rx_plane(d, (uint32_t)(w - d->rx_w));
	if (n >= RX_ROUNDS * MRC_DP_BATCH)
		ev_feed_event(loop, w, EV_READ);
	/* The busy rings are polled from an idle watcher, which libev runs
	 * only in a turn with nothing pending; while datagrams keep coming
	 * (a bulk transfer) a plane is pending nearly every turn, and fed
	 * again after a full one.  Poll them here, so a client's post waits
	 * one receive turn, not for the flow to pause (docs/step.md). */
	if (n > 0 && ev_is_active(&d->idle)) {
		d->rst.rx_turn_polls++;
		mrcd_poll_now(d);
	}
	mrcd_flush(d);
}

/* A poll-mode datapath (DPDK: no descriptor to wait on) is a poller of the
 * core's busy loop (core.c on_idle): its planes are received from every
 * loop turn, and it never lets the loop sleep, as nothing would wake it.
 * That costs a whole core, spinning, as DPDK always does: give mrcd a
 * dedicated one (docs/datapaths.md). */
int mrcd__dp_poll(void *ctx)
{
	struct mrcd *d = ctx;
	int n = 0;
	for (uint32_t pl = 0; pl < d->nplanes; pl++)
		if (!ev_is_active(&d->rx_w[pl]))
			n += rx_plane(d, pl);
	return n;
}

int mrcd__dp_arm(void *ctx)
{
	(void)ctx;
	return 1;
}

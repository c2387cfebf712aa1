/* Urgent work inside a turn that moves bulk (mrcd.conf urgent_turn_us,
 * docs/step.md "Urgent dispatch"): one loop turn of mrcd can read 512
 * datagrams or send a window of bulk packets, milliseconds of work that
 * an urgent post or datagram arriving meanwhile would wait out.  While
 * urgent QPs exist, the loops that move bulk (rx.c's receive batch, per
 * datagram; tx.c's send loop, per batch) stop every urgent_turn_us of
 * work and serve the urgent sources: the urgent QPs' rings (the pollers'
 * urgent op: a load of each ring's next slot), the planes' urgent receive
 * queues (udp), then the completions and what the engine sends first
 * (its urgent band).  The bulk resumes where it stopped. */
#include "daemon/core/core.h"

/* Packets one service sends at most: the engine's urgent band comes out
 * first, and the bulk behind it waits for the turn's own flush. */
#define URGENT_TX 8

void mrcd_urgent_count(struct mrcd *d, int delta)
{
	d->urgent_qps = (uint32_t)((int64_t)d->urgent_qps + delta);
}

void mrcd__urgent_arm(struct mrcd *d, uint64_t now)
{
	d->urgent_at = now;
}

/* Urgent datagrams waiting in a plane's urgent receive queue.  The other
 * datagrams of the batch the caller is in stay valid: they come from the
 * plane's own queue, which this does not read (datapath.h,
 * recv_urgent). */
static int urgent_rx(struct mrcd *d, uint64_t now)
{
	struct mrc_dp_in in[URGENT_TX];
	int got = 0;
	for (uint32_t pl = 0; pl < d->nplanes; pl++) {
		int n = mrc_dp_recv_urgent(d->dp, pl, in, URGENT_TX);
		for (int i = 0; i < n; i++)
			mrcd_node_rx(d, &in[i], now);
		if (n > 0)
			got += n;
	}
	return got;
}

void mrcd__urgent_serve(struct mrcd *d, int rx)
{
	/* A completion owner that flushes, or the flush below, comes back
	 * here: one service at a time. */
	if (d->urgent_in)
		return;
	d->urgent_in = 1;
	uint64_t now = mrcd_now();
	int posted = 0;
	for (uint32_t i = 0; i < d->npollers; i++)
		if (d->pollers[i].urgent)
			posted += d->pollers[i].urgent(d->pollers[i].ctx);
	int got = rx ? urgent_rx(d, now) : 0;
	d->rst.urgent_turns++;
	d->rst.urgent_posts += (uint64_t)posted;
	d->rst.urgent_rx += (uint64_t)got;
	mrcd__flush_some(d, posted || got ? URGENT_TX : 0);
	d->urgent_at = mrcd_now();
	d->urgent_in = 0;
}

/* In-process delivery of this host's datagrams to itself (core.h, local.c).
 *
 * Why not the kernel: in topology mode the host's address is local, so a
 * datagram to it would arrive on lo, and the plane sockets, bound to their
 * NICs (SO_BINDTODEVICE), would not receive it; in loopback mode lo would
 * carry it, but at a system call each way and a wake-up of the loop for
 * bytes that never leave the process.  The copy into the queue is what
 * the socket buffer would have cost, for the header; a data packet's
 * payload is not copied but handed over by reference (below). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/trace.h"
#include "daemon/core/core.h"
#include "daemon/core/node.h"

/* About the plane sockets' 8 MiB receive buffer in full datagrams. */
#define LOCAL_SLOTS 1024
/* Datagrams delivered per loop turn: other planes and timers stay served
 * (as on_rx's bounded rounds). */
#define LOCAL_TURN (8 * MRC_DP_BATCH)

/* Payloads from this size on are handed over by reference: a pointer
 * into the sender's registered memory (the engine's packet points there),
 * so the bytes are copied once, into the receiver's region, instead of
 * twice (mrc_bulk through one mrcd: memmove was 74 % of mrcd's time).
 * Safe because the memory stays mapped until mrcd__mr_drop, which calls
 * mrcd_local_unmap first; the sender may not touch the bytes before its
 * WRITE completes, which needs this delivery's ACK (a retransmission in
 * the queue after that completion only carries bytes nobody waits for,
 * as a late duplicate from the wire would).  Atomics' addends live in the
 * engine's WQE, which a completion frees: they are copied. */
#define LOCAL_REF_MIN 256

struct local_slot {
	uint32_t len, plane;
	uint32_t hlen, plen;      /* ref: header bytes in buf, payload at ref */
	const uint8_t *ref;       /* the payload by reference, or NULL: all in buf */
	uint8_t buf[MRC_DP_MAX_DGRAM];
};

struct mrcd_local {
	uint32_t head, n;
	ev_timer w;
	struct local_slot s[LOCAL_SLOTS];
};

static void on_local(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct mrcd *d = w->data;
	struct mrcd_local *l = d->local;
	(void)loop;
	(void)revents;
	uint32_t todo = l->n < LOCAL_TURN ? l->n : LOCAL_TURN;
	/* A backlog of a batch or more: this host is the bottleneck, marked
	 * as on_rx marks a full receive batch. */
	int busy = l->n >= MRC_DP_BATCH;
	uint64_t now = mrcd_now();
	/* The stages the udp datapath records (MRC_TRACE, bench/trace.py):
	 * handed over here, read there. */
	MRC_TRACE(MRC_TR_D_RX, l->s[l->head].plane, l->s[l->head].len, todo);
	for (uint32_t k = 0; k < todo; k++) {
		struct local_slot *s = &l->s[l->head];
		if (s->ref) {
			/* What mrcd__node_rx_flags would find for this host's own
			 * data packet (source this host, the MRC port, no AEAD:
			 * refs are made only without it), then the engine. */
			uint32_t peer = d->peer_of_host[d->topo ? d->self : 0];
			if (peer == MRCD_NO_ID)
				d->st.rx_no_peer++;
			else
				mrce_rx_split(d->eng, now, peer, s->buf, s->hlen, s->ref, s->plen,
					      MRCE_RX_LOCAL | (busy ? MRCE_RX_ECN : 0u));
		} else {
			struct mrc_dp_in in = { .buf = s->buf, .len = s->len, .src = d->self_addr,
				.sport = (uint16_t)d->cfg.port, .plane = s->plane, .ecn_ce = busy };
			mrcd__node_rx_flags(d, &in, now, MRCE_RX_LOCAL);
		}
		/* Popped only now: what the receive path queues meanwhile (a
		 * CTRL reply) must not land in the slot being read. */
		l->head = (l->head + 1) % LOCAL_SLOTS;
		l->n--;
	}
	mrcd_flush(d);
	if (l->n && !ev_is_active(&l->w)) {
		ev_timer_set(&l->w, 0., 0.);
		ev_timer_start(d->loop, &l->w);
	}
}

int mrcd_local_send(struct mrcd *d, const struct mrc_dp_out *o)
{
	struct mrcd_local *l = d->local;
	if (!l) {
		if (!(l = calloc(1, sizeof(*l))))
			return -ENOMEM;
		ev_init(&l->w, on_local);
		/* Above the engine timer, as the plane sockets' watchers: a
		 * queued ACK to itself is read before a due RTO fires. */
		ev_set_priority(&l->w, MRCD_PRI_RX);
		l->w.data = d;
		d->local = l;
	}
	size_t len = 0;
	for (uint32_t i = 0; i < o->iovcnt; i++)
		len += o->iov[i].iov_len;
	if (l->n == LOCAL_SLOTS || len > MRC_DP_MAX_DGRAM) {
		d->st.local_drop++;
		return -ENOBUFS;
	}
	struct local_slot *s = &l->s[(l->head + l->n) % LOCAL_SLOTS];
	s->ref = NULL;
	/* A data packet (header, payload, trailer: tx_batch's iovecs) whose
	 * payload is the client's memory: the header alone is copied. */
	const uint8_t *h = o->iov[0].iov_base;
	if (o->iovcnt == 3 && !d->enc && o->iov[1].iov_len >= LOCAL_REF_MIN &&
	    o->iov[0].iov_len >= 2 && h[1] != MRC_OP_ATOMIC_ADD) {
		memcpy(s->buf, h, o->iov[0].iov_len);
		s->hlen = (uint32_t)o->iov[0].iov_len;
		s->plen = (uint32_t)o->iov[1].iov_len;
		s->ref = o->iov[1].iov_base;
		d->st.local_ref++;
	} else {
		size_t off = 0;
		for (uint32_t i = 0; i < o->iovcnt; i++) {
			memcpy(s->buf + off, o->iov[i].iov_base, o->iov[i].iov_len);
			off += o->iov[i].iov_len;
		}
	}
	s->len = (uint32_t)len;
	s->plane = o->plane;
	l->n++;
	d->st.local_tx++;
	MRC_TRACE(MRC_TR_D_TX, o->plane, len, 1);
	/* Delivered on the next loop turn, never from inside the caller (the
	 * engine's transmit loop, the connection manager). */
	if (!ev_is_active(&l->w)) {
		ev_timer_set(&l->w, 0., 0.);
		ev_timer_start(d->loop, &l->w);
	}
	return 0;
}

void mrcd_local_unmap(struct mrcd *d, const void *base, size_t len)
{
	struct mrcd_local *l = d->local;
	if (!l)
		return;
	const uint8_t *b = base;
	for (uint32_t k = 0; k < l->n; k++) {
		struct local_slot *s = &l->s[(l->head + k) % LOCAL_SLOTS];
		if (!s->ref || s->ref < b || s->ref >= b + len)
			continue;
		/* Copied now, after the header, as it would have been at once. */
		memcpy(s->buf + s->hlen, s->ref, s->plen);
		s->ref = s->buf + s->hlen;
		d->st.local_unref++;
	}
}

void mrcd_local_fini(struct mrcd *d)
{
	if (!d->local)
		return;
	ev_timer_stop(d->loop, &d->local->w);
	free(d->local);
	d->local = NULL;
}

/* The daemon core's own state (the client side uses mrcd.h only; the
 * operator interface reads this too).  One instance per process, driven by
 * one libev loop. */
#ifndef MRC_DAEMON_CORE_H
#define MRC_DAEMON_CORE_H

#include <netinet/in.h>

#include "auth/auth.h"
#include "daemon/core/config.h"
#include "daemon/core/mrcd.h"
#include "datapath/datapath.h"
#include "srv6/usid.h"
#include "topology/topo.h"

#define MRCD_MAX_POLLERS 256
/* libev priority of the datagram watchers (plane sockets, side channel):
 * above the engine's timer (0), so that in a loop turn where both are
 * pending, what already arrived (ACKs above all) reaches the engine before
 * its deadline is checked: libev runs pending watchers by priority, and
 * within one priority last-in first-out, which put a due timer (queued
 * after the sockets) first. */
#define MRCD_PRI_RX EV_MAXPRI

struct mrcd_peer {
	uint8_t used;
	uint32_t host;
	uint32_t nev;
	struct in6_addr *dst;          /* [ev] uSID destination address */
	uint8_t *plane;                /* [ev] */
	uint8_t *deny;                 /* [ev] MRCD_DENY_* reasons (deny.c) */
	uint32_t remote_down;          /* planes the peer reports down */
	uint32_t ep[MRC_DP_MAX_PLANES];  /* its datapath endpoint per plane, 0
	                                    unknown (dpep.h) */
};

struct mrcd_qpb {                      /* completion owner of a QP */
	uint32_t qpn;
	mrcd_wc_fn fn;
	void *ctx;
};

struct mrcd_cm;
struct mrcd_local;
struct mrc_linkmon;
struct mrcd_enc;
struct mrc_auth_conn_id;
struct mrc_auth_conn;

struct mrcd {
	struct mrcd_cfg cfg;
	struct ev_loop *loop;
	struct mrce *eng;
	struct mrc_dp *dp;
	/* With a datapath that has endpoints (verbs), kernel UDP on the same
	 * planes and port for control to peers whose endpoint is not known
	 * yet (dpep.h); NULL otherwise. */
	struct mrc_dp *side;
	ev_io side_w[MRC_DP_MAX_PLANES];
	struct mrc_topo *topo;             /* NULL in loopback mode */
	struct mrc_usid_block blk;
	uint32_t self, nhosts, nplanes;
	struct in6_addr self_addr;
	uint32_t local_mtu;                /* QPs between two clients of this
	                                      mrcd (node.c node_engine) */
	int self_inproc;                   /* datagrams to this host through
	                                      local.c, not a datapath (node.c) */
	char plane_if[MRC_DP_MAX_PLANES][16];
	int plane_ifindex[MRC_DP_MAX_PLANES];
	uint32_t local_down;               /* planes whose NIC is down here */
	uint32_t admin_planes;             /* planes an operator disabled */

	struct mrcd_peer *peers;           /* by engine peer id */
	uint32_t max_peers;
	uint32_t *peer_of_host;            /* [host] or UINT32_MAX */
	uint64_t *host_epoch;              /* [host] its CTRL boot epoch, learnt
	                                      from its authenticated CTRL; 0
	                                      unknown (probe tokens) */
	uint32_t *host_of_usid;            /* [usid] or UINT32_MAX */
	struct mrcd_qpb *qpb;              /* [qpn & 0xffff] */

	struct mrcd_poller pollers[MRCD_MAX_POLLERS];
	uint32_t npollers;
	int busy;
	uint64_t last_work_ns;             /* the pollers last found work */
	uint64_t busy_poll_ns;             /* busy_poll_us resolved at start */
	struct mrcd_ring_stats rst;
	/* urgent.c: urgent QPs, urgent_turn_us, the last service (or turn
	 * start), a service running, a receive batch's buffers live */
	uint32_t urgent_qps;
	uint64_t urgent_ns, urgent_at;
	int urgent_in, rx_batch;
	int slice_set;                     /* sched_slice_us applied (core.c) */

	ev_io rx_w[MRC_DP_MAX_PLANES];
	ev_io lm_w;
	ev_timer timer, beacon;
	uint64_t timer_dl;                 /* the engine deadline d->timer (or the
	                                      timerfd) is armed for, UINT64_MAX
	                                      when stopped */
	ev_io timer_io;                    /* the timerfd's watcher (timer.c) */
	int timer_fd;                      /* -1: d->timer (libev) instead */
	ev_idle idle;
	ev_signal sig_term, sig_int, sig_hup;
	struct mrc_linkmon *lm;
	struct mrcd_cm *cm;
	struct mrc_auth *auth;             /* the cluster key (key_file) */
	struct mrc_auth_replay *replay;    /* CTRL freshness, per sender host */
	struct mrc_auth_ctrl_tx ctrl_tx;   /* our CTRL stamps */
	struct mrcd_enc *enc;              /* payload_encryption = aes-gcm, else NULL */
	struct mrcd_local *local;          /* datagrams to this host (local.c), or NULL */
	struct mrcd_health *health;        /* fabric-link health (health.c), or NULL */
	uint64_t started_ns;
	int stopping;
	uint64_t drain_deadline;
	ev_timer drain;
	struct mrcd_stats st;
	struct mrcd_observer obs[MRCD_MAX_OBSERVERS];
	uint32_t nobs;
};

/* core.c */
int mrcd_core_init(struct mrcd *d, char *err, size_t errlen);
void mrcd_core_fini(struct mrcd *d);

/* urgent.c: urgent work inside a turn that moves bulk.  arm: a turn
 * starts (the loop has just looked at every descriptor); due: urgent QPs
 * exist and urgent_turn_us has passed since; serve: their rings, the
 * urgent receive queues (rx: unless a receive batch is live), then the
 * completions and up to 8 packets (the engine's urgent band first). */
void mrcd__urgent_arm(struct mrcd *d, uint64_t now);
void mrcd__urgent_serve(struct mrcd *d, int rx);
static inline int mrcd__urgent_due(const struct mrcd *d)
{
	return d->urgent_qps && d->urgent_ns && mrcd_now() - d->urgent_at >= d->urgent_ns;
}
/* tx.c: the completions and events, then one mrce_tx of at most max
 * packets (0: none) sent. */
void mrcd__flush_some(struct mrcd *d, uint32_t max);

/* the data-plane glue (node.c, peers.c, rx.c, tx.c, side.c, links.c) */
/* A host's CTRL epoch, seen in an envelope that passed every check: when
 * it changes the peer's probe tokens are derived again (they are bound to
 * both epochs). */
void mrcd_peer_epoch(struct mrcd *d, uint32_t host, uint64_t epoch);
int mrcd_node_init(struct mrcd *d, char *err, size_t errlen);
void mrcd_node_fini(struct mrcd *d);
/* Arms the engine's timer for its next deadline (mrcd_flush ends with it):
 * nothing when already armed for that deadline; a timer due in the running
 * loop turn and still due stays pending for that turn. */
void mrcd_timer_arm(struct mrcd *d);
/* timer.c: the timerfd (cfg.engine_timerfd, else or when it fails libev's
 * ev_timer); fini stops and closes it. */
void mrcd_timer_init(struct mrcd *d);
void mrcd_timer_fini(struct mrcd *d);
/* side: over the side channel (d->side) when there is one. */
int mrcd_send_ctrl(struct mrcd *d, uint32_t host, uint32_t plane, uint32_t spine,
		   const void *buf, size_t len, int side);
/* One received datagram (from a plane socket or local.c) through the
 * source checks into the connection manager or the engine; does not
 * flush.  in->ecn_ce also stands for "this host is the bottleneck". */
void mrcd_node_rx(struct mrcd *d, struct mrc_dp_in *in, uint64_t now);
/* The same from local.c only: rx_flags MRCE_RX_LOCAL (a datagram that
 * never left this process: the engine skips its payload CRC). */
void mrcd__node_rx_flags(struct mrcd *d, struct mrc_dp_in *in, uint64_t now, uint32_t rx_flags);
/* The uSID destination of (host, ev) under topology t: this host's own
 * address for every EV of the self pair (delivered in-process, local.c),
 * :: where the topology has no such path (MRCD_DENY_MISSING). */
struct in6_addr mrcd_peer_dst(const struct mrcd *d, const struct mrc_topo *t, uint32_t host,
			      uint32_t ev);
/* AEAD payload mode (daemon/core/enc.h).  The connection manager calls
 * this on both sides with what it derived (mrc_auth_conn_derive: id, role
 * enum mrc_auth_role, c) after mrce_qp_set_tokens and before
 * mrce_qp_connect; the local QP is id's req_qpn (requester) or rep_qpn
 * (acceptor).  A no-op returning 0 when payload_encryption is off. */
int mrcd_node_set_aead(struct mrcd *d, const struct mrc_auth_conn_id *id, int role,
		       const struct mrc_auth_conn *c);

/* health.c: fabric-link health (docs/health.md); init does nothing in
 * loopback mode.  event: one engine event (tx.c); denies: 1 when (host,
 * ev) crosses a link health/ denies (deny.c's HEALTH reason). */
struct mrcd_health;
int mrcd_health_init(struct mrcd *d);
void mrcd_health_fini(struct mrcd *d);
int mrcd_health_reload(struct mrcd *d);
void mrcd_health_event(struct mrcd *d, const struct mrce_event *ev);
/* A HEALTH body from host (its envelope checked by cm.c). */
void mrcd_health_rx(struct mrcd *d, uint32_t host, const uint8_t *body, size_t blen);
int mrcd_health_denies(const struct mrcd *d, uint32_t host, uint32_t ev);

/* deny.c (enum mrcd_deny, the operator admin calls: mrcd.h) */
/* Recomputes the reasons of (peer, ev) from the core's state (topology,
 * links, admin planes; ADMIN_PATH is kept) and applies them to the engine:
 * the one place that denies or allows a path.  Returns the reasons. */
uint8_t mrcd_deny_update(struct mrcd *d, uint32_t peer, uint32_t ev, uint64_t now);
/* mrcd_deny_update for every EV of the peer on this plane. */
void mrcd_plane_apply(struct mrcd *d, uint32_t peer, uint32_t plane, uint64_t now);

/* reload.c: SIGHUP with a new topology of the same shape */
int mrcd_topology_reload(struct mrcd *d, const char *path, char *err, size_t errlen);

/* local.c: datagrams from this host to itself (two clients of this mrcd
 * connected to each other, CTRL to itself) never reach a socket in
 * topology mode (the plane sockets are bound to their NICs and the
 * topology has no path from a host to itself), nor in loopback mode with
 * the udp datapath unless loopback_inproc = 0 (lo would carry them at a
 * system call and a wake-up each way: d->self_inproc).  They are copied
 * into a bounded queue and handed to the receive path on the next loop
 * turn, with this host's address and the MRC port as the source, so CTRL
 * MAC and replay checks, AEAD and the engine see them as datagrams from
 * the wire, but for the payload CRC (MRCE_RX_LOCAL). */
void mrcd_local_fini(struct mrcd *d);
/* Queues one datagram (0; the queue is made on first use), or drops it
 * when the queue is full (-ENOBUFS, counted in local_drop: the engine
 * recovers as from a loss, as from a full socket buffer). */
int mrcd_local_send(struct mrcd *d, const struct mrc_dp_out *o);

/* cm.c */
int mrcd_cm_init(struct mrcd *d);
void mrcd_cm_fini(struct mrcd *d);
void mrcd_cm_rx(struct mrcd *d, uint32_t host, const uint8_t *buf, size_t len);
/* Seals a CTRL body of any type (HEALTH) to host and sends it; 0 or -errno. */
int mrcd_cm_send_body(struct mrcd *d, uint32_t host, const uint8_t *body, size_t blen);
void mrcd_plane_state_changed(struct mrcd *d);

/* core.c: observers (mrcd.h), called by tx.c */
void mrcd_observe_event(struct mrcd *d, const struct mrce_event *ev, int *taken);

/* linkmon glue (links.c) */
int mrcd_linkmon_start(struct mrcd *d);

#endif

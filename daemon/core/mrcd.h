/* The daemon core's interface to the rooms above it.
 *
 * The core (daemon/core/) owns the libev loop, the engine, the datapath,
 * the topology, peers, path denial and the daemon-to-daemon connection
 * manager; the client side (daemon/clients/) and mrc-xfer (tools/xfer/)
 * are built on the calls below, and the operator interface (daemon/oper/)
 * reads the core only through the views below ("read-only views").
 * Nothing in the core includes a room above it: it reports to them
 * through observers.
 * Everything runs on the loop's single thread.
 */
#ifndef MRC_DAEMON_MRCD_H
#define MRC_DAEMON_MRCD_H

#include <ev.h>
#include <netinet/in.h>
#include <stdint.h>

#include "daemon/core/config.h"
#include "transport/engine.h"

struct mrcd;
struct mrc_topo;

/* A core of one's own, for a program that is not mrcd (mrc-xfer): made
 * from a configuration that passed mrcd_cfg_check, with its loop, engine,
 * datapath and connection manager; run its loop (mrcd_loop) and free it. */
int mrcd_core_new(const struct mrcd_cfg *cfg, struct mrcd **out, char *err, size_t errlen);
void mrcd_core_free(struct mrcd *d);

/* Monotonic time in ns, the engine's clock. */
uint64_t mrcd_now(void);

struct ev_loop *mrcd_loop(struct mrcd *d);
struct mrce *mrcd_engine(struct mrcd *d);
/* Before a client's registered memory is unmapped (mrcd__mr_drop):
 * datagrams to this host still queued in-process whose payload points
 * into [base, base + len) get their own copy (local.c). */
void mrcd_local_unmap(struct mrcd *d, const void *base, size_t len);
/* The datapath (datapath/datapath.h): clients' regions are registered
 * with it (mrc_dp_mem_reg) where it can send from them in place. */
struct mrc_dp *mrcd_datapath(struct mrcd *d);
/* This node's host index in the topology. */
uint32_t mrcd_self_host(const struct mrcd *d);
uint32_t mrcd_n_hosts(const struct mrcd *d);
uint32_t mrcd_n_planes(const struct mrcd *d);
/* The topology, or NULL in the single-host loopback mode. */
const struct mrc_topo *mrcd_topology(const struct mrcd *d);
/* The AEAD payload mode's packet counts (what a test reads to know the
 * mode was used); -ENOENT when the mode is off. */
int mrcd_aead_counts(struct mrcd *d, uint64_t *sealed, uint64_t *opened, uint64_t *dropped);
/* Engine peer id of a topology host (the peer is created on first use). */
int mrcd_peer_of_host(struct mrcd *d, uint32_t host, uint32_t *peer);

/* After posting work to the engine from outside a packet callback: makes
 * the loop send what the engine now has. */
void mrcd_kick(struct mrcd *d);
/* Sends what the engine has now and gives completions to their owners,
 * in this loop turn (mrcd_kick defers it to the next). */
void mrcd_flush(struct mrcd *d);
/* A doorbell rang: one round of the pollers now, in this loop turn, and
 * what they posted sent before the loop sleeps again; then the loop keeps
 * polling as after mrcd_kick.  (mrcd_kick alone starts the pollers only
 * on the next turn, which costs a poll of the event backend and a turn
 * before the post leaves.) */
void mrcd_poll_now(struct mrcd *d);

/* Completions of a QP go to its owner.  The core polls the engine CQ and
 * calls on_wc for every completion of a bound QP (unbound ones are
 * dropped and counted). */
typedef void (*mrcd_wc_fn)(void *ctx, const struct mrce_wc *wc);
int mrcd_qp_bind(struct mrcd *d, uint32_t qpn, mrcd_wc_fn fn, void *ctx);
void mrcd_qp_unbind(struct mrcd *d, uint32_t qpn);

/* Busy polling: each registered poller runs once per loop turn while any
 * of them reports work (returns > 0); when all are idle they are asked to
 * arm their doorbells (arm(ctx) returns 0 when armed, > 0 if work arrived
 * meanwhile) and the loop sleeps until an fd or timer fires.  The eventfd
 * of a doorbell is watched by its owner with an ev_io that calls
 * mrcd_kick. */
struct mrcd_poller {
	int (*poll)(void *ctx);
	int (*arm)(void *ctx);
	/* Optional: the poller's urgent rings only (their posts taken), run
	 * from inside a loop turn that moves bulk every urgent_turn_us while
	 * urgent QPs exist (mrcd_urgent_count); returns posts taken. */
	int (*urgent)(void *ctx);
	void *ctx;
};
/* Urgent-class QPs that exist (delta +1 at creation, -1 at destruction):
 * while there are any, bulk turns stop for urgent work. */
void mrcd_urgent_count(struct mrcd *d, int delta);
int mrcd_poller_add(struct mrcd *d, const struct mrcd_poller *p);
void mrcd_poller_del(struct mrcd *d, void *ctx);

/* Ring polling figures: the core counts its polling rounds, the client
 * side (daemon/clients) the rest; the operator interface shows them
 * (stats "rings", docs/ctl.md). */
struct mrcd_ring_stats {
	uint64_t poll_rounds;      /* loop turns that ran the pollers */
	uint64_t rx_turn_polls;    /* of them run by a receive turn that read
	                              datagrams (rx.c), not the idle watcher */
	uint64_t ring_polls;       /* SQs looked at (each mrcd_cqp_poll) */
	uint32_t polled_qps;       /* MRC_CLI_QP_POLLED QPs that exist */
	uint32_t polled_parked;    /* of them parked (hdr.sleeping = 1) */
	uint64_t parks;            /* polled QPs parked */
	uint64_t notify_wakeups;   /* parked QPs woken through the notify page */
	uint64_t notify_spurious;  /* pending bytes without a parked QP */
	uint64_t notify_ticks;     /* runs of the parked-QP timer */
	uint32_t poll_interval_us; /* that timer's interval now; 0 while not
	                              running (busy polling, or nothing parked) */
	/* urgent_turn_us (core urgent.c): */
	uint64_t urgent_turns;     /* services of urgent work inside a bulk turn */
	uint64_t urgent_posts;     /* urgent posts they took */
	uint64_t urgent_rx;        /* urgent datagrams they read */
};
struct mrcd_ring_stats *mrcd_ring_stats(struct mrcd *d);

/* ---- read-only views (the operator interface) ------------------------ */
/* What a room above the core may read of its state: the operator
 * interface (daemon/oper/) sees the core only through these, the calls
 * above and the admin actions below, as bgpctl sees bgpd only through its
 * messages; none of them changes the core.  Pointers they hand out point
 * into the core and stay valid until the core next runs (the next loop
 * callback into it). */
const struct mrcd_cfg *mrcd_config(const struct mrcd *d);
/* When the core started (mrcd_now's clock). */
uint64_t mrcd_started_ns(const struct mrcd *d);
/* Bit p: plane p's NIC is down here; an operator disabled plane p. */
uint32_t mrcd_local_down(const struct mrcd *d);
uint32_t mrcd_admin_planes(const struct mrcd *d);
/* Plane p's NIC name ("" in loopback mode or for a plane out of range). */
const char *mrcd_plane_if(const struct mrcd *d, uint32_t plane);
/* A host's address: its uSID under the topology's block, ::1 in loopback
 * mode; -ENOENT (host out of range) or -EINVAL (not encodable) with *a
 * set to ::. */
int mrcd_host_addr(const struct mrcd *d, uint32_t host, struct in6_addr *a);

/* The core's own counters (stats "daemon", docs/ctl.md). */
struct mrcd_stats {
	uint64_t rx_unknown_src, rx_short, tx_unmapped, wc_unbound, ctrl_rx, ctrl_tx;
	uint64_t ctrl_bad;             /* malformed CTRL (envelope or body) */
	uint64_t local_tx, local_drop; /* datagrams to this host itself (local.c) */
	uint64_t local_ref, local_unref; /* of those, payloads handed over by
	                                    reference; copied before an unmap */
	uint64_t timer_superseded;     /* engine timer firings due in a loop turn
	                                  that did not run: the datagrams read
	                                  first in that turn (MRCD_PRI_RX) moved
	                                  the engine's deadline later */
	/* The engine timer (timer.c, docs/client.md "The engine timer"): */
	uint64_t timer_fires;          /* ran with the deadline due */
	uint64_t timer_early;          /* went off before the deadline (a
	                                  deadline that moved later): re-armed */
	uint64_t timer_rearms;         /* timerfd_settime calls */
	/* fires by lateness (fired - deadline): < 10, 50, 100, 250, 500,
	 * 1000, 2000 us, and the rest (stats daemon.timer_late_us) */
#define MRCD_TIMER_LATE_BUCKETS 8
	uint64_t timer_late[MRCD_TIMER_LATE_BUCKETS];
	/* Authentication drops (docs/security.md), by reason: */
	uint64_t rx_bad_sport;         /* UDP source port is not the MRC port */
	uint64_t ctrl_bad_mac;         /* CTRL envelope MAC fails (no key) */
	uint64_t ctrl_wrong_dst;       /* sealed for another host */
	uint64_t ctrl_wrong_src;       /* sender unknown, or not the host its
	                                  source address names */
	uint64_t ctrl_replay;          /* a stamp accepted before */
	uint64_t ctrl_stale;           /* behind the window or clock skew */
	uint64_t ctrl_no_session;      /* not under the cookie we issued to the
	                                  sender's epoch (a restart on either
	                                  side, or a replay): challenged */
	uint64_t ctrl_challenge_tx, ctrl_challenge_rx;
	uint64_t rx_no_peer;           /* data/probe from a topology host that
	                                  is no peer: peers come only from
	                                  authenticated CTRL or local use */
	uint64_t rx_side_data;         /* not CTRL, on the side channel: dropped */
	uint64_t health_changes;       /* fabric links that changed state (health.c) */
	uint64_t health_tx, health_rx; /* HEALTH messages sent, merged */
	uint64_t health_rx_limited;    /* dropped: within HEALTH_RX_MIN of the last */
	uint64_t health_rx_bad;        /* HEALTH bodies the codec refused */
	uint64_t health_suspects;      /* EVs taken out at once: a failure on
	                                  their uplink (health/suspect.h) */
	uint64_t health_located;       /* fabric links that became located or
	                                  denied, every time (health/record.h) */
	uint64_t health_denied;        /* fabric links that became denied */
};
void mrcd_stats_get(const struct mrcd *d, struct mrcd_stats *st);

/* The AEAD payload mode's counters (the engine's framing counts them:
 * struct mrce_seal_stats, transport/engine_wire.h); -ENOENT when the mode
 * is off. */
int mrcd_aead_stats(const struct mrcd *d, struct mrce_seal_stats *st);

/* deny.c: why a path is denied.  A peer's deny[ev] holds one bit per
 * reason; the engine has the EV denied exactly while a bit is set. */
enum mrcd_deny {
	MRCD_DENY_MISSING = 1u << 0,      /* the topology has no such path for the pair */
	MRCD_DENY_LOCAL_LINK = 1u << 1,   /* our NIC of the EV's plane is down */
	MRCD_DENY_REMOTE_LINK = 1u << 2,  /* the peer reports that plane down (PLANES) */
	MRCD_DENY_ADMIN_PLANE = 1u << 3,  /* an operator disabled the plane */
	MRCD_DENY_ADMIN_PATH = 1u << 4,   /* an operator denied the path */
	MRCD_DENY_HEALTH = 1u << 5,       /* it crosses a fabric link health/
	                                     denies (docs/health.md) */
};
/* "missing", "local_link", "remote_link", "admin_plane", "admin_path",
 * "health". */
const char *mrcd_deny_name(unsigned bit);

/* A peer as the core has it: its engine peer id, host, and per EV its
 * uSID destination and deny reasons (both nev long, owned by the core). */
struct mrcd_peer_view {
	uint32_t id;
	uint32_t host;
	uint32_t nev;
	uint32_t remote_down;              /* planes the peer reports down */
	const struct in6_addr *dst;        /* [ev] */
	const uint8_t *deny;               /* [ev] enum mrcd_deny bits */
};
/* Engine peer `peer`: 0, or -ENOENT when there is no such peer. */
int mrcd_peer_get(const struct mrcd *d, uint32_t peer, struct mrcd_peer_view *v);
/* The peers in id order: start with *it = 0; each call fills v with the
 * next peer and returns 1, or returns 0 when there are no more. */
int mrcd_peer_next(const struct mrcd *d, uint32_t *it, struct mrcd_peer_view *v);
/* The peer id of a host, UINT32_MAX when it is no peer (never creates one,
 * unlike mrcd_peer_of_host). */
uint32_t mrcd_peer_find(const struct mrcd *d, uint32_t host);
/* The QPs bound to a completion owner (mrcd_qp_bind): every QP mrcd
 * serves.  Start with *it = 0; 1 with *qpn, 0 when there are no more. */
int mrcd_qp_bound_next(const struct mrcd *d, uint32_t *it, uint32_t *qpn);

/* ---- operator actions ------------------------------------------------- */
/* Operator admin: disables or enables a plane for every peer, now and
 * later ones; counts the peers and the EVs denied (disable) or allowed
 * again (enable).  -EINVAL for a plane this node does not have. */
int mrcd_admin_plane(struct mrcd *d, uint32_t plane, int disable, uint32_t *npeers,
		     uint32_t *nev);
/* Operator admin: sets or clears ADMIN_PATH of (peer, ev). */
int mrcd_admin_path(struct mrcd *d, uint32_t peer, uint32_t ev, int deny);

/* The client side, destroying a QP: forgets its AEAD keys (a later set of
 * the same slot also replaces them). */
void mrcd_node_clear_aead(struct mrcd *d, uint32_t qpn);

/* ---- connection manager (daemon to daemon over the fabric) ---------- */
/* A QP's connection parameters: what the RDMA-style out-of-band blob
 * carries, and what listen/accept exchanges. */
struct mrcd_qp_addr {
	uint32_t host;     /* topology host index */
	uint32_t qpn;
	uint32_t psn;      /* first PSN the QP sends */
	uint32_t priv;     /* application data carried by connection setup
	                      (like RDMA CM private data), e.g. an rkey */
};

/* A listener on service id sid: on_req is called for each incoming
 * request; it answers with mrcd_cm_accept or mrcd_cm_reject (now or
 * later, same loop turn not required). */
struct mrcd_cm_req {
	uint64_t id;       /* pass to accept/reject */
	uint32_t sid;
	struct mrcd_qp_addr remote;
};
typedef void (*mrcd_cm_req_fn)(void *ctx, const struct mrcd_cm_req *req);
int mrcd_cm_listen(struct mrcd *d, uint32_t sid, mrcd_cm_req_fn fn, void *ctx);
void mrcd_cm_unlisten(struct mrcd *d, uint32_t sid);
/* Accepting connects the local QP (local->qpn) to the requester. */
int mrcd_cm_accept(struct mrcd *d, uint64_t id, const struct mrcd_qp_addr *local);
int mrcd_cm_reject(struct mrcd *d, uint64_t id, int err);

/* Asks host:sid to connect to local QP `local` (REQ and REP carry each
 * side's nonce, window and MTU: the connection gets tokens from the key and
 * the smaller window and MTU); done(ctx, err, remote) is
 * called once: err 0 with the remote QP already connected locally, or a
 * negative errno (-ECONNREFUSED, -ETIMEDOUT, ...). */
typedef void (*mrcd_cm_done_fn)(void *ctx, int err, const struct mrcd_qp_addr *remote);
int mrcd_cm_connect(struct mrcd *d, uint32_t host, uint32_t sid,
		    const struct mrcd_qp_addr *local, mrcd_cm_done_fn done, void *ctx);
/* Cancels a pending connect of this ctx (the client went away). */
void mrcd_cm_cancel(struct mrcd *d, void *ctx);

/* Out-of-band path: connect a local QP to a remote QP described by the
 * application (e.g. exchanged over MPI).  The connection's tokens are
 * derived from the cluster key and nonces made of both sides' {host, qpn,
 * psn} (what the blob carries), so both ends must connect this way; the
 * window and MTU are the local ones (docs/security.md). */
int mrcd_qp_connect_oob(struct mrcd *d, uint32_t qpn, uint32_t local_psn,
			const struct mrcd_qp_addr *remote);

/* ---- observers -------------------------------------------------------- */
/* The rooms above the core (the operator interface, the client side) learn
 * what happens in it through observers: the core calls every registered
 * one, in registration order.  Any callback may be NULL. */
struct mrcd_observer {
	/* Every engine event (EV state changes, probe results, QP errors,
	 * ev_floor).  While an observer takes events, it logs EV state changes
	 * and ev_floor itself (rate limited, so a flapping link cannot flood
	 * the journal); the core still logs QP errors. */
	void (*event)(void *arg, const struct mrce_event *ev);
	/* A note (mrcd_note).  Notes no observer takes are logged. */
	void (*note)(void *arg, const char *kind, const char *text);
	void *arg;
};
#define MRCD_MAX_OBSERVERS 4
/* Copies *o; -ENOSPC when MRCD_MAX_OBSERVERS are registered. */
int mrcd_observer_add(struct mrcd *d, const struct mrcd_observer *o);
/* Removes the observers registered with this arg. */
void mrcd_observer_del(struct mrcd *d, void *arg);

/* ---- logging ---------------------------------------------------------- */
/* A notable happening (kind: "plane", "peer", "client", "admin"): handed
 * to the observers (the operator event stream, mrcctl events), or logged
 * when none takes notes. */
void mrcd_note(struct mrcd *d, const char *kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
enum { MRCD_LOG_ERR = 3, MRCD_LOG_WARNING = 4, MRCD_LOG_NOTICE = 5,
       MRCD_LOG_INFO = 6, MRCD_LOG_DEBUG = 7 };
extern int mrcd_log_level;   /* lines above it are not written */
void mrcd_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same with structured journal fields, each "KEY=value" (KEY upper
 * case, MRC_ prefixed; at most MRCD_LOG_MAX_KV); off the journal they are
 * dropped and the line is as mrcd_log's. */
#define MRCD_LOG_MAX_KV 12
/* Journal MESSAGE_IDs (journalctl MESSAGE_ID=...): a path changed state;
 * an operator (or the restored admin state) changed a plane or path. */
#define MRCD_MSGID_PATH_STATE "39d5ff975ab34f38a26f333bf875a531"
#define MRCD_MSGID_ADMIN "c3502435d1c84b0e9f108864d72079fb"
void mrcd_log_kv(int level, const char *const *kv, int nkv, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* health.c: fabric links not OK (suspect, located, denied: docs/health.md),
 * ascending link ids; *it starts at 0.  Returns 1 with *v filled, 0 at
 * the end (and always 0 in loopback mode).  The strings are the core's. */
struct mrcd_fabric_view {
	uint32_t link, plane;
	const char *lower, *upper;         /* node names */
	const char *state;                 /* "suspect", "located", "denied" */
	int denied;
	uint32_t fail_paths, fail_hosts, good_paths;
	uint64_t cong;                     /* ECN + trims on paths through it */
	uint64_t changed_ns;               /* when the state last changed */
};
int mrcd_fabric_next(const struct mrcd *d, uint32_t *it, struct mrcd_fabric_view *v);

/* health.c: the convictions recorded (health/record.h: every link that
 * became located or denied, kept after it healed), oldest first.  Returns
 * 1 with *v filled for the i-th, 0 past the last (and in loopback mode). */
#define MRCD_FABRIC_EVIDENCE 8
struct mrcd_fabric_path {
	const char *src, *dst;             /* host names */
	uint32_t ev;
	uint64_t ts_ns;                    /* when it was seen failing */
};
struct mrcd_fabric_conv {
	uint64_t seq;                      /* 0, 1, ... since start */
	uint32_t link, plane;
	const char *lower, *upper;
	const char *state;                 /* highest reached: "located", "denied" */
	uint64_t located_ns, denied_ns, cleared_ns;     /* 0: not (yet) */
	uint32_t fail_paths, fail_hosts, good_paths;    /* at conviction */
	uint64_t good_ns;                  /* newest working path then (0: none) */
	uint32_t n_evidence;               /* failed paths through it */
	struct mrcd_fabric_path evidence[MRCD_FABRIC_EVIDENCE];
};
int mrcd_fabric_conviction(const struct mrcd *d, uint32_t i, struct mrcd_fabric_conv *v);

#endif

/* mrcd's client side: the control socket, per-client state and limits,
 * and the shared-memory rings of client QPs (docs/client.md).
 *
 * main.c calls mrcd_clients_start once the core (loop, engine, connection
 * manager) is up, and mrcd_clients_stop before tearing it down.
 * Everything runs on the loop's thread. */
#ifndef MRC_DAEMON_CLIENTS_H
#define MRC_DAEMON_CLIENTS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "codec/climsg.h"
#include "codec/ringcheck.h"
#include "daemon/core/config.h"
#include "daemon/core/mrcd.h"

/* Opens cfg->socket (mode cfg->socket_mode, group cfg->socket_group) and
 * serves clients with the limits max_clients, client_max_qps,
 * client_max_mem_mb, client_max_mrs and ring_entries per client, and
 * uid_max_clients, uid_max_qps, uid_max_mrs and uid_max_mem_mb per user
 * (all clients of one uid together), uid_max_pending connections per uid
 * that have not said HELLO, each for at most client_hello_timeout_ms
 * (refused connections are answered and closed at once, never held);
 * service ids are owned per uid
 * (sidown.c, with cfg->service_reserve).  On error fills err. */
int mrcd_clients_start(struct mrcd *d, const struct mrcd_cfg *cfg, char *err, size_t errlen);
/* Disconnects every client (freeing its QPs and memory) and removes the
 * socket. */
void mrcd_clients_stop(struct mrcd *d);
/* Connections refused (answered and closed at once), closed for want of
 * a HELLO, and times accept was paused at the descriptor limit (stats). */
void mrcd_clients_counters(uint64_t *refused, uint64_t *hello_timeouts, uint64_t *accept_paused);

/* Straggler records (strag.c; `mrcctl stragglers`, docs/coll.md): a
 * bounded ring per uid, each record stamped with its sender's uid and pid
 * (SO_PEERCRED) and the time it came.  Iterate with *it = 0 first;
 * returns 0 at the end. */
struct mrcd_strag_view {
	uint64_t time_ns;          /* CLOCK_REALTIME */
	uid_t uid;
	pid_t pid;
	struct mrc_cli_straggler s;
};
int mrcd_strag_next(uint32_t *it, struct mrcd_strag_view *v);
struct mrcd_strag_counters {
	uint64_t filed, dropped;   /* kept; overwritten as their ring was full */
	uint64_t rate_refused;     /* refused by the per-client rate bound */
	uint64_t users_refused;    /* refused: every uid slot taken */
	uint32_t users, ring;      /* uids with records; records per uid */
};
void mrcd_strag_counters(struct mrcd_strag_counters *k);

/* ---- internal: shared by clients.c and rings.c ------------------------ */

struct mrcd_cmr {
	struct mrc__mr_view view;  /* len, access (what ringcheck needs) */
	uint32_t key;
	void *map;
	size_t map_len;
	int dp_reg;                /* datapath region id + 1; 0: none (copied) */
	int pop;                   /* pages still to map in (client_mr.c populate) */
	size_t pop_off;            /* mapped in up to here */
};

struct mrcd_cqp;

/* What all clients of one uid hold together (the per-uid limits). */
struct mrcd_uidq {
	struct mrcd_uidq *next;
	uid_t uid;
	uint32_t clients, qps, mrs;
	uint64_t mem;
	uint64_t refused;          /* requests refused by a per-uid limit */
	uint32_t pending;          /* its connections that have not said HELLO */
};

struct mrcd_client {
	struct mrcd *d;
	struct mrcd_client *next;
	uint32_t id;               /* also the engine protection domain */
	int fd;
	ev_io io;
	ev_timer retry;            /* completions waiting for CQ space */
	uid_t uid;
	pid_t pid;
	char name[32];
	int hello;                 /* HELLO done */
	ev_timer hello_tm;         /* closes a connection that never says HELLO */
	int refuse;                /* <0: answer every request with it, then close */
	const char *refuse_why;
	/* limits */
	uint32_t max_qps, max_ring, max_mrs;
	uint64_t max_mem;
	struct mrcd_uidq *uq;      /* its user's totals (NULL: refused client) */
	uint64_t strag_ns;         /* straggler records: the rate bound's */
	uint32_t strag_tok;        /* last refill, tokens left (strag.c) */
	/* resources */
	struct mrcd_cmr *mrs;      /* max_mrs slots, key 0 = free */
	uint32_t nmr, last_mr;
	uint32_t npop;             /* regions with pop set */
	uint64_t mem;
	struct mrcd_cqp *qps;
	uint32_t nqp;
	struct mrcd_cm_op *ops;    /* pending ACCEPT / CONNECT */
	struct mrcd_lsn *lsns;     /* listeners */
	int polling;               /* poller registered */
	/* The QPs polled each round (mrcd_cqp_activate): those with work
	 * or not yet armed/parked.  Armed doorbell QPs and parked polled QPs
	 * are not on it, so idle QPs cost nothing per round. */
	struct mrcd_cqp *act;
	/* Its urgent-class QPs, active or not (client_qp.c client_urgent). */
	struct mrcd_cqp *urg;
	uint64_t park_ns;          /* config gpu_park_us */
	/* The client's doorbells (notify.c, created at HELLO): the notify
	 * page (mrc/ring.h), one pending byte per QP (slot_qp[notify_slot],
	 * max_qps slots); the SQ bell the client writes after setting
	 * bytes; the CQ bell the daemon writes for an armed CQ.  Three fds
	 * per client, none per QP. */
	struct mrc_notify *notify;
	size_t notify_len;
	int notify_fd, sq_bell, cq_bell;
	ev_io bell_io;
	struct mrcd_cqp **slot_qp;
	uint32_t npolled;
	struct mrcd_client *nnext; /* clients with polled QPs (notify.c) */
	/* The power-floor hint (notify.c, config power_floor): sends in the
	 * engine over all its QPs, the raise count and the hold timer.  The
	 * page's word is written from these, never read. */
	uint32_t floor_busy, floor_raises;
	ev_timer floor_tm;
};

/* Returns the client's region with this key (ringcheck's lookup). */
const struct mrc__mr_view *mrcd_client_mr(void *client, uint32_t key);
/* Sends a reply; a client that does not read its replies is dropped
 * (returns -EPIPE then, and the client is freed: do not touch it). */
int mrcd_client_reply(struct mrcd_client *c, uint16_t type, uint32_t req_id, int status,
		      const void *body, size_t len, const char *reason, const int *fds,
		      unsigned nfd);

/* ---- rings.c: a client QP, its rings and its completions ---- */
struct mrcd_cqp {
	struct mrcd_client *c;
	struct mrcd_cqp *next;
	uint32_t qpn, psn;
	uint32_t flags;            /* MRC_CLI_QP_* */
	void *map;
	size_t map_len;
	struct mrc_ring_hdr *sqh, *cqh;
	struct mrc_sqe *sq;
	struct mrc_cqe *cq;
	uint32_t sq_mask, cq_mask;
	uint64_t sq_tail, cq_head;
	int blocked;               /* the engine's queue was full */
	int broken;                /* CQ overflowed: SQ no longer consumed */
	int active;                /* on c->act */
	int parked;                /* sleeping = 1 (doorbell QP: armed), off
	                              c->act until its pending byte is set */
	struct mrcd_cqp *act_next, *act_prev;
	struct mrcd_cqp *unext;    /* the client's urgent QPs (c->urg) */
	uint32_t notify_slot;      /* its byte in c->notify */
	uint64_t last_work_ns;     /* polled QP: last descriptor consumed */
	/* Completions in posting order: one FIFO for sends, one for receives.
	 * An entry is either a marker for work in the engine or an error
	 * completion of a refused descriptor, written once every earlier
	 * work request of the queue has completed. */
	struct mrcd_pend *sf, *rf;
	uint32_t sf_head, sf_n, rf_head, rf_n;
	/* completions the CQ had no room for */
	struct mrc_cqe *bl;
	uint32_t bl_head, bl_n;
	uint64_t refused, overflowed;
	uint32_t floor_sends;      /* power floor: its sends in the engine */
};

/* Creates the engine QP and its rings in a sealed memfd (*memfd, to pass
 * to the client).  notify_slot: its byte in c->notify (the caller's
 * choice).
 * The new QP is active (polled until it arms or parks). */
int mrcd_cqp_create(struct mrcd_client *c, const struct mrc_cli_create_qp *req,
		    uint32_t notify_slot, struct mrcd_cqp **out, int *memfd,
		    struct mrc_cli_create_qp_rep *rep, const char **why);
void mrcd_cqp_destroy(struct mrcd_cqp *q);
/* Consumes up to budget descriptors; returns how many. */
int mrcd_cqp_poll(struct mrcd_cqp *q, int budget);
/* Its SQ's next slot holds a post it may take now (a load, no poll). */
int mrcd_cqp_ready(const struct mrcd_cqp *q);
/* Called on an active QP when a round found no work: 1 keep it active
 * (work is ready, or a polled QP idle less than park_ns); 0 take it off
 * the active list: its doorbell is armed, or it is parked (polled), or
 * it waits for a completion or CQ room (on_wc and the retry timer
 * activate it again). */
int mrcd_cqp_arm(struct mrcd_cqp *q, uint64_t now);
/* Puts a QP on its client's active list (no-op if there) / takes it off. */
void mrcd_cqp_activate(struct mrcd_cqp *q);
void mrcd_cqp_deactivate(struct mrcd_cqp *q);
/* A parked QP's pending byte was set: sleeping = 0 (after the
 * caller cleared the byte and fenced), active again.  0 when it was not
 * parked (a repeat or stale notification). */
int mrcd_cqp_unpark(struct mrcd_cqp *q, uint64_t now);
/* Rings the client's CQ doorbell (notify.c). */
void mrcd__cq_bell(struct mrcd_client *c);
/* The power-floor hint: a send of q entered the engine / completed / q
 * is destroyed with its sends dropped.  No-ops unless config
 * power_floor. */
void mrcd__floor_send(struct mrcd_cqp *q);
void mrcd__floor_done(struct mrcd_cqp *q);
void mrcd__floor_forget(struct mrcd_cqp *q);
/* Moves backlogged completions into the CQ; returns how many remain. */
uint32_t mrcd_cqp_flush(struct mrcd_cqp *q);

#endif

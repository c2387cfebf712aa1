/* The operator module's shared state (daemon/oper*.c): the mrcctl socket
 * and its connections, the event ring and followers, admin state, rate
 * limited logging, pending probes, per-plane rate samples, metrics HTTP. */
#ifndef MRC_DAEMON_OPER_H
#define MRC_DAEMON_OPER_H

#include <jansson.h>
#include <sys/types.h>

#include "codec/operjson.h"
#include "daemon/clients/clisock.h"   /* mrcd_accept, mrcd_peer_in_group */
#include "daemon/core/mrcd.h"
#include "daemon/oper/outq.h"
#include "datapath/datapath.h"     /* the datapath's counters (stats, rates) */
#include "topology/topo.h"         /* names, EVs and planes of the views */

#define OPER_RING 4096            /* recent events kept for `events` */
#define OPER_OUT_MAX (256u << 10) /* bytes queued per connection (one reply always fits) */
#define OPER_PRI EV_MINPRI        /* libev priority of every operator/metrics socket */
#define OPER_MAX_PROBES 4096      /* EVs one probe request may cover */

struct oper_event {
	uint64_t seq, mono_ns, real_ns;
	char kind[8];                 /* path probe qp floor plane peer client admin */
	uint8_t typed;                /* fields below are meaningful */
	uint8_t old_state, new_state, reason;
	uint32_t host, ev, qpn;
	int32_t err;
	uint64_t rtt_ns;
	char text[200];
};

struct oper_conn {
	struct oper *o;
	int fd;
	ev_io io;                     /* requests; paused while a reply is queued */
	ev_io wio;                    /* writable: out has bytes the socket did not take */
	struct outq out;
	uid_t uid;
	gid_t gid;
	pid_t pid;
	int admin;                    /* may run admin verbs */
	int follow;                   /* streaming events */
	uint64_t dropped;             /* events a slow follower missed */
	/* a probe in progress (the connection is not read meanwhile) */
	uint32_t probe_id, probe_peer, probe_host, nprobe, probe_left;
	uint16_t *probe_ev;
	uint64_t *probe_rtt;          /* UINT64_MAX: no answer yet */
	int8_t *probe_st;             /* 0 sent, 1 answered, -errno not sent */
	ev_timer probe_tm;
	ev_timer idle;                /* ctl_idle_timeout_ms after the last request */
};

struct oper_bucket {              /* token bucket for state-change logs */
	double tokens, rate, burst;
	uint64_t last_ns, suppressed, suppressed_total;
};

/* Admin state kept across restarts (oper_state.c). */
struct oper_state_path {
	uint32_t host, ev;
};
struct oper_state {
	char dir[MRCD_PATH_MAX];
	char file[MRCD_PATH_MAX + 16];      /* "" : not persisted */
	int restored;                       /* a file was applied at start */
	char saved[40];                     /* when the restored file was written */
	uint32_t planes;                    /* disabled planes that came from the file */
	uint32_t npaths;                    /* denied paths that came from the file */
	struct oper_state_path *paths;
	char error[600];                    /* why the file was refused at start */
	char save_error[600];               /* why the last save failed */
};

struct oper {
	struct mrcd *d;
	int lfd;
	ev_io lio;
	char path[MRCD_PATH_MAX];
	gid_t group, admin_group;
	int has_group, has_admin_group;
	struct oper_conn **conns;     /* nslots = ctl_max_conns + ctl_admin_reserve */
	uint32_t max_conns, nslots;
	uint32_t uid_max_conns;       /* ctl_uid_max_conns (non-admin uids) */
	double idle_s;                /* ctl_idle_timeout_ms */
	uint64_t idle_closed;         /* mrcctl connections closed idle */
	struct mrcd_accept_guard lguard, mguard;  /* operator, metrics listeners */
	/* events */
	struct oper_event *ring;
	uint64_t seq;                 /* events ever recorded */
	int64_t real_off_ns;          /* realtime - monotonic */
	struct oper_bucket bucket;
	/* samples for rates */
	ev_timer tick;
	uint64_t sample_ns;
	uint64_t plane_tx[MRCE_MAX_PLANES], plane_tx_rate[MRCE_MAX_PLANES];
	uint64_t plane_lost[MRCE_MAX_PLANES], plane_lost_rate[MRCE_MAX_PLANES];
	uint64_t dp_tx, dp_rx, dp_tx_rate, dp_rx_rate, dp_txb, dp_rxb, dp_txb_rate, dp_rxb_rate;
	uint64_t conns_total, refused_total, requests_total;
	/* metrics */
	int mfd;
	ev_io mio;
	uint32_t http_n, http_max;    /* open metrics connections, metrics_max_conns */
	uint64_t http_refused;
	struct http_conn *http_head, *http_tail;   /* oldest first */
	double http_idle_s;           /* metrics_idle_timeout_ms */
	uint64_t http_evicted;        /* closed to make room before their request */
	struct oper_state state;
};

/* oper.c: main.c starts the operator interface once the core and the
 * client side are up (it registers itself as an observer of the core) and
 * stops it before them. */
int mrcd_oper_start(struct mrcd *d, char *err, size_t errlen);
void mrcd_oper_stop(struct mrcd *d);
/* Applies the saved admin state (oper_state.c) once, after start and
 * before READY=1; never fails the start (a bad file is set aside). */
void mrcd_oper_restore(struct mrcd *d);

/* oper_events.c */
int mrcd_oper_events_init(struct oper *o);
void mrcd_oper_events_fini(struct oper *o);
json_t *mrcd_oper_event_json(struct oper *o, const struct oper_event *e);
json_t *mrcd_oper_events_recent(struct oper *o, int last);
void mrcd_oper_record(struct oper *o, const struct oper_event *e);
/* Logs through the token bucket, with structured journal fields kv
 * (mrcd_log_kv); returns 1 when logged. */
int mrcd_oper_ratelog_kv(struct oper *o, int level, const char *const *kv, int nkv,
			 const char *fmt, ...) __attribute__((format(printf, 5, 6)));
#define mrcd_oper_ratelog(o, level, ...) mrcd_oper_ratelog_kv(o, level, NULL, 0, __VA_ARGS__)
void mrcd_oper_ratelog_flush(struct oper *o);
/* Appends an admin note and logs it (never rate limited). */
void mrcd_oper_admin_note(struct oper *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* The same at a log level of its own (errors of the admin state file). */
void mrcd_oper_admin_note_at(struct oper *o, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Observer callbacks: every engine event, every core note. */
void mrcd_oper_on_event(void *arg, const struct mrce_event *ev);
void mrcd_oper_on_note(void *arg, const char *kind, const char *text);

/* oper_data.c, for oper_stats.c: a path the topology has; the rings' view */
int mrcd_oper_path_exists(const struct mrcd_peer_view *p, uint32_t ev);
json_t *mrcd_oper_rings(struct mrcd *d);

/* oper.c */
void mrcd_oper_send_event(struct oper *o, const struct oper_event *e);
/* oper_probe.c */
void mrcd_oper_probe_result(struct oper *o, uint32_t peer, uint32_t ev, uint64_t rtt);
/* Queues one record and sends what the socket takes now; never waits.
 * -ENOBUFS when the connection's queue is full, -errno when it is gone
 * (the caller closes it). */
int mrcd_oper_send(struct oper_conn *c, const char *text);
/* One JSON reply to request id (oper.c): err < 0 with msg, or res. */
void mrcd_oper_reply(struct oper_conn *c, uint32_t id, int err, const char *msg, json_t *res);
/* oper_probe.c: a new connection's probe timer; ending its probe, if any */
void mrcd_oper_probe_init(struct oper_conn *c);
void mrcd_oper_probe_clear(struct oper_conn *c);

/* Starts a probe for request r; the reply is sent when every path has
 * answered or timed out.  0, or -errno with err filled. */
int mrcd_oper_probe_start(struct oper_conn *c, const struct mrc_oper_req *r, char *err,
			  size_t errlen);

/* oper_verbs.c: one handler per verb (codec/operverbs.def).  A handler
 * returns 0 with *res (the result; NULL reads as out of memory), -errno
 * with err filled, or MRCD_OPER_LATER when it answers later itself. */
#define MRCD_OPER_LATER 1
typedef int mrcd_oper_verb_fn(struct oper_conn *c, const struct mrc_oper_req *r, json_t **res,
			      char *err, size_t errlen);
/* Runs r's handler (r is parsed and its admin check passed). */
int mrcd_oper_run(struct oper_conn *c, const struct mrc_oper_req *r, json_t **res,
		  char *err, size_t errlen);

/* oper_data.c: the views, shared by verbs and metrics */
const char *mrcd_oper_host_name(struct mrcd *d, uint32_t host, char *buf, size_t len);
int mrcd_oper_find_host(struct mrcd *d, const char *name, uint32_t *host);
void mrcd_oper_ev_where(struct mrcd *d, uint32_t ev, int *plane, int *spine);
json_t *mrcd_oper_status(struct oper *o);
json_t *mrcd_oper_planes(struct oper *o);
json_t *mrcd_oper_peers(struct oper *o);
/* oper_fabric.c: fabric links not OK (`mrcctl fabric`), and the same
 * array for the stats (Prometheus: mrc_fabric_link_*). */
json_t *mrcd_oper_fabric(struct oper *o);
json_t *mrcd_oper_fabric_links(struct oper *o);
/* oper_strag.c: the straggler records clients filed (`mrcctl stragglers`). */
json_t *mrcd_oper_stragglers(struct oper *o);
int mrcd_oper_paths(struct oper *o, const char *peer, json_t **out, char *err, size_t errlen);
int mrcd_oper_qps(struct oper *o, int64_t qp, json_t **out, char *err, size_t errlen);
json_t *mrcd_oper_stats(struct oper *o);
json_t *mrcd_oper_topology(struct oper *o);
json_t *mrcd_oper_version(struct oper *o);
void mrcd_oper_sample(struct oper *o);

/* oper_admin.c */
int mrcd_oper_plane_admin(struct oper *o, struct oper_conn *c, int plane, int disable,
			  json_t **out, char *err, size_t errlen);
int mrcd_oper_path_admin(struct oper *o, struct oper_conn *c, const char *peer, int ev,
			 int deny, json_t **out, char *err, size_t errlen);

/* oper_state.c: admin state in <state_dir>/admin.json */
void mrcd_oper_state_restore(struct oper *o);
/* After an admin verb that changed something. */
void mrcd_oper_state_save(struct oper *o);
void mrcd_oper_state_fini(struct oper *o);
/* 1 when the denial of (host, ev) came from the file and still holds. */
int mrcd_oper_state_path_restored(struct oper *o, uint32_t host, uint32_t ev);
/* status's "admin_state" object. */
json_t *mrcd_oper_state_json(struct oper *o);

/* oper_http.c */
int mrcd_oper_http_start(struct oper *o, char *err, size_t errlen);
void mrcd_oper_http_stop(struct oper *o);

#endif

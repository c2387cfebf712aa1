/* mrcd: clients of the control socket: requests, limits, the connection
 * manager on their behalf, and cleanup when they go away (clients.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/clients/clients.h"
#include "daemon/clients/clients_int.h"
#include "daemon/clients/clisock.h"
#include "daemon/clients/sidown.h"
#include "datapath/datapath.h"
#include "mrc/mrc.h"

#define MSGS_PER_WAKE 32
#define RETRY_S 0.001
#define FIRST_CLIENT_ID 1000u  /* engine pd numbers of clients */

static struct {
	struct mrcd *d;
	struct mrcd_clisock *sock;
	struct mrcd_client *list;
	uint32_t n, next_id;
	uint32_t max_clients, max_qps, max_ring, max_mrs;
	uint64_t max_mem;
	/* per uid */
	struct mrcd_uidq *uids;
	uint32_t uid_clients, uid_qps, uid_mrs;
	uint64_t uid_mem;
	uint64_t uid_refused;      /* all refusals by a per-uid limit */
	uint32_t uid_pending, hello_ms;
	uint64_t refused;          /* connections refused (answered and closed) */
	uint64_t hello_timeouts;   /* connections closed for want of a HELLO */
	uint64_t park_ns;
} S;

/* ---- per-uid totals --------------------------------------------------- */

static struct mrcd_uidq *uidq_get(uid_t uid)
{
	for (struct mrcd_uidq *q = S.uids; q; q = q->next)
		if (q->uid == uid)
			return q;
	struct mrcd_uidq *q = calloc(1, sizeof(*q));
	if (!q)
		return NULL;
	q->uid = uid;
	q->next = S.uids;
	S.uids = q;
	return q;
}

static void uidq_put(struct mrcd_uidq *q)
{
	if (q->clients)
		return;
	for (struct mrcd_uidq **p = &S.uids; *p; p = &(*p)->next)
		if (*p == q) {
			*p = q->next;
			break;
		}
	free(q);
}

/* Counts a refusal by a per-uid limit; the caller answers with err. */
int mrcd__uid_refuse(struct mrcd_uidq *q, int err)
{
	q->refused++;
	S.uid_refused++;
	return err;
}

static void client_free(struct mrcd_client *c);

/* Frees a client that a reply failed on, once the event is handled. */
void mrcd__client_settle(struct mrcd_client *c)
{
	if (c->refuse == 1)
		client_free(c);
}

struct mrcd_client *mrcd__clients(void)
{
	return S.list;
}

const struct mrcd__uid_limits *mrcd__uid_limits(void)
{
	static struct mrcd__uid_limits l;
	l.uid_qps = S.uid_qps;
	l.uid_mrs = S.uid_mrs;
	l.uid_mem = S.uid_mem;
	return &l;
}

/* ---- replies ---------------------------------------------------------- */

int mrcd_client_reply(struct mrcd_client *c, uint16_t type, uint32_t req_id, int status,
		      const void *body, size_t len, const char *reason, const int *fds,
		      unsigned nfd)
{
	uint8_t buf[MRC_CLI_MSG_MAX];
	if (c->refuse == 1)
		return -EPIPE;     /* already dropped */
	int n = mrc__cli_enc_rep(buf, sizeof(buf), type, req_id, status,
				 status ? NULL : body, status ? 0 : len, reason);
	if (n < 0) {
		mrcd_log(MRCD_LOG_ERR, "client %u: cannot encode %s reply: %s", c->id,
			 mrc__cli_type_name(type), strerror(-n));
		return n;
	}
	int r = mrcd_cli_send(c->fd, buf, (size_t)n, fds, status ? 0 : nfd);
	if (r) {
		mrcd_log(MRCD_LOG_NOTICE, "client %u (%s, pid %d): reply failed (%s): dropping it",
			 c->id, c->name, (int)c->pid, strerror(-r));
		c->refuse = 1;     /* freed at the end of the current event */
		return -EPIPE;
	}
	return 0;
}

/* ---- requests --------------------------------------------------------- */

static int do_hello(struct mrcd_client *c, const struct mrc_cli_msg *m)
{
	struct mrc_cli_hello q;
	memcpy(&q, m->body, sizeof(q));
	if (q.ver_min > MRC_CLI_VERSION || q.ver_max < MRC_CLI_VERSION)
		return fail(c, m, -EPROTONOSUPPORT, "client speaks versions %u..%u, daemon %u",
			    q.ver_min, q.ver_max, MRC_CLI_VERSION);
	if (c->hello)
		return fail(c, m, -EALREADY, "hello again");
	snprintf(c->name, sizeof(c->name), "%s", q.name);
	int r = mrcd__notify_open(c);
	if (r)
		return fail(c, m, r, "the client's doorbells and notify page");
	c->hello = 1;
	c->uq->pending--;
	ev_timer_stop(mrcd_loop(c->d), &c->hello_tm);
	struct mrc_cli_hello_rep rep = {
		.version = MRC_CLI_VERSION, .client_id = c->id,
		.host = mrcd_self_host(c->d), .n_hosts = mrcd_n_hosts(c->d),
		.max_qps = c->max_qps < S.uid_qps ? c->max_qps : S.uid_qps,
		.max_mrs = c->max_mrs < S.uid_mrs ? c->max_mrs : S.uid_mrs,
		.max_ring_entries = c->max_ring, .notify_len = (uint32_t)c->notify_len,
		.max_mem = c->max_mem < S.uid_mem ? c->max_mem : S.uid_mem,
	};
	mrcd_log(MRCD_LOG_INFO, "client %u: %s (pid %d, uid %u)", c->id, c->name, (int)c->pid,
		 (unsigned)c->uid);
	/* fds: the notify page, the SQ and the CQ doorbells (climsg.h). */
	int fds[3] = { c->notify_fd, c->sq_bell, c->cq_bell };
	return mrcd_client_reply(c, m->hdr.type, m->hdr.req_id, 0, &rep, sizeof(rep), NULL, fds, 3);
}

static void dispatch(struct mrcd_client *c, const struct mrc_cli_msg *m, int *fds, unsigned nfd)
{
	uint16_t type = m->hdr.type;
	if (c->refuse < 0) {
		fail(c, m, c->refuse, "%s", c->refuse_why);
		c->refuse = 1;
		return;
	}
	if (nfd != mrc__cli_req_fds(type)) {
		fail(c, m, -EBADMSG, "%s carries %u file descriptors, expected %u",
		     mrc__cli_type_name(type), nfd, mrc__cli_req_fds(type));
		return;
	}
	if (!c->hello && type != MRC_CLI_HELLO) {
		fail(c, m, -EPROTO, "hello first");
		return;
	}
	switch (type) {
	case MRC_CLI_HELLO: do_hello(c, m); break;
	case MRC_CLI_REG_MR: mrcd__do_reg_mr(c, m, fds[0]); break;
	case MRC_CLI_DEREG_MR: mrcd__do_dereg_mr(c, m); break;
	case MRC_CLI_CREATE_QP: mrcd__do_create_qp(c, m); break;
	case MRC_CLI_DESTROY_QP: mrcd__do_destroy_qp(c, m); break;
	case MRC_CLI_QP_INFO: mrcd__do_qp_info(c, m); break;
	case MRC_CLI_CONNECT_OOB: mrcd__do_connect_oob(c, m); break;
	case MRC_CLI_LISTEN: mrcd__do_listen(c, m); break;
	case MRC_CLI_UNLISTEN: mrcd__do_unlisten(c, m); break;
	case MRC_CLI_ACCEPT: mrcd__do_accept(c, m); break;
	case MRC_CLI_CONNECT: mrcd__do_connect(c, m); break;
	case MRC_CLI_STRAGGLER: mrcd__do_straggler(c, m); break;
	case MRC_CLI_QP_STATS: mrcd__do_qp_stats(c, m); break;
	case MRC_CLI_QP_STATS_N: mrcd__do_qp_stats_n(c, m); break;
	default: fail(c, m, -EOPNOTSUPP, "unknown request type 0x%04x", type); break;
	}
}

/* A message that does not decode: answer with what can be read of its
 * header.  A client whose framing cannot be trusted is dropped. */
static void malformed(struct mrcd_client *c, const void *buf, size_t n, int err, const char *why)
{
	struct mrc_cli_hdr h = { 0 };
	memcpy(&h, buf, n < sizeof(h) ? n : sizeof(h));
	uint16_t type = h.type & (uint16_t)~MRC_CLI_REPLY;
	mrcd_log(MRCD_LOG_INFO, "client %u (%s): malformed message (type 0x%04x): %s", c->id,
		 c->name, h.type, why);
	uint8_t out[MRC_CLI_MSG_MAX];
	int len = mrc__cli_enc_rep(out, sizeof(out), type, h.req_id, err, NULL, 0, why);
	if (len > 0 && mrcd_cli_send(c->fd, out, (size_t)len, NULL, 0))
		c->refuse = 1;
	if (n < sizeof(h) || h.magic != MRC_CLI_MAGIC)
		c->refuse = 1;
}

static void on_client(struct ev_loop *loop, ev_io *w, int revents)
{
	struct mrcd_client *c = w->data;
	(void)loop;
	(void)revents;
	for (int i = 0; i < MSGS_PER_WAKE && c->refuse != 1; i++) {
		uint8_t buf[MRC_CLI_MSG_MAX];
		int fds[MRC_CLI_MAX_FDS];
		unsigned nfd;
		ssize_t n = mrcd_cli_recv(c->fd, buf, sizeof(buf), fds, &nfd);
		if (n == -EAGAIN)
			break;
		if (n == 0 || (n < 0 && n != -EBADMSG)) {
			for (unsigned k = 0; k < nfd; k++)
				close(fds[k]);
			mrcd_log(MRCD_LOG_INFO, "client %u (%s): disconnected", c->id, c->name);
			c->refuse = 1;
			break;
		}
		struct mrc_cli_msg m;
		const char *why = "truncated message or fd list";
		int r = n < 0 ? -EBADMSG : mrc__cli_dec_req(buf, (size_t)n, &m, &why);
		if (r)
			malformed(c, buf, n < 0 ? 0 : (size_t)n, r, why);
		else
			dispatch(c, &m, fds, nfd);
		for (unsigned k = 0; k < nfd; k++)
			close(fds[k]);
	}
	mrcd__client_settle(c);
}

/* A refused connection is answered and closed at once: it must hold
 * neither a descriptor nor a client slot until it speaks.  The answer goes
 * to its first request when that is queued already (libmrc sends HELLO
 * right after connect), else to the HELLO that must come first (request 1;
 * libmrc reads it even when its own send then finds the socket closed). */
static void refuse_conn(int fd, int err, const char *why)
{
	uint8_t buf[MRC_CLI_MSG_MAX];
	int fds[MRC_CLI_MAX_FDS];
	unsigned nfd = 0;
	uint16_t type = MRC_CLI_HELLO;
	uint32_t req_id = 1;
	ssize_t n = mrcd_cli_recv(fd, buf, sizeof(buf), fds, &nfd);
	for (unsigned k = 0; k < nfd; k++)
		close(fds[k]);
	struct mrc_cli_hdr h;
	if (n >= (ssize_t)sizeof(h)) {
		memcpy(&h, buf, sizeof(h));
		if (h.magic == MRC_CLI_MAGIC) {
			type = h.type & (uint16_t)~MRC_CLI_REPLY;
			req_id = h.req_id;
		}
	}
	int len = mrc__cli_enc_rep(buf, sizeof(buf), type, req_id, err, NULL, 0, why);
	if (len > 0)
		(void)mrcd_cli_send(fd, buf, (size_t)len, NULL, 0);
	close(fd);
	S.refused++;
}

static void on_hello_timeout(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct mrcd_client *c = w->data;
	(void)loop;
	(void)revents;
	S.hello_timeouts++;
	mrcd_note(S.d, "client", "client %u (uid %u pid %d) closed: no HELLO within %u ms "
		  "(client_hello_timeout_ms)", c->id, (unsigned)c->uid, (int)c->pid, S.hello_ms);
	c->refuse = 1;     /* no "disconnected" note: it never was a client */
	client_free(c);
}

/* A refusal as a client event, one a second at most: a local process
 * connecting in a loop must not flush the event ring (each one is counted:
 * stats oper clients_refused). */
static void refuse_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void refuse_note(const char *fmt, ...)
{
	static uint64_t last_ns, unnoted;
	uint64_t now = mrcd_now();
	if (last_ns && now - last_ns < 1000000000ull) {
		unnoted++;
		return;
	}
	char text[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (unnoted)
		mrcd_note(S.d, "client", "%s (%llu more refusals since the last such event)", text,
			  (unsigned long long)unnoted);
	else
		mrcd_note(S.d, "client", "%s", text);
	last_ns = now;
	unnoted = 0;
}

/* The limits a new connection must pass; 0, or the error and why (its
 * uid's totals in *uqp when they were found). */
static int admit(int allowed, uid_t uid, pid_t pid, struct mrcd_uidq **uqp, const char **whyp)
{
	struct mrcd_uidq *uq = NULL;
	int err = 0;
	const char *why = NULL;
	if (!allowed) {
		err = -EACCES;
		why = "not allowed: the control socket admits root, the daemon's user "
		      "and the configured socket_group";
		refuse_note("client uid %u pid %d refused: not root nor in the group",
			    (unsigned)uid, (int)pid);
	} else if (S.n >= S.max_clients) {
		err = -EUSERS;
		why = "too many clients (config max_clients)";
		refuse_note("client pid %d refused: %u clients already (max_clients)",
			    (int)pid, S.n);
	} else if (!(uq = uidq_get(uid))) {
		err = -ENOMEM;
		why = "out of memory";
	} else if (uq->clients >= S.uid_clients) {
		err = mrcd__uid_refuse(uq, -EUSERS);
		why = "too many clients of this user (config uid_max_clients)";
		refuse_note("client uid %u pid %d refused: %u clients of this uid already "
			    "(uid_max_clients; %llu per-uid refusals in all)", (unsigned)uid, (int)pid,
			    uq->clients, (unsigned long long)S.uid_refused);
	} else if (uq->pending >= S.uid_pending) {
		/* Connections that have not said HELLO are the cheap way to
		 * hold slots: a few per uid, so one uid's idle connections
		 * never refuse another uid's first client. */
		err = mrcd__uid_refuse(uq, -EUSERS);
		why = "too many connections of this user that have not said HELLO "
		      "(config uid_max_pending)";
		refuse_note("client uid %u pid %d refused: %u connections of this uid "
			    "without HELLO (uid_max_pending; %llu per-uid refusals in all)",
			    (unsigned)uid, (int)pid, uq->pending, (unsigned long long)S.uid_refused);
	}
	*uqp = uq;
	*whyp = why;
	return err;
}

static void on_conn(void *ctx, int fd, int allowed, uid_t uid, pid_t pid)
{
	(void)ctx;
	struct mrcd_uidq *uq;
	const char *why;
	int err = admit(allowed, uid, pid, &uq, &why);
	struct mrcd_client *c = NULL;
	if (!err && (!(c = calloc(1, sizeof(*c))) || !(c->mrs = calloc(S.max_mrs, sizeof(*c->mrs))))) {
		free(c);
		err = -ENOMEM;
		why = "out of memory";
	}
	if (err) {
		if (uq)
			uidq_put(uq);
		refuse_conn(fd, err, why);
		return;
	}
	c->d = S.d;
	c->fd = fd;
	c->id = S.next_id++;
	c->uid = uid;
	c->pid = pid;
	c->max_qps = S.max_qps;
	c->max_ring = S.max_ring;
	c->max_mem = S.max_mem;
	c->max_mrs = S.max_mrs;
	c->park_ns = S.park_ns;
	c->notify_fd = c->sq_bell = c->cq_bell = -1;
	snprintf(c->name, sizeof(c->name), "pid %d", (int)pid);
	c->uq = uq;
	uq->clients++;
	uq->pending++;
	mrcd_note(S.d, "client", "client %u connected (uid %u pid %d)", c->id, (unsigned)uid,
		  (int)pid);
	ev_io_init(&c->io, on_client, fd, EV_READ);
	c->io.data = c;
	ev_io_start(mrcd_loop(S.d), &c->io);
	ev_init(&c->retry, mrcd__on_retry);
	ev_timer_set(&c->retry, RETRY_S, RETRY_S);
	c->retry.data = c;
	ev_timer_init(&c->hello_tm, on_hello_timeout, S.hello_ms / 1000.0, 0);
	c->hello_tm.data = c;
	ev_timer_start(mrcd_loop(S.d), &c->hello_tm);
	c->next = S.list;
	S.list = c;
	S.n++;
	/* libmrc's HELLO is usually queued already: answered now, a burst of
	 * new clients is never counted as connections without HELLO. */
	on_client(mrcd_loop(S.d), &c->io, EV_READ);
}

/* Everything the client had, in dependency order: pending connection
 * work, listeners, QPs (the engine drops their work), then regions (no
 * work references them any more). */
static void client_free(struct mrcd_client *c)
{
	struct mrcd *d = c->d;
	ev_io_stop(mrcd_loop(d), &c->io);
	ev_timer_stop(mrcd_loop(d), &c->retry);
	ev_timer_stop(mrcd_loop(d), &c->hello_tm);
	if (c->uq && !c->hello)
		c->uq->pending--;
	if (!c->refuse) {
		unsigned nqp = 0;
		for (struct mrcd_cqp *q = c->qps; q; q = q->next)
			nqp++;
		mrcd_note(d, "client", "client %u (pid %d) disconnected: %u QP%s freed", c->id,
			  (int)c->pid, nqp, nqp == 1 ? "" : "s");
	}
	c->refuse = 1;
	while (c->ops) {
		struct mrcd_cm_op *op = c->ops;
		mrcd__op_unlink(op);
		free(op);
	}
	while (c->lsns)
		mrcd__lsn_drop(c, c->lsns);
	while (c->qps)
		mrcd__qp_drop(c, c->qps);
	if (c->polling)
		mrcd_poller_del(d, c);
	mrcd__notify_close(c);
	uint64_t leaked = 0;
	for (uint32_t i = 0; i < c->max_mrs; i++)
		if (c->mrs[i].key && mrcd__mr_drop(c, &c->mrs[i])) {
			/* Should not happen once the QPs are gone; keep the
			 * mapping rather than let the engine touch freed memory. */
			leaked++;
		}
	if (leaked)
		mrcd_log(MRCD_LOG_ERR, "client %u: %llu regions still busy after its QPs were destroyed",
			 c->id, (unsigned long long)leaked);
	close(c->fd);
	for (struct mrcd_client **p = &S.list; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			break;
		}
	S.n--;
	if (c->uq) {
		c->uq->clients--;
		uidq_put(c->uq);
	}
	mrcd_log(MRCD_LOG_DEBUG, "client %u freed", c->id);
	free(c->mrs);
	free(c);
	mrcd_kick(d);
}

int mrcd_clients_start(struct mrcd *d, const struct mrcd_cfg *cfg, char *err, size_t errlen)
{
	memset(&S, 0, sizeof(S));
	S.d = d;
	S.next_id = FIRST_CLIENT_ID;
	S.max_clients = cfg->max_clients;
	S.max_qps = cfg->client_max_qps;
	S.max_ring = cfg->ring_entries;
	S.max_mem = (uint64_t)cfg->client_max_mem_mb << 20;
	S.max_mrs = cfg->client_max_mrs;
	S.uid_clients = cfg->uid_max_clients;
	S.uid_qps = cfg->uid_max_qps;
	S.uid_mrs = cfg->uid_max_mrs;
	S.uid_mem = (uint64_t)cfg->uid_max_mem_mb << 20;
	S.uid_pending = cfg->uid_max_pending;
	S.hello_ms = cfg->client_hello_timeout_ms;
	S.park_ns = (uint64_t)cfg->gpu_park_us * 1000;
	mrcd__populate_init();
	/* The engine's share of a QP, by the function the docs' figure
	 * comes from (mrce_qp_bytes; tests/test_docs.c), at this config. */
	mrcd_log(MRCD_LOG_INFO, "memory per QP: %zu bytes in the engine (mrce_qp_bytes, window %u) "
		 "+ rings and completion queues by size (bench/bench_qpmem.c)",
		 mrce_qp_bytes(mrcd_engine(d)), cfg->window);
	int rc = mrcd__notify_start(d, cfg, err, errlen);
	if (rc)
		return rc;
	rc = mrcd_sidown_init(cfg->service_reserve, err, errlen);
	if (rc)
		return rc;
	return mrcd_clisock_open(d, cfg->socket, cfg->socket_mode, cfg->socket_group, on_conn,
				 NULL, &S.sock, err, errlen);
}

void mrcd_clients_counters(uint64_t *refused, uint64_t *hello_timeouts, uint64_t *accept_paused)
{
	*refused = S.refused;
	*hello_timeouts = S.hello_timeouts;
	*accept_paused = mrcd_clisock_paused(S.sock);
}

void mrcd_clients_stop(struct mrcd *d)
{
	while (S.list)
		client_free(S.list);
	mrcd__populate_stop(d);
	mrcd_clisock_close(S.sock);
	S.sock = NULL;
	mrcd__notify_stop();
	mrcd_sidown_fini();
	mrcd__strag_free();
}

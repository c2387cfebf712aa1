/* mrcd's operator socket: mrcctl connects here (docs/ctl.md).  Accepts
 * connections, checks the peer's credentials (SO_PEERCRED: root, the
 * daemon's own user, socket_group for read-only verbs, admin_group for
 * admin verbs), reads one JSON request per record, refuses admin verbs to
 * others, runs the verb's handler (oper_verbs.c), answers one JSON reply
 * per record and streams events to followers (probes: oper_probe.c). */
#include <arpa/inet.h>
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "daemon/oper/oper.h"

/* The one operator interface of the process (mrcd_oper_stop finds it). */
static struct oper *g_oper;

/* ---- connections ------------------------------------------------------- */

static void conn_close(struct oper_conn *c)
{
	struct oper *o = c->o;
	mrcd_oper_probe_clear(c);
	ev_io_stop(mrcd_loop(o->d), &c->io);
	ev_io_stop(mrcd_loop(o->d), &c->wio);
	ev_timer_stop(mrcd_loop(o->d), &c->idle);
	mrcd_outq_clear(&c->out);
	close(c->fd);
	for (uint32_t i = 0; i < o->nslots; i++)
		if (o->conns[i] == c)
			o->conns[i] = NULL;
	free(c);
}

/* Sends what is queued; while anything is left the connection waits for
 * writable and reads no further requests (a client that does not read its
 * replies is paused, never waited for). */
static int conn_flush(struct oper_conn *c)
{
	struct ev_loop *loop = mrcd_loop(c->o->d);
	int rc = mrcd_outq_flush(&c->out, c->fd);
	if (rc < 0)
		return rc;
	if (rc) {
		ev_io_stop(loop, &c->io);
		ev_io_start(loop, &c->wio);
	} else {
		ev_io_stop(loop, &c->wio);
		if (!c->probe_left)
			ev_io_start(loop, &c->io);
	}
	return 0;
}

int mrcd_oper_send(struct oper_conn *c, const char *text)
{
	if (!text)
		return -ENOMEM;
	size_t len = strlen(text);
	if (len > MRC_OPER_MSG_MAX)
		return -EMSGSIZE;
	int rc = mrcd_outq_push(&c->out, text, len);
	return rc ? rc : conn_flush(c);
}

static void on_writable(struct ev_loop *loop, ev_io *w, int revents)
{
	struct oper_conn *c = w->data;
	(void)loop;
	(void)revents;
	int rc = conn_flush(c);
	if (rc) {
		mrcd_log(MRCD_LOG_INFO, "mrcctl connection (pid %d): %s", (int)c->pid, strerror(-rc));
		conn_close(c);
	}
}

void mrcd_oper_reply(struct oper_conn *c, uint32_t id, int err, const char *msg, json_t *res)
{
	char *t = err ? mrc_oper_reply_err(id, err, msg) : mrc_oper_reply_ok(id, res);
	json_decref(res);
	int rc = mrcd_oper_send(c, t);
	if (rc == -EMSGSIZE) {
		char m[160];
		snprintf(m, sizeof(m), "reply of %zu bytes exceeds the socket's message limit", strlen(t));
		free(t);
		t = mrc_oper_reply_err(id, EMSGSIZE, m);
		rc = mrcd_oper_send(c, t);
	}
	free(t);
	if (rc) {
		mrcd_log(MRCD_LOG_INFO, "mrcctl connection (pid %d): reply not sent: %s", (int)c->pid,
			 strerror(-rc));
		conn_close(c);
	}
}

/* The configured name: no NSS lookup on the loop (ids were resolved once,
 * at start). */
static const char *group_name(const char *name)
{
	return name[0] ? name : "(none configured)";
}

/* No request for ctl_idle_timeout_ms: closed, unless it follows events or
 * waits for its probes (those are answered by the daemon, not idle). */
static void on_idle(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct oper_conn *c = w->data;
	(void)revents;
	if (c->follow || c->probe_left) {
		ev_timer_again(loop, w);
		return;
	}
	c->o->idle_closed++;
	mrcd_log(MRCD_LOG_INFO, "mrcctl connection (uid %u pid %d): idle for %.1f s, closed",
		 (unsigned)c->uid, (int)c->pid, c->o->idle_s);
	conn_close(c);
}

void mrcd_oper_send_event(struct oper *o, const struct oper_event *e)
{
	for (uint32_t i = 0; i < o->nslots; i++) {
		struct oper_conn *c = o->conns[i];
		if (!c || !c->follow)
			continue;
		json_t *ej = mrcd_oper_event_json(o, e);
		json_t *m = json_pack("{s:i, s:o}", "v", MRC_OPER_VERSION, "event", ej);
		if (c->dropped)
			json_object_set_new(m, "dropped", json_integer((json_int_t)c->dropped));
		char *t = json_dumps(m, JSON_COMPACT);
		json_decref(m);
		/* A follower that does not keep up loses events (its queue is
		 * full), never the daemon its loop: counted and reported with
		 * the next record that fits. */
		int rc = mrcd_oper_send(c, t);
		free(t);
		if (!rc)
			c->dropped = 0;
		else if (rc == -ENOBUFS || rc == -ENOMEM)
			c->dropped++;
		else
			conn_close(c);
	}
}

static void dispatch(struct oper_conn *c, const char *buf, size_t len)
{
	struct oper *o = c->o;
	struct mrc_oper_req r;
	char err[256] = "";
	o->requests_total++;
	int rc = mrc_oper_req_parse(buf, len, &r, err, sizeof(err));
	if (rc) {
		mrcd_oper_reply(c, r.id, rc, err, NULL);
		return;
	}
	if (c->follow) {
		mrcd_oper_reply(c, r.id, EALREADY, "this connection follows events; open another", NULL);
		return;
	}
	if (mrc_oper_verb_is_admin(r.verb) && !c->admin) {
		snprintf(err, sizeof(err),
			 "permission denied: '%s' is an admin verb; it needs root or membership of admin_group %s (you are uid %u)",
			 mrc_oper_verb_name(r.verb), group_name(mrcd_config(o->d)->admin_group), (unsigned)c->uid);
		mrcd_log(MRCD_LOG_NOTICE, "mrcctl: refused %s to uid %u (pid %d)",
			 mrc_oper_verb_name(r.verb), (unsigned)c->uid, (int)c->pid);
		mrcd_oper_reply(c, r.id, EPERM, err, NULL);
		return;
	}
	json_t *res = NULL;
	rc = mrcd_oper_run(c, &r, &res, err, sizeof(err));
	if (rc == MRCD_OPER_LATER)
		return;
	if (!rc && !res) {
		rc = -ENOMEM;
		snprintf(err, sizeof(err), "out of memory");
	}
	mrcd_oper_reply(c, r.id, rc, err, rc ? (json_decref(res), NULL) : res);
}

static void on_conn(struct ev_loop *loop, ev_io *w, int revents)
{
	struct oper_conn *c = w->data;
	(void)revents;
	char buf[MRC_OPER_REQ_MAX + 1];
	ssize_t n = recv(c->fd, buf, sizeof(buf), MSG_TRUNC | MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		conn_close(c);
		return;
	}
	ev_timer_again(loop, &c->idle);
	if ((size_t)n > MRC_OPER_REQ_MAX) {
		char m[96];
		snprintf(m, sizeof(m), "request is %zd bytes, at most %u", n, MRC_OPER_REQ_MAX);
		mrcd_oper_reply(c, 0, E2BIG, m, NULL);
		return;
	}
	dispatch(c, buf, (size_t)n);
}

/* A connection over a limit or not allowed: one clear reply, then closed
 * at once (the socket file's mode usually refuses such callers at
 * connect(); this is the second line). */
static void refuse_conn(struct oper *o, int fd, const struct ucred *cr, int allowed, int full)
{
	char m[200];
	if (!allowed)
		snprintf(m, sizeof(m), "permission denied: uid %u is neither root nor in socket_group %s",
			 (unsigned)cr->uid, group_name(mrcd_config(o->d)->socket_group));
	else if (full)
		snprintf(m, sizeof(m), "too many mrcctl connections (%u; config ctl_max_conns)",
			 o->max_conns);
	else
		snprintf(m, sizeof(m), "too many mrcctl connections of uid %u (%u; config ctl_uid_max_conns)",
			 (unsigned)cr->uid, o->uid_max_conns);
	char *t = mrc_oper_reply_err(0, allowed ? EBUSY : EACCES, m);
	/* Its request, if sent already, is read first: closing on an
	 * unread record would reset the connection, and the peer would
	 * see ECONNRESET before the answer. */
	char junk[1];
	(void)!recv(fd, junk, sizeof(junk), MSG_DONTWAIT | MSG_TRUNC);
	if (t)
		send(fd, t, strlen(t), MSG_DONTWAIT | MSG_NOSIGNAL);
	free(t);
	o->refused_total++;
	mrcd_oper_ratelog(o, MRCD_LOG_NOTICE, "mrcctl: refused uid %u pid %d: %s",
			  (unsigned)cr->uid, (int)cr->pid, m);
	close(fd);
}

static void on_accept(struct ev_loop *loop, ev_io *w, int revents)
{
	struct oper *o = w->data;
	(void)revents;
	int fd = mrcd_accept(&o->lguard, o->lfd);
	if (fd < 0)
		return;
	struct ucred cr;
	socklen_t cl = sizeof(cr);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl)) {
		close(fd);
		return;
	}
	o->conns_total++;
	/* Groups from the socket (SO_PEERGROUPS), ids resolved at start: no
	 * NSS lookup (files, LDAP, sssd) may stall the loop here. */
	int admin = cr.uid == 0 || cr.uid == geteuid() ||
		    (o->has_admin_group && mrcd_peer_in_group(fd, cr.gid, o->admin_group));
	int allowed = admin || (o->has_group && mrcd_peer_in_group(fd, cr.gid, o->group));
	int slot = -1;
	uint32_t open = 0, mine = 0;
	for (uint32_t i = 0; i < o->nslots; i++) {
		if (!o->conns[i]) {
			if (slot < 0)
				slot = (int)i;
			continue;
		}
		open++;
		mine += o->conns[i]->uid == cr.uid;
	}
	/* ctl_max_conns for everyone; admins may go ctl_admin_reserve beyond,
	 * so a full socket never locks root out; a non-admin uid holds at
	 * most ctl_uid_max_conns, so one cannot take every slot. */
	int full = open >= (admin ? o->nslots : o->max_conns);
	int uid_full = !admin && mine >= o->uid_max_conns;
	if (!allowed || full || uid_full) {
		refuse_conn(o, fd, &cr, allowed, full);
		return;
	}
	/* Replies (a big topology, every path) are one record each. */
	int sz = (int)MRC_OPER_MSG_MAX + 65536;
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sz, sizeof(sz)))
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	struct oper_conn *c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return;
	}
	*c = (struct oper_conn){ .o = o, .fd = fd, .uid = cr.uid, .gid = cr.gid, .pid = cr.pid,
				 .admin = admin, .out = { .max = OPER_OUT_MAX } };
	ev_io_init(&c->io, on_conn, fd, EV_READ);
	c->io.data = c;
	ev_io_init(&c->wio, on_writable, fd, EV_WRITE);
	c->wio.data = c;
	/* Operator I/O is background work: below the core's idle watcher,
	 * which polls the rings and must run in every loop iteration even
	 * while a client keeps this socket busy. */
	ev_set_priority(&c->io, OPER_PRI);
	ev_set_priority(&c->wio, OPER_PRI);
	mrcd_oper_probe_init(c);
	ev_init(&c->idle, on_idle);
	c->idle.repeat = o->idle_s;
	c->idle.data = c;
	ev_timer_again(loop, &c->idle);
	ev_io_start(loop, &c->io);
	o->conns[slot] = c;
}

/* ---- the listening socket ------------------------------------------- */

static int resolve_group(const char *name, gid_t *g, int *has, char *err, size_t errlen)
{
	*has = 0;
	if (!name[0])
		return 0;
	struct group *gr = getgrnam(name);
	if (!gr) {
		snprintf(err, errlen, "group '%s' does not exist (socket_group/admin_group)", name);
		return -ENOENT;
	}
	*g = gr->gr_gid;
	*has = 1;
	return 0;
}

/* The operator socket is ctl_socket when set, else it sits next to the
 * client socket (same runtime directory, same permissions), named
 * mrcctl.sock. */
static int sock_path(const struct mrcd_cfg *cfg, char *out, size_t len)
{
	if (cfg->ctl_socket[0]) {
		int n = snprintf(out, len, "%s", cfg->ctl_socket);
		return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
	}
	const char *slash = strrchr(cfg->socket, '/');
	size_t dl = slash ? (size_t)(slash - cfg->socket) : 0;
	int n = snprintf(out, len, "%.*s/%s", (int)dl, cfg->socket, MRC_OPER_SOCK_NAME);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static int listen_sock(struct oper *o, char *err, size_t errlen)
{
	const struct mrcd_cfg *cfg = mrcd_config(o->d);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (sock_path(cfg, o->path, sizeof(o->path)) || strlen(o->path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "operator socket path next to '%s' is too long", cfg->socket);
		return -ENAMETOOLONG;
	}
	memcpy(sa.sun_path, o->path, strlen(o->path) + 1);
	/* A live daemon on the path is an error; a stale file is replaced. */
	int probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (probe >= 0) {
		int live = !connect(probe, (struct sockaddr *)&sa, sizeof(sa));
		close(probe);
		if (live) {
			snprintf(err, errlen, "%s: another mrcd is serving it", o->path);
			return -EADDRINUSE;
		}
	}
	unlink(o->path);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(err, errlen, "operator socket: %s", strerror(errno));
		return -errno;
	}
	mode_t old = umask(0177);   /* never world-accessible, not even briefly */
	int rc = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (rc || listen(fd, 16)) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", o->path, strerror(-rc));
		close(fd);
		return rc;
	}
	if ((o->has_group && chown(o->path, (uid_t)-1, o->group)) ||
	    chmod(o->path, cfg->socket_mode & 0770)) {
		rc = -errno;
		snprintf(err, errlen, "%s: cannot set group/mode: %s", o->path, strerror(-rc));
		close(fd);
		unlink(o->path);
		return rc;
	}
	o->lfd = fd;
	return 0;
}

/* systemd's STATUS= line follows the daemon's health, so `systemctl
 * status mrcd` shows bad paths without mrcctl. */
static void notify_status(struct oper *o)
{
	json_t *s = mrcd_oper_status(o);
	const json_t *ev = json_object_get(s, "ev_states");
	char line[256];
	snprintf(line, sizeof(line),
		 "STATUS=%lld/%lld planes up, %lld peers, %lld QPs; paths %lld GOOD, %lld ASSUMED_BAD, %lld DENIED",
		 (long long)json_integer_value(json_object_get(s, "planes_up")),
		 (long long)json_integer_value(json_object_get(s, "planes")),
		 (long long)json_integer_value(json_object_get(s, "peers")),
		 (long long)json_integer_value(json_object_get(s, "qps")),
		 (long long)json_integer_value(json_object_get(ev, "GOOD")),
		 (long long)json_integer_value(json_object_get(ev, "ASSUMED_BAD")),
		 (long long)json_integer_value(json_object_get(ev, "DENIED")));
	json_decref(s);
	static char last[256];
	if (strcmp(line, last)) {
		sd_notify(0, line);
		memcpy(last, line, sizeof(last));
	}
}

static void on_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct oper *o = w->data;
	(void)loop;
	(void)revents;
	uint64_t now = mrcd_now();
	if (now - o->sample_ns >= 1000000000ull) {
		mrcd_oper_sample(o);
		notify_status(o);
	}
	mrcd_oper_ratelog_flush(o);
}

int mrcd_oper_start(struct mrcd *d, char *err, size_t errlen)
{
	struct oper *o = calloc(1, sizeof(*o));
	if (!o)
		return -ENOMEM;
	o->d = d;
	o->lfd = o->mfd = -1;
	const struct mrcd_cfg *cfg = mrcd_config(d);
	o->max_conns = cfg->ctl_max_conns;
	o->nslots = o->max_conns + cfg->ctl_admin_reserve;
	o->uid_max_conns = cfg->ctl_uid_max_conns;
	o->idle_s = cfg->ctl_idle_timeout_ms / 1000.0;
	o->http_max = cfg->metrics_max_conns;
	o->http_idle_s = cfg->metrics_idle_timeout_ms / 1000.0;
	o->conns = calloc(o->nslots, sizeof(*o->conns));
	if (!o->conns) {
		free(o);
		return -ENOMEM;
	}
	int rc = resolve_group(cfg->socket_group, &o->group, &o->has_group, err, errlen);
	if (!rc)
		rc = resolve_group(cfg->admin_group, &o->admin_group, &o->has_admin_group, err, errlen);
	if (!rc)
		rc = mrcd_oper_events_init(o);
	if (!rc)
		rc = listen_sock(o, err, errlen);
	struct mrcd_observer obs = { .event = mrcd_oper_on_event, .note = mrcd_oper_on_note,
				     .arg = o };
	if (!rc && (rc = mrcd_observer_add(d, &obs)))
		snprintf(err, errlen, "operator interface: observers: %s", strerror(-rc));
	if (!rc)
		rc = mrcd_oper_http_start(o, err, errlen);
	if (rc) {
		mrcd_observer_del(d, o);
		if (o->lfd >= 0) {
			close(o->lfd);
			unlink(o->path);
		}
		mrcd_oper_events_fini(o);
		free(o->conns);
		free(o);
		return rc;
	}
	ev_io_init(&o->lio, on_accept, o->lfd, EV_READ);
	o->lio.data = o;
	ev_set_priority(&o->lio, OPER_PRI);
	mrcd_accept_guard_init(&o->lguard, mrcd_loop(d), &o->lio, "operator socket");
	ev_io_start(mrcd_loop(d), &o->lio);
	ev_timer_init(&o->tick, on_tick, 0.2, 0.2);
	o->tick.data = o;
	ev_timer_start(mrcd_loop(d), &o->tick);
	mrcd_oper_sample(o);
	g_oper = o;
	mrcd_log(MRCD_LOG_INFO, "operator socket %s", o->path);
	return 0;
}

void mrcd_oper_stop(struct mrcd *d)
{
	struct oper *o = g_oper;
	if (!o || o->d != d)
		return;
	mrcd_observer_del(d, o);
	for (uint32_t i = 0; i < o->nslots; i++)
		if (o->conns[i])
			conn_close(o->conns[i]);
	mrcd_oper_http_stop(o);
	ev_io_stop(mrcd_loop(d), &o->lio);
	mrcd_accept_guard_stop(&o->lguard);
	ev_timer_stop(mrcd_loop(d), &o->tick);
	close(o->lfd);
	unlink(o->path);
	mrcd_oper_ratelog_flush(o);
	mrcd_oper_events_fini(o);
	mrcd_oper_state_fini(o);
	free(o->conns);
	free(o);
	g_oper = NULL;
}

void mrcd_oper_restore(struct mrcd *d)
{
	if (g_oper && g_oper->d == d)
		mrcd_oper_state_restore(g_oper);
}

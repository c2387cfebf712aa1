/* mrcctl: inspect and steer mrcd (man/mrcctl.8, docs/ctl.md).
 *
 * iproute2-style verbs, one table of them in ctl/verbs.c generated from
 * codec/operverbs.def; human tables by default, -j compact JSON, -p pretty
 * JSON.  Exit codes are a contract for scripts (see the usage text). */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "codec/operjson.h"
#include "codec/prom.h"
#include "ctl/render.h"
#include "ctl/top.h"
#include "ctl/verbs.h"

enum {
	EX_OK = 0, EX_DAEMON = 1, EX_USAGE_ = 2, EX_CONNECT = 3, EX_PERM = 4, EX_NOTFOUND = 5,
	EX_PROTO = 6, EX_TIMEOUT = 7,
};

static int json_mode;   /* 0 human, 1 compact, 2 pretty */

static int exit_for(int err)
{
	switch (-err) {
	case EACCES: case EPERM: return EX_PERM;
	case ENOENT: return EX_NOTFOUND;
	case EBADMSG: case EPROTONOSUPPORT: case EMSGSIZE: return EX_PROTO;
	case ETIMEDOUT: return EX_TIMEOUT;
	default: return EX_DAEMON;
	}
}

static void print_json(const json_t *j)
{
	char *s = json_dumps(j, json_mode == 2 ? JSON_INDENT(2) : JSON_COMPACT);
	if (s)
		printf("%s\n", s);
	free(s);
}

static int report(int err, const char *msg)
{
	fprintf(stderr, "mrcctl: %s\n", msg);
	if (json_mode) {
		json_t *e = json_pack("{s:{s:i, s:s, s:s}}", "error", "errno", -err, "code",
				      mrc_oper_errno_name(err), "message", msg);
		print_json(e);
		json_decref(e);
	}
	return exit_for(err);
}

static int connect_sock(const char *path, int *fd_out)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char m[512];
	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(m, sizeof(m), "socket path '%s' is too long", path);
		report(-EINVAL, m);
		return EX_USAGE_;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		if (e == EACCES || e == EPERM) {
			snprintf(m, sizeof(m),
				 "permission denied on %s: mrcctl needs root or membership of mrcd's socket_group",
				 path);
			report(-EACCES, m);
			return EX_PERM;
		}
		snprintf(m, sizeof(m), "cannot connect to mrcd at %s: %s%s", path, strerror(e),
			 e == ENOENT || e == ECONNREFUSED ? " (is mrcd running? -s picks another socket)" : "");
		fprintf(stderr, "mrcctl: %s\n", m);
		if (json_mode) {
			json_t *j = json_pack("{s:{s:i, s:s, s:s}}", "error", "errno", e, "code",
					      mrc_oper_errno_name(e), "message", m);
			print_json(j);
			json_decref(j);
		}
		return EX_CONNECT;
	}
	*fd_out = fd;
	return 0;
}

/* One whole record, however large (peek at its size first).  0 at EOF,
 * -ETIMEDOUT, or the length; *out is malloc'd. */
static ssize_t recv_record(int fd, int timeout_ms, char **out)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int r = poll(&p, 1, timeout_ms);
	if (r == 0)
		return -ETIMEDOUT;
	if (r < 0)
		return -errno;
	ssize_t n = recv(fd, NULL, 0, MSG_PEEK | MSG_TRUNC);
	if (n <= 0)
		return n < 0 ? -errno : 0;
	char *b = malloc((size_t)n + 1);
	if (!b)
		return -ENOMEM;
	ssize_t m = recv(fd, b, (size_t)n, 0);
	if (m != n) {
		free(b);
		return m < 0 ? -errno : -EBADMSG;
	}
	b[n] = 0;
	*out = b;
	return n;
}

static volatile sig_atomic_t stop;
static void on_sig(int s) { (void)s; stop = 1; }

static int follow(int fd)
{
	signal(SIGINT, on_sig);
	signal(SIGTERM, on_sig);
	signal(SIGPIPE, SIG_IGN);
	while (!stop) {
		char *b = NULL;
		ssize_t n = recv_record(fd, 500, &b);
		if (n == -ETIMEDOUT || n == -EINTR)
			continue;
		if (n <= 0) {
			if (stop)
				break;
			fprintf(stderr, "mrcctl: mrcd closed the event stream\n");
			return EX_DAEMON;
		}
		json_t *j = json_loadb(b, (size_t)n, 0, NULL);
		free(b);
		json_t *ev = json_object_get(j, "event");
		if (!ev) {
			json_decref(j);
			fprintf(stderr, "mrcctl: bad event record from mrcd\n");
			return EX_PROTO;
		}
		json_t *dr = json_object_get(j, "dropped");
		if (dr)
			fprintf(stderr, "mrcctl: %lld events dropped (reading too slowly)\n",
				(long long)json_integer_value(dr));
		if (json_mode)
			print_json(ev);
		else
			mrc_ctl_render_event(stdout, ev);
		fflush(stdout);
		json_decref(j);
	}
	return EX_OK;
}

/* Sends r and reads its reply into *res: 0, or the exit status after
 * reporting what went wrong. */
static int call(int fd, struct mrc_oper_req *r, int wait_ms, json_t **res)
{
	char *req = mrc_oper_req_encode(r);
	if (!req)
		return report(-ENOMEM, "out of memory");
	ssize_t sent = send(fd, req, strlen(req), MSG_NOSIGNAL);
	int serr = errno;
	free(req);
	char *buf = NULL;
	ssize_t n = recv_record(fd, wait_ms, &buf);
	if (n == -ETIMEDOUT)
		return report(-ETIMEDOUT, "no reply from mrcd in time (-t sets the timeout)");
	if (n <= 0) {
		char m[200];
		snprintf(m, sizeof(m), "mrcd closed the connection without a reply%s%s",
			 sent < 0 ? ": " : "", sent < 0 ? strerror(serr) : "");
		return report(-EBADMSG, m);
	}
	char msg[1024];
	int rc = mrc_oper_reply_parse(buf, (size_t)n, NULL, res, msg, sizeof(msg));
	free(buf);
	return rc ? report(rc, msg) : 0;
}

static struct termios tty_saved;
static int tty_raw;
static void tty_restore(void)
{
	if (tty_raw)
		tcsetattr(0, TCSANOW, &tty_saved);
	tty_raw = 0;
}

/* mrcctl top: a stats request per frame on one connection; frames
 * replace each other on a terminal and follow each other otherwise (as
 * top -b).  Keys are read unbuffered from a terminal: q quits. */
static int top(int fd, const struct mrc_ctl_cmd *cmd, int wait_ms)
{
	struct mrc_oper_req r;
	mrc_oper_req_init(&r);
	r.verb = MRC_OPER_STATUS;
	r.id = 1;
	json_t *st = NULL;
	int rc = call(fd, &r, wait_ms, &st);
	if (rc)
		return rc;
	char title[256];
	const json_t *host = json_object_get(st, "host");
	snprintf(title, sizeof(title), "mrcctl top: %s (%s), every %.1f s",
		 json_string_value(json_object_get(host, "name")) ?: "?",
		 json_string_value(json_object_get(st, "mode")) ?: "?", cmd->interval_ms / 1000.0);
	json_decref(st);
	int out_tty = isatty(1), in_tty = isatty(0);
	if (in_tty && !tcgetattr(0, &tty_saved)) {
		struct termios t = tty_saved;
		t.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		t.c_cc[VMIN] = 0;
		t.c_cc[VTIME] = 0;
		if (!tcsetattr(0, TCSANOW, &t)) {
			tty_raw = 1;
			atexit(tty_restore);
		}
	}
	signal(SIGINT, on_sig);
	signal(SIGTERM, on_sig);
	json_t *prev = NULL;
	double tprev = 0;
	rc = EX_OK;
	for (int k = 0; !stop; k++) {
		r.verb = MRC_OPER_STATS;
		r.id = (uint32_t)k + 2;
		json_t *cur = NULL;
		double t = mrc__mono_s();
		if ((rc = call(fd, &r, wait_ms, &cur)))
			break;
		if (out_tty)
			fputs("\033[H\033[2J", stdout);
		else if (k)
			fputs("\n", stdout);
		if (mrc_ctl_top_frame(stdout, title, cur, prev, prev ? t - tprev : 0)) {
			json_decref(cur);
			rc = report(-EBADMSG, "stats reply lacks what top shows");
			break;
		}
		if (in_tty)
			fputs("\n(q quits)\n", stdout);
		fflush(stdout);
		json_decref(prev);
		prev = cur;
		tprev = t;
		if (cmd->count && k + 1 >= cmd->count)
			break;
		/* Sleep for the interval, or until q on the terminal. */
		struct pollfd p = { .fd = 0, .events = POLLIN };
		double until = t + cmd->interval_ms / 1000.0;
		for (double left; !stop && (left = until - mrc__mono_s()) > 0;) {
			if (poll(&p, in_tty ? 1 : 0, (int)(left * 1000) + 1) > 0) {
				char ch;
				if (read(0, &ch, 1) == 1 && (ch == 'q' || ch == 'Q'))
					stop = 1;
			}
		}
	}
	json_decref(prev);
	tty_restore();
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' }, { "pretty", no_argument, NULL, 'p' },
		{ "socket", required_argument, NULL, 's' }, { "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 } };
	const char *sock = getenv("MRCCTL_SOCKET");
	if (!sock || !*sock)
		sock = MRC_OPER_DEFAULT_SOCK;
	long long tmo = 10;
	int c;
	while ((c = getopt_long(argc, argv, "+jps:t:h", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json_mode = json_mode ? json_mode : 1; break;
		case 'p': json_mode = 2; break;
		case 's': sock = optarg; break;
		case 't':
			if (mrc_ctl_parse_num(optarg, 3600, &tmo) || !tmo) {
				mrc_ctl_usage_err(stderr, "bad timeout '%s' (seconds, 1..3600)", optarg);
				return EX_USAGE_;
			}
			break;
		case 'h': mrc_ctl_usage(stdout); return EX_OK;
		default: mrc_ctl_usage(stderr); return EX_USAGE_;
		}
	}
	if (optind >= argc) {
		mrc_ctl_usage(stderr);
		return EX_USAGE_;
	}
	struct mrc_ctl_cmd cmd;
	if (mrc_ctl_parse(argc - optind, argv + optind, &cmd, stderr))
		return EX_USAGE_;
	if (cmd.req.verb == MRC_OPER_NONE) {    /* help */
		mrc_ctl_usage(stdout);
		return EX_OK;
	}
	if (cmd.top && json_mode) {
		mrc_ctl_usage_err(stderr, "'%s' is a view for people; `mrcctl -j stats` gives the counters", "top");
		return EX_USAGE_;
	}
	struct mrc_oper_req r = cmd.req;
	int rc;
	r.id = (uint32_t)getpid();
	int fd;
	if ((rc = connect_sock(sock, &fd)))
		return rc;
	/* A refusing daemon may already have answered and closed: read its
	 * reason even when the send fails. */
	signal(SIGPIPE, SIG_IGN);
	if (cmd.top) {
		rc = top(fd, &cmd, (int)tmo * 1000);
		close(fd);
		return rc;
	}
	json_t *res = NULL;
	int wait_ms = (int)tmo * 1000 + (r.verb == MRC_OPER_PROBE && r.timeout_ms > 0 ? r.timeout_ms : 0);
	if ((rc = call(fd, &r, wait_ms, &res))) {
		close(fd);
		return rc;
	}
	if (cmd.prom) {
		char *t = mrc_oper_prom(res);
		if (t)
			fputs(t, stdout);
		free(t);
	} else if (json_mode) {
		print_json(res);
	} else if (cmd.verb->render(stdout, res)) {
		json_decref(res);
		close(fd);
		return report(-EBADMSG, "reply lacks the fields this mrcctl renders (try -j)");
	}
	json_decref(res);
	fflush(stdout);
	if (r.follow)
		rc = follow(fd);
	close(fd);
	return rc;
}

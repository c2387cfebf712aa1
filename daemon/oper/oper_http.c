/* Optional Prometheus endpoint (metrics_listen, off by default): a tiny
 * HTTP/1.0 responder on the loop, GET /metrics only, one request per
 * connection, bounded request size, time (metrics_idle_timeout_ms for the
 * whole exchange) and connections (metrics_max_conns; when all are taken a
 * new connection closes the oldest one that has sent no request yet, so
 * idle connections cannot keep the endpoint refusing).  Never blocks: the
 * response is queued and written as the socket takes it. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "codec/prom.h"
#include "daemon/oper/oper.h"

#define HTTP_REQ_MAX 4096

struct http_conn {
	struct oper *o;
	struct http_conn *prev, *next;  /* o->http_head: oldest first */
	int answered;                 /* its request is read: only writing now */
	int fd;
	ev_io io;
	ev_timer tm;
	struct outq out;              /* the response, once there is one */
	size_t len;
	char buf[HTTP_REQ_MAX + 1];
};

static void http_close(struct http_conn *h)
{
	ev_io_stop(mrcd_loop(h->o->d), &h->io);
	ev_timer_stop(mrcd_loop(h->o->d), &h->tm);
	mrcd_outq_clear(&h->out);
	close(h->fd);
	h->o->http_n--;
	*(h->prev ? &h->prev->next : &h->o->http_head) = h->next;
	*(h->next ? &h->next->prev : &h->o->http_tail) = h->prev;
	free(h);
}

static void on_write(struct ev_loop *loop, ev_io *w, int revents)
{
	struct http_conn *h = w->data;
	(void)loop;
	(void)revents;
	if (mrcd_outq_flush(&h->out, h->fd) != 1)
		http_close(h);   /* all sent, or the client is gone */
}

static void respond(struct http_conn *h, int code, const char *reason, const char *ctype,
		    const char *body)
{
	char hdr[256];
	int n = snprintf(hdr, sizeof(hdr),
			 "HTTP/1.0 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
			 code, reason, ctype, strlen(body));
	struct ev_loop *loop = mrcd_loop(h->o->d);
	/* The request is read: from now on the connection only writes. */
	h->out.max = SIZE_MAX;
	h->answered = 1;
	if (mrcd_outq_push(&h->out, hdr, (size_t)n) ||
	    mrcd_outq_push(&h->out, body, strlen(body)) ||
	    mrcd_outq_flush(&h->out, h->fd) != 1) {
		http_close(h);
		return;
	}
	ev_io_stop(loop, &h->io);
	ev_io_init(&h->io, on_write, h->fd, EV_WRITE);
	h->io.data = h;
	ev_set_priority(&h->io, OPER_PRI);
	ev_io_start(loop, &h->io);
}

static void handle(struct http_conn *h)
{
	char method[8] = "", path[128] = "";
	if (sscanf(h->buf, "%7s %127s", method, path) != 2) {
		respond(h, 400, "Bad Request", "text/plain", "bad request\n");
	} else if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		respond(h, 405, "Method Not Allowed", "text/plain", "only GET\n");
	} else if (strcmp(path, "/metrics")) {
		respond(h, 404, "Not Found", "text/plain", "mrcd: metrics are at /metrics\n");
	} else {
		json_t *st = mrcd_oper_stats(h->o);
		char *t = mrc_oper_prom(st);
		json_decref(st);
		if (t)
			respond(h, 200, "OK", "text/plain; version=0.0.4", t);
		else
			respond(h, 500, "Internal Server Error", "text/plain", "out of memory\n");
		free(t);
	}
}

static void on_read(struct ev_loop *loop, ev_io *w, int revents)
{
	struct http_conn *h = w->data;
	(void)loop;
	(void)revents;
	ssize_t n = recv(h->fd, h->buf + h->len, HTTP_REQ_MAX - h->len, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		http_close(h);
		return;
	}
	h->len += (size_t)n;
	h->buf[h->len] = 0;
	if (strstr(h->buf, "\r\n\r\n") || strstr(h->buf, "\n\n"))
		handle(h);
	else if (h->len == HTTP_REQ_MAX)
		respond(h, 413, "Request Too Large", "text/plain", "request too large\n");
}

static void on_timeout(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	http_close(w->data);
}

static void on_accept(struct ev_loop *loop, ev_io *w, int revents)
{
	struct oper *o = w->data;
	(void)revents;
	int fd = mrcd_accept(&o->mguard, o->mfd);
	if (fd < 0)
		return;
	if (o->http_n >= o->http_max) {
		/* Room from the oldest connection that has asked nothing yet: a
		 * scraper asks at once, so only idle ones are closed, and idle
		 * connections re-opened in a loop cannot keep scrapers out. */
		struct http_conn *old = o->http_head;
		while (old && old->answered)
			old = old->next;
		if (old) {
			o->http_evicted++;
			http_close(old);
		}
	}
	if (o->http_n >= o->http_max) {
		o->http_refused++;
		mrcd_oper_ratelog(o, MRCD_LOG_NOTICE,
				  "metrics: connection refused: %u open (metrics_max_conns), %llu refused so far",
				  o->http_n, (unsigned long long)o->http_refused);
		close(fd);
		return;
	}
	struct http_conn *h = calloc(1, sizeof(*h));
	if (!h) {
		close(fd);
		return;
	}
	h->o = o;
	h->fd = fd;
	o->http_n++;
	h->prev = o->http_tail;
	*(o->http_tail ? &o->http_tail->next : &o->http_head) = h;
	o->http_tail = h;
	ev_io_init(&h->io, on_read, fd, EV_READ);
	h->io.data = h;
	ev_set_priority(&h->io, OPER_PRI);
	ev_timer_init(&h->tm, on_timeout, o->http_idle_s, 0);
	h->tm.data = h;
	ev_io_start(loop, &h->io);
	ev_timer_start(loop, &h->tm);
}

/* "[v6addr]:port" or "v4addr:port". */
static int parse_listen(const char *s, struct sockaddr_storage *ss, socklen_t *sl)
{
	char host[64];
	const char *colon;
	if (s[0] == '[') {
		const char *end = strchr(s, ']');
		if (!end || end[1] != ':' || (size_t)(end - s - 1) >= sizeof(host))
			return -EINVAL;
		memcpy(host, s + 1, (size_t)(end - s - 1));
		host[end - s - 1] = 0;
		colon = end + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon || (size_t)(colon - s) >= sizeof(host))
			return -EINVAL;
		memcpy(host, s, (size_t)(colon - s));
		host[colon - s] = 0;
	}
	char *end;
	unsigned long port = strtoul(colon + 1, &end, 10);
	if (!colon[1] || *end || port == 0 || port > 65535)
		return -EINVAL;
	memset(ss, 0, sizeof(*ss));
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
	struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
	if (inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((uint16_t)port);
		*sl = sizeof(*a6);
		return 0;
	}
	if (inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		a4->sin_port = htons((uint16_t)port);
		*sl = sizeof(*a4);
		return 0;
	}
	return -EINVAL;
}

int mrcd_oper_http_start(struct oper *o, char *err, size_t errlen)
{
	const char *s = mrcd_config(o->d)->metrics_listen;
	if (!s[0])
		return 0;
	struct sockaddr_storage ss;
	socklen_t sl;
	if (parse_listen(s, &ss, &sl)) {
		snprintf(err, errlen, "metrics_listen: '%s' is not [IPv6]:PORT or IPv4:PORT", s);
		return -EINVAL;
	}
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&ss, sl) || listen(fd, 16)) {
		int rc = -errno;
		snprintf(err, errlen, "metrics_listen %s: %s", s, strerror(-rc));
		if (fd >= 0)
			close(fd);
		return rc;
	}
	o->mfd = fd;
	ev_io_init(&o->mio, on_accept, fd, EV_READ);
	o->mio.data = o;
	ev_set_priority(&o->mio, OPER_PRI);
	mrcd_accept_guard_init(&o->mguard, mrcd_loop(o->d), &o->mio, "metrics");
	ev_io_start(mrcd_loop(o->d), &o->mio);
	mrcd_log(MRCD_LOG_INFO, "metrics on http://%s/metrics", s);
	return 0;
}

void mrcd_oper_http_stop(struct oper *o)
{
	if (o->mfd < 0)
		return;
	ev_io_stop(mrcd_loop(o->d), &o->mio);
	mrcd_accept_guard_stop(&o->mguard);
	while (o->http_head)
		http_close(o->http_head);
	close(o->mfd);
	o->mfd = -1;
}

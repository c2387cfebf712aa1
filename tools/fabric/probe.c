/* `probe`: sends UDP datagrams from one host to another over chosen paths
 * (the uSID destination address of each EV) and counts what arrives, and
 * how much of it a trimmer cut.  Datagrams are real MRC WRITE packets
 * (the engine's mrce_pkt_build, CRCs included) with a per-run nonce as dqpn,
 * a sequence number as psn and the EV in ev, and arrivals are checked by
 * the transport's own decoder: a trimmed packet counts only if the decoder
 * accepts it as trimmed.  --raw sends the same bytes with opcode 127, which
 * the trimmer must ignore.  UDP checksums are zero, as the transport sends
 * them (the destination changes hop by hop).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "topology/addr.h"
#include "tools/fabric/fabric.h"
#include "transport/engine.h"

#ifndef UDP_NO_CHECK6_TX
#define UDP_NO_CHECK6_TX 101
#define UDP_NO_CHECK6_RX 102
#endif
#define MAX_EVS 4096

struct ev_stat {
	uint32_t ev;
	struct mrc_path p;
	char addr[INET6_ADDRSTRLEN];
	uint32_t sent, send_errors, received, trimmed;
};

static int sock_in(const struct fab *f, uint32_t host, int opt, int *fd)
{
	char ns[FAB_NS_MAX];
	int saved, one = 1, big = 8 << 20;
	fab_ns_name(f, f->t->hosts[host], ns);
	int rc = fab_ns_enter(ns, &saved);
	if (rc) {
		fab_err("entering %s: %s (is fabric '%s' up?)", ns, strerror(-rc), f->prefix);
		return rc;
	}
	*fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	rc = *fd < 0 ? -errno : 0;
	fab_ns_leave(saved);
	if (rc)
		return rc;
	setsockopt(*fd, IPPROTO_UDP, opt, &one, sizeof(one));
	setsockopt(*fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	return 0;
}

/* Credits one arrival to its EV, if it decodes as one of ours. */
static void account(struct ev_stat *st, size_t n, uint8_t *b, ssize_t len,
		    uint32_t nonce, size_t size, bool raw)
{
	struct mrce_pkt_info v;
	/* raw: the disguise is undone, then it is decoded as usual. */
	if (len < 2 || mrce_pkt_parse(b, (size_t)len, raw, &v) || v.kind != MRCE_PKT_WRITE ||
	    v.dqpn != nonce || v.plen != size)
		return;
	for (size_t i = 0; i < n; i++)
		if (st[i].ev == v.ev) {
			st[i].received++;
			st[i].trimmed += v.trimmed;
			return;
		}
}

static void drain(int rx, struct ev_stat *st, size_t n, uint32_t nonce, size_t size,
		  uint8_t *buf, bool raw)
{
	ssize_t r;
	while ((r = recv(rx, buf, MRCE_PKT_MAX(size) + 64, MSG_DONTWAIT)) >= 0)
		account(st, n, buf, r, nonce, size, raw);
}

static int select_evs(const struct fab *f, uint32_t a, uint32_t b, const struct fab_sel *sel,
		      struct ev_stat *st, size_t *n)
{
	*n = 0;
	long ev;
	int rc = fab_sel_ev(f, sel, &ev);
	if (rc)
		return rc;
	for (uint32_t e = 0; e < mrc_topo_ev_count(f->t) && *n < MAX_EVS; e++) {
		if (ev >= 0 && e != (uint32_t)ev)
			continue;
		struct ev_stat *s = &st[*n];
		memset(s, 0, sizeof(*s));
		if (mrc_topo_path(f->t, a, b, e, &s->p))
			continue;
		if (fab_path_addr(f, &s->p, s->addr, sizeof(s->addr)))
			return -EINVAL;
		s->ev = e;
		(*n)++;
	}
	if (!*n) {
		fab_err("no such path between these hosts");
		return -ENOENT;
	}
	return 0;
}

static void report(const struct fab *f, const struct ev_stat *st, size_t n)
{
	json_t *out = json_array();
	for (size_t i = 0; i < n; i++) {
		const struct ev_stat *s = &st[i];
		json_t *sw = json_array();
		for (unsigned k = 0; k < s->p.n_switches; k++)
			json_array_append_new(sw, json_string(f->t->nodes[s->p.switches[k]].name));
		json_array_append_new(out, json_pack("{s:i, s:i, s:o, s:s, s:o, s:i, s:i, s:i, s:i}",
			"ev", s->ev, "plane", s->p.plane,
			"spine", s->p.spine == MRC_PATH_SPINE_DIRECT ? json_null() : json_integer(s->p.spine),
			"addr", s->addr, "switches", sw, "sent", s->sent, "send_errors", s->send_errors,
			"received", s->received, "trimmed", s->trimmed));
		if (!f->json)
			printf("ev %-3u %-40s sent %-5u errors %-5u received %-5u trimmed %u\n", s->ev,
			       s->addr, s->sent, s->send_errors, s->received, s->trimmed);
	}
	if (f->json) {
		char *txt = json_dumps(out, JSON_COMPACT | JSON_PRESERVE_ORDER);
		if (txt)
			puts(txt);
		free(txt);
	}
	json_decref(out);
}

int fab_probe(const struct fab *f, int argc, char **argv)
{
	static const struct option opts[] = { FAB_SEL_OPTIONS,
		{ "count", required_argument, NULL, 'c' }, { "size", required_argument, NULL, 's' },
		{ "wait", required_argument, NULL, 'w' }, { "port", required_argument, NULL, 'p' },
		{ "raw", no_argument, NULL, 'R' }, { NULL, 0, NULL, 0 } };
	struct fab_sel sel = FAB_SEL_INIT;
	long count = 10, size = 200, wait_ms = 500, port = MRC_UDP_PORT;
	bool raw = false;
	int c, rc;
	optind = 0;  /* 0: glibc re-initialises (main used getopt already) */
	while ((c = getopt_long(argc, argv, "c:s:w:", opts, NULL)) != -1) {
		switch (c) {
		case 'c': rc = fab_num("count", optarg, 1, 100000, &count); break;
		case 's': rc = fab_num("size", optarg, 1, 8000, &size); break;
		case 'w': rc = fab_num("wait", optarg, 0, 60000, &wait_ms); break;
		case 'p': rc = fab_num("port", optarg, 1, 65535, &port); break;
		case 'R': raw = true; rc = 0; break;
		default: rc = fab_sel_opt(&sel, c, optarg) > 0 ? 0 : -EINVAL; break;
		}
		if (rc)
			return rc;
	}
	if (argc - optind != 2) {
		fab_err("usage: probe SRC DST [--plane P (--spine S | --direct) | --ev E] [-c 1..100000] "
			"[-s 1..8000 payload bytes] [-w 0..60000 ms] [--port P] [--raw]");
		return -EINVAL;
	}
	uint32_t a, b;
	if ((rc = fab_host_arg(f, argv[optind], &a)) || (rc = fab_host_arg(f, argv[optind + 1], &b)))
		return rc;
	if (a == b) {
		fab_err("source and destination are the same host");
		return -EINVAL;
	}
	struct ev_stat *st = calloc(MAX_EVS, sizeof(*st));
	uint8_t *buf = calloc(1, MRCE_PKT_MAX(size) + 64);
	int rx = -1, tx = -1;
	rc = -ENOMEM;
	if (!st || !buf)
		goto out;
	size_t n;
	if ((rc = select_evs(f, a, b, &sel, st, &n)) ||
	    (rc = sock_in(f, b, UDP_NO_CHECK6_RX, &rx)) || (rc = sock_in(f, a, UDP_NO_CHECK6_TX, &tx)))
		goto out;
	struct sockaddr_in6 me = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port) };
	if (bind(rx, (struct sockaddr *)&me, sizeof(me))) {
		rc = -errno;
		fab_err("binding UDP port %ld in the destination: %s", port, strerror(errno));
		goto out;
	}
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	uint32_t nonce = (uint32_t)ts.tv_nsec ^ (uint32_t)getpid() << 16;
	uint32_t expected = 0;
	uint8_t *pkt = calloc(1, MRCE_PKT_MAX(size));
	uint8_t *pay = malloc((size_t)size + 1);
	if (!pkt || !pay) {
		free(pkt);
		free(pay);
		rc = -ENOMEM;
		goto out;
	}
	memset(pay, 0xa5, (size_t)size);
	for (size_t i = 0; i < n; i++) {
		struct sockaddr_in6 to = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port) };
		inet_pton(AF_INET6, st[i].addr, &to.sin6_addr);
		for (long k = 0; k < count; k++) {
			struct mrce_pkt_desc h = { .kind = MRCE_PKT_WRITE, .raw = raw,
				.dqpn = nonce, .psn = (uint32_t)k, .ev = (uint16_t)st[i].ev,
				.plen = (uint16_t)size, .msn = (uint32_t)k, .rkey = 1,
				.payload = pay };
			size_t plen = mrce_pkt_build(pkt, &h);
			if (!plen || sendto(tx, pkt, plen, 0, (struct sockaddr *)&to, sizeof(to)) < 0) {
				st[i].send_errors++;
			} else {
				st[i].sent++;
				expected++;
			}
			drain(rx, st, n, nonce, (size_t)size, buf, raw);
		}
	}
	free(pkt);
	free(pay);
	/* Wait until everything sent has arrived, or wait_ms of silence. */
	long long deadline = mrc__mono_ms() + wait_ms;
	for (;;) {
		uint32_t got = 0;
		for (size_t i = 0; i < n; i++)
			got += st[i].received;
		long long left = deadline - mrc__mono_ms();
		if (got >= expected || left <= 0)
			break;
		struct pollfd p = { .fd = rx, .events = POLLIN };
		if (poll(&p, 1, (int)left) > 0)
			drain(rx, st, n, nonce, (size_t)size, buf, raw);
	}
	report(f, st, n);
	rc = 0;
out:
	if (rx >= 0)
		close(rx);
	if (tx >= 0)
		close(tx);
	free(st);
	free(buf);
	return rc;
}

/* UDP datapath on loopback: batched scatter-gather send, batched receive,
 * source address, plane and CE mark reported, precise open errors. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <poll.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "datapath/datapath.h"
#include "tests/support/tclass_sock.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

/* Set by a test: the next setsockopt(UDP_GRO) fails as on a kernel
 * before 5.0 (this definition stands in for libc's in this program). */
static int refuse_gro, refused_gro;

int setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	static int (*real)(int, int, int, const void *, socklen_t);
	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "setsockopt");
	if (refuse_gro && level == IPPROTO_UDP && name == UDP_GRO) {
		refused_gro++;
		errno = ENOPROTOOPT;
		return -1;
	}
	return real(fd, level, name, val, len);
}

static uint16_t base_port(void)
{
	/* Distinct per process so parallel runs (plain and sanitizer builds)
	 * do not collide. */
	return (uint16_t)(20000 + (getpid() % 20000));
}

static void batch_roundtrip(void **state)
{
	(void)state;
	struct mrc_dp_plane pl = { .ifname = "", .local = IN6ADDR_LOOPBACK_INIT };
	struct mrc_dp *a, *b;
	char why[256];
	uint16_t pa = base_port(), pb = pa + 1;
	struct mrc_dp_cfg ca = { .planes = &pl, .nplanes = 1, .port = pa }, cb = ca;
	cb.port = pb;
	assert_int_equal(mrc_dp_open(&a, "udp", &ca, why, sizeof(why)), 0);
	assert_int_equal(mrc_dp_open(&b, NULL, &cb, why, sizeof(why)), 0);
	assert_string_equal(mrc_dp_name(a), "udp");
	assert_string_equal(mrc_dp_name(b), "udp");   /* the default */
	/* the kernel knows the link state, not this provider */
	assert_int_equal(mrc_dp_link_up(a, 0), -EOPNOTSUPP);
	enum { N = 40 };
	static uint8_t hdr[N][8], pay[N][1000], tr[N][4];
	struct mrc_dp_out out[N];
	for (int i = 0; i < N; i++) {
		memset(hdr[i], i, sizeof(hdr[i]));
		memset(pay[i], 0x80 + i, sizeof(pay[i]));
		memset(tr[i], 0xee, sizeof(tr[i]));
		out[i] = (struct mrc_dp_out){ .plane = 0, .dport = pb,
			.dst = in6addr_loopback, .iovcnt = 3,
			.iov = { { hdr[i], 8 }, { pay[i], 100 + (size_t)i }, { tr[i], 4 } } };
	}
	assert_int_equal(mrc_dp_send(a, out, N), N);
	int got = 0;
	struct mrc_dp_in in[MRC_DP_BATCH];
	struct pollfd p = { .fd = mrc_dp_fd(b, 0), .events = POLLIN };
	while (got < N) {
		assert_true(poll(&p, 1, 2000) == 1);   /* bounded wait for data */
		int n = mrc_dp_recv(b, 0, in, MRC_DP_BATCH);
		assert_true(n >= 0);
		for (int k = 0; k < n; k++, got++) {
			assert_int_equal(in[k].len, 8 + 100 + got + 4);
			assert_int_equal(in[k].buf[0], got);
			assert_int_equal(in[k].buf[8], 0x80 + got);
			assert_int_equal(in[k].buf[in[k].len - 1], 0xee);
			assert_int_equal(in[k].plane, 0);
			assert_int_equal(in[k].ecn_ce, 0);
			assert_memory_equal(&in[k].src, &in6addr_loopback, 16);
		}
	}
	struct mrc_dp_stats st;
	mrc_dp_get_stats(a, &st);
	assert_int_equal(st.tx_pkts, N);
	mrc_dp_get_stats(b, &st);
	assert_int_equal(st.rx_pkts, N);
	/* Nothing more is waiting: recv returns 0 without blocking. */
	assert_int_equal(mrc_dp_recv(b, 0, in, MRC_DP_BATCH), 0);
	assert_int_equal(mrc_dp_send(a, out, 0), 0);
	mrc_dp_close(a);
	mrc_dp_close(b);
}

/* The receive headers are built once and reused: over several calls each
 * datagram still reports its own source and its own CE mark. */
static void ecn_and_source_across_calls(void **state)
{
	(void)state;
	struct mrc_dp_plane pl = { .ifname = "", .local = IN6ADDR_LOOPBACK_INIT };
	struct mrc_dp *b;
	char why[256];
	uint16_t pb = (uint16_t)(base_port() + 3), pce = pb + 1, pect = pb + 2;
	struct mrc_dp_cfg cb = { .planes = &pl, .nplanes = 1, .port = pb };
	assert_int_equal(mrc_dp_open(&b, "udp", &cb, why, sizeof(why)), 0);
	int ce = tclass_sock(3, pce), ect = tclass_sock(2, pect);
	struct sockaddr_in6 to = { .sin6_family = AF_INET6, .sin6_port = htons(pb),
		.sin6_addr = IN6ADDR_LOOPBACK_INIT };
	struct pollfd p = { .fd = mrc_dp_fd(b, 0), .events = POLLIN };
	struct mrc_dp_in in[MRC_DP_BATCH];
	for (int round = 0; round < 4; round++) {
		/* 1, 2, 3, 4 datagrams, the marks alternating by sender */
		for (int i = 0; i <= round; i++) {
			uint8_t d[32] = { (uint8_t)i };
			int fd = (i + round) % 2 ? ce : ect;
			assert_int_equal(sendto(fd, d, sizeof(d) - (size_t)i, 0,
						(struct sockaddr *)&to, sizeof(to)), (ssize_t)sizeof(d) - i);
		}
		int got = 0;
		while (got <= round) {
			assert_true(poll(&p, 1, 2000) == 1);
			int n = mrc_dp_recv(b, 0, in, MRC_DP_BATCH);
			assert_true(n >= 0);
			for (int k = 0; k < n; k++, got++) {
				assert_int_equal(in[k].buf[0], got);
				assert_int_equal(in[k].len, 32 - got);
				int want_ce = (got + round) % 2;
				assert_int_equal(in[k].sport, want_ce ? pce : pect);
				assert_int_equal(in[k].ecn_ce, want_ce);
				assert_memory_equal(&in[k].src, &in6addr_loopback, 16);
			}
		}
		assert_int_equal(got, round + 1);
	}
	close(ce);
	close(ect);
	mrc_dp_close(b);
}

/* datapath_args gso=on: runs of same-size datagrams to one destination
 * leave as UDP_SEGMENT messages (counted), and the receiver still gets
 * every datagram whole, in order, whatever the split of a datagram into
 * iovecs; a change of size or of destination ends a run. */
static void gso_runs(void **state)
{
	(void)state;
	struct mrc_dp_plane pl = { .ifname = "", .local = IN6ADDR_LOOPBACK_INIT };
	struct mrc_dp *a, *b, *c;
	char why[256];
	uint16_t pa = (uint16_t)(base_port() + 6), pb = pa + 1, pc = pa + 2;
	struct mrc_dp_cfg ca = { .planes = &pl, .nplanes = 1, .port = pa, .args = "gso=on" };
	struct mrc_dp_cfg cb = { .planes = &pl, .nplanes = 1, .port = pb }, cc = cb;
	cc.port = pc;
	assert_int_equal(mrc_dp_open(&a, "udp", &ca, why, sizeof(why)), 0);
	assert_int_equal(mrc_dp_open(&b, "udp", &cb, why, sizeof(why)), 0);
	assert_int_equal(mrc_dp_open(&c, "udp", &cc, why, sizeof(why)), 0);
	/* 70 of 112 bytes (one of them a single iovec), 3 of 60, 10 of 112,
	 * one of 112 to c, 5 of 112 to b again. */
	enum { N = 89 };
	static uint8_t hdr[N][8], pay[N][100], tr[N][4], flat[112];
	struct mrc_dp_out out[N];
	for (int i = 0; i < N; i++) {
		memset(hdr[i], i, sizeof(hdr[i]));
		memset(pay[i], 0x80 + i, sizeof(pay[i]));
		memset(tr[i], 0xee, sizeof(tr[i]));
		size_t plen = i >= 70 && i < 73 ? 48 : 100;
		out[i] = (struct mrc_dp_out){ .plane = 0, .dport = i == 83 ? pc : pb,
			.dst = in6addr_loopback, .iovcnt = 3,
			.iov = { { hdr[i], 8 }, { pay[i], plen }, { tr[i], 4 } } };
	}
	memset(flat, 0, sizeof(flat));
	memset(flat, 5, 8);
	memset(flat + 8, 0x80 + 5, 100);
	memset(flat + 108, 0xee, 4);
	out[5].iovcnt = 1;
	out[5].iov[0] = (struct iovec){ flat, sizeof(flat) };
	assert_int_equal(mrc_dp_send(a, out, N), N);
	struct mrc_dp_stats st;
	mrc_dp_get_stats(a, &st);
	assert_int_equal(st.tx_pkts, N);
	assert_int_equal(st.tx_gso_fallbacks, 0);
	/* Everything but the lone one to c went in runs. */
	assert_int_equal(st.tx_gso_segs, N - 1);
	struct mrc_dp_in in[MRC_DP_BATCH];
	struct pollfd p = { .fd = mrc_dp_fd(b, 0), .events = POLLIN };
	int got = 0, n = 0;
	while (got < N - 1) {
		/* A full batch means "call again": the rest of a GRO buffer
		 * waits in the datapath, not on the descriptor. */
		if (n < MRC_DP_BATCH)
			assert_true(poll(&p, 1, 2000) == 1);   /* bounded wait for data */
		n = mrc_dp_recv(b, 0, in, MRC_DP_BATCH);
		assert_true(n >= 0);
		for (int k = 0; k < n; k++, got++) {
			int i = got < 83 ? got : got + 1;   /* 83 went to c */
			size_t plen = i >= 70 && i < 73 ? 48 : 100;
			assert_int_equal(in[k].len, 8 + plen + 4);
			assert_int_equal(in[k].buf[0], i);
			assert_int_equal(in[k].buf[7], i);
			assert_int_equal(in[k].buf[8], (uint8_t)(0x80 + i));
			assert_int_equal(in[k].buf[8 + plen - 1], (uint8_t)(0x80 + i));
			assert_int_equal(in[k].buf[in[k].len - 1], 0xee);
			assert_int_equal(in[k].sport, pa);
		}
	}
	assert_int_equal(got, N - 1);
	p.fd = mrc_dp_fd(c, 0);
	assert_true(poll(&p, 1, 2000) == 1);
	assert_int_equal(mrc_dp_recv(c, 0, in, MRC_DP_BATCH), 1);
	assert_int_equal(in[0].buf[0], 83);
	/* A bad value is refused, named. */
	struct mrc_dp *d;
	ca.args = "gso=maybe";
	assert_int_equal(mrc_dp_open(&d, "udp", &ca, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "gso="));
	mrc_dp_close(a);
	mrc_dp_close(b);
	mrc_dp_close(c);
}

/* A raw sender of UDP_SEGMENT messages on loopback, bound to port, with
 * traffic class tclass: what a peer's gso=on (or a NIC's GRO) hands a
 * receiver's socket in one buffer. */
static void send_gso(int fd, uint16_t dport, const uint8_t *buf, size_t len, uint16_t seg)
{
	struct sockaddr_in6 to = { .sin6_family = AF_INET6, .sin6_port = htons(dport),
		.sin6_addr = IN6ADDR_LOOPBACK_INIT };
	struct iovec iov = { (void *)buf, len };
	union {
		char b[CMSG_SPACE(sizeof(uint16_t))];
		struct cmsghdr align;
	} ctl;
	struct msghdr h = { .msg_name = &to, .msg_namelen = sizeof(to), .msg_iov = &iov,
		.msg_iovlen = 1, .msg_control = ctl.b, .msg_controllen = sizeof(ctl.b) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&h);
	c->cmsg_level = IPPROTO_UDP;
	c->cmsg_type = UDP_SEGMENT;
	c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
	memcpy(CMSG_DATA(c), &seg, sizeof(seg));
	assert_int_equal(sendmsg(fd, &h, 0), (ssize_t)len);
}

/* Byte j of datagram i of a test stream. */
static uint8_t pat(uint32_t i, uint32_t j)
{
	return (uint8_t)(i * 31 + j * 7 + (j >> 8));
}

struct want {
	uint32_t len, id;
	uint16_t sport;
	uint8_t ce;
};

/* Receives the datagrams w[0..n) from plane 0 of b, max at a time,
 * checking size, contents, source and CE mark of each, then that nothing
 * more comes. */
static void recv_expect(struct mrc_dp *b, const struct want *w, uint32_t n, uint32_t max)
{
	struct mrc_dp_in in[MRC_DP_BATCH];
	struct pollfd p = { .fd = mrc_dp_fd(b, 0), .events = POLLIN };
	uint32_t got = 0;
	int r = 0;
	while (got < n) {
		if (r < (int)max)
			assert_true(poll(&p, 1, 2000) == 1);   /* bounded wait for data */
		r = mrc_dp_recv(b, 0, in, max);
		assert_true(r >= 0 && r <= (int)max);
		for (int k = 0; k < r; k++, got++) {
			assert_true(got < n);
			const struct want *x = &w[got];
			if (in[k].len != x->len || in[k].sport != x->sport || in[k].ecn_ce != x->ce)
				fail_msg("datagram %u: len %zu sport %u ce %u, want %u %u %u", got,
					 in[k].len, in[k].sport, in[k].ecn_ce, x->len, x->sport, x->ce);
			for (uint32_t j = 0; j < x->len; j++)
				if (in[k].buf[j] != pat(x->id, j))
					fail_msg("datagram %u (id %u): byte %u is %u, want %u", got,
						 x->id, j, in[k].buf[j], pat(x->id, j));
			assert_memory_equal(&in[k].src, &in6addr_loopback, 16);
			assert_int_equal(in[k].plane, 0);
		}
	}
	assert_int_equal(got, n);
	assert_int_equal(mrc_dp_recv(b, 0, in, max), 0);
}

/* Fills a UDP_SEGMENT message of segments of seg bytes (the last total %
 * seg when not 0), datagram ids from id0, and the w[] it should become. */
static size_t gso_msg(uint8_t *buf, size_t total, uint16_t seg, uint32_t id0, uint16_t sport,
		      uint8_t ce, struct want *w, uint32_t *nw)
{
	for (size_t off = 0; off < total; off += seg) {
		uint32_t len = (uint32_t)(total - off < seg ? total - off : seg);
		uint32_t id = id0 + (uint32_t)(off / seg);
		for (uint32_t j = 0; j < len; j++)
			buf[off + j] = pat(id, j);
		w[(*nw)++] = (struct want){ len, id, sport, ce };
	}
	return total;
}

/* gro=on (the default): a UDP_SEGMENT message reaches the socket as one
 * buffer and comes up as its datagrams: sizes (a short last segment
 * included), contents, source address and port, and the CE mark of its
 * traffic class on every one; a buffer with more datagrams than the
 * caller's max is handed up over several calls; plain datagrams between
 * them come up as before.  Counted in rx_gro_segs. */
static void gro_split(void **state)
{
	(void)state;
	struct mrc_dp_plane pl = { .ifname = "", .local = IN6ADDR_LOOPBACK_INIT };
	struct mrc_dp *b;
	char why[256];
	uint16_t pb = (uint16_t)(base_port() + 10), pce = pb + 1, pect = pb + 2;
	struct mrc_dp_cfg cb = { .planes = &pl, .nplanes = 1, .port = pb };
	assert_int_equal(mrc_dp_open(&b, "udp", &cb, why, sizeof(why)), 0);
	int ce = tclass_sock(3, pce), ect = tclass_sock(2, pect);
	static uint8_t m1[4100], m2[70 * 300], m3[64 * 140 + 1];
	static struct want w[200];
	uint32_t nw = 0;
	/* 3 of 1200 and a short 500, CE */
	send_gso(ce, pb, m1, gso_msg(m1, sizeof(m1), 1200, 0, pce, 1, w, &nw), 1200);
	/* a plain datagram of 77, ECT(0) */
	uint8_t one[77];
	uint32_t ignore = 0;
	struct want w1[1];
	gso_msg(one, sizeof(one), 77, 10, pect, 0, w1, &ignore);
	w[nw++] = w1[0];
	struct sockaddr_in6 to = { .sin6_family = AF_INET6, .sin6_port = htons(pb),
		.sin6_addr = IN6ADDR_LOOPBACK_INIT };
	assert_int_equal(sendto(ect, one, sizeof(one), 0, (struct sockaddr *)&to, sizeof(to)),
			 (ssize_t)sizeof(one));
	/* 70 of 300, ECT(0): more than one call's max of 16 */
	send_gso(ect, pb, m2, gso_msg(m2, sizeof(m2), 300, 20, pect, 0, w, &nw), 300);
	recv_expect(b, w, nw, 16);
	struct mrc_dp_stats st;
	mrc_dp_get_stats(b, &st);
	assert_int_equal(st.rx_gro_fallbacks, 0);
	assert_int_equal(st.rx_gro_segs, 4 + 70);
	assert_int_equal(st.rx_pkts, 4 + 1 + 70);
	/* Again with the largest batch: 64 of 140 and a last of one byte
	 * (65 datagrams: one more than a call's max). */
	nw = 0;
	send_gso(ce, pb, m3, gso_msg(m3, sizeof(m3), 140, 100, pce, 1, w, &nw), 140);
	recv_expect(b, w, nw, MRC_DP_BATCH);
	mrc_dp_get_stats(b, &st);
	assert_int_equal(st.rx_gro_segs, 4 + 70 + 65);
	close(ce);
	close(ect);
	mrc_dp_close(b);
}

/* A kernel that refuses UDP_GRO (before 5.0): the plane opens anyway and
 * receives as before, one datagram per buffer (the kernel segments a
 * UDP_SEGMENT message before the socket); counted in rx_gro_fallbacks.
 * gro=off asks for the same without asking the kernel. */
static void gro_fallback(void **state)
{
	(void)state;
	struct mrc_dp_plane pl = { .ifname = "", .local = IN6ADDR_LOOPBACK_INIT };
	struct mrc_dp *b;
	char why[256];
	uint16_t pb = (uint16_t)(base_port() + 13), ps = pb + 1;
	struct mrc_dp_cfg cb = { .planes = &pl, .nplanes = 1, .port = pb };
	for (int mode = 0; mode < 2; mode++) {
		refuse_gro = mode == 0;
		refused_gro = 0;
		cb.args = mode == 0 ? "gro=on" : "gro=off";
		assert_int_equal(mrc_dp_open(&b, "udp", &cb, why, sizeof(why)), 0);
		refuse_gro = 0;
		assert_int_equal(refused_gro, mode == 0);   /* the fault was injected */
		int s = tclass_sock(2, ps);
		static uint8_t m[5 * 1000 + 10];
		static struct want w[8];
		uint32_t nw = 0;
		send_gso(s, pb, m, gso_msg(m, sizeof(m), 1000, 0, ps, 0, w, &nw), 1000);
		recv_expect(b, w, nw, MRC_DP_BATCH);
		struct mrc_dp_stats st;
		mrc_dp_get_stats(b, &st);
		assert_int_equal(st.rx_gro_fallbacks, mode == 0);
		assert_int_equal(st.rx_gro_segs, 0);
		assert_int_equal(st.rx_pkts, 6);
		close(s);
		mrc_dp_close(b);
	}
}

/* datapath_args words the provider does not know are refused, named (mrcd
 * then does not start); known ones with a bad value name their key. */
static void args_words(void **state)
{
	(void)state;
	struct mrc_dp_plane pl = { .ifname = "", .local = IN6ADDR_LOOPBACK_INIT };
	struct mrc_dp *d;
	char why[256];
	struct mrc_dp_cfg c = { .planes = &pl, .nplanes = 1, .port = (uint16_t)(base_port() + 15) };
	static const char *const bad[][2] = { { "gso=on,bogus", "'bogus'" },
		{ "gro=on gso=of", "gso=" }, { "gro=auto", "gro=" }, { "GSO=on", "'GSO=on'" },
		{ "gso=on,,gro", "'gro'" }, { "wait=poll", "'wait=poll'" } };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		c.args = bad[i][0];
		why[0] = 0;
		assert_int_equal(mrc_dp_open(&d, "udp", &c, why, sizeof(why)), -EINVAL);
		if (!strstr(why, bad[i][1]) || !strstr(why, "datapath_args"))
			fail_msg("'%s': '%s' does not name %s", bad[i][0], why, bad[i][1]);
	}
	static const char *const good[] = { "", "gso=on", "gso=off,gro=off", "gso=auto gro=on",
		" gro=on, gso=off " };
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		c.args = good[i];
		assert_int_equal(mrc_dp_open(&d, "udp", &c, why, sizeof(why)), 0);
		mrc_dp_close(d);
	}
}

/* Sends 3 same-size datagrams to dst on a plane bound to ifname with args;
 * returns how many went in UDP_SEGMENT runs, or -1. */
static int gso_segs_on(const char *ifname, const char *local, const char *dst, const char *args,
		       uint16_t port)
{
	struct mrc_dp_plane pl = { .ifname = "" };
	snprintf(pl.ifname, sizeof(pl.ifname), "%s", ifname);
	struct in6_addr to;
	if (inet_pton(AF_INET6, local, &pl.local) != 1 || inet_pton(AF_INET6, dst, &to) != 1)
		return -1;
	struct mrc_dp_cfg c = { .planes = &pl, .nplanes = 1, .port = port, .args = args };
	struct mrc_dp *d;
	char why[256];
	if (mrc_dp_open(&d, "udp", &c, why, sizeof(why)))
		return -1;
	static uint8_t b[100];
	struct mrc_dp_out o[3];
	for (int i = 0; i < 3; i++)
		o[i] = (struct mrc_dp_out){ .dst = to, .iovcnt = 1, .iov = { { b, sizeof(b) } } };
	struct mrc_dp_stats st;
	int rc = mrc_dp_send(d, o, 3);
	mrc_dp_get_stats(d, &st);
	mrc_dp_close(d);
	return rc == 3 ? (int)st.tx_gso_segs : -1;
}

/* gso=auto (the default) is off on a veth port, where a run would cross
 * the emulated fabric's per-packet fault rules as one packet, and on
 * elsewhere (loopback here); gso=on still turns it on on a veth.  Needs
 * root (a veth pair in a network namespace of its own); skipped without. */
static void gso_auto_veth(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (unshare(CLONE_NEWNET) ||
		    system("ip link set lo up && ip link add mrcva type veth peer name mrcvb && "
			   "ip link set mrcva up && ip link set mrcvb up && "
			   "ip -6 addr add fd00:1::1/64 dev mrcva nodad") != 0)
			_exit(77);
		uint16_t port = (uint16_t)(base_port() + 16);
		int veth_auto = gso_segs_on("mrcva", "fd00:1::1", "fd00:1::2", NULL, port);
		int veth_on = gso_segs_on("mrcva", "fd00:1::1", "fd00:1::2", "gso=on", port);
		int lo_auto = gso_segs_on("", "::1", "::1", "gso=auto", port);
		if (veth_auto != 0 || veth_on != 3 || lo_auto != 3) {
			fprintf(stderr, "tx_gso_segs: veth default %d (want 0), veth gso=on %d "
				"(want 3), loopback default %d (want 3)\n", veth_auto, veth_on, lo_auto);
			_exit(1);
		}
		_exit(0);
	}
	int ws;
	assert_int_equal(waitpid(pid, &ws, 0), pid);
	assert_true(WIFEXITED(ws));
	if (WEXITSTATUS(ws) == 77)
		skip();   /* no veth here (no ip, no namespace) */
	assert_int_equal(WEXITSTATUS(ws), 0);
}

static void open_errors(void **state)
{
	(void)state;
	struct mrc_dp *d;
	char why[256] = "";
	struct mrc_dp_plane pl = { .ifname = "nosuchif0", .local = IN6ADDR_LOOPBACK_INIT };
	struct mrc_dp_cfg c = { .planes = &pl, .nplanes = 1, .port = (uint16_t)(base_port() + 2) };
	int rc = mrc_dp_open(&d, "udp", &c, why, sizeof(why));
	assert_true(rc < 0);
	/* The message names the interface and the step that failed. */
	assert_non_null(strstr(why, "nosuchif0"));
	assert_non_null(strstr(why, "SO_BINDTODEVICE"));
	c.nplanes = 0;
	assert_int_equal(mrc_dp_open(&d, "udp", &c, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "planes must be"));
	c.nplanes = 17;
	assert_int_equal(mrc_dp_open(&d, "udp", &c, why, sizeof(why)), -EINVAL);
	/* An unknown provider is named, with the ones there are. */
	c.nplanes = 1;
	assert_int_equal(mrc_dp_open(&d, "token-ring", &c, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "unknown datapath 'token-ring'"));
	assert_non_null(strstr(why, "udp"));
	assert_null(mrc_dp_find("token-ring"));
	assert_ptr_equal(mrc_dp_find("udp"), &mrc__dp_udp_ops);
	assert_string_equal(mrc_dp_names()[0], "udp");
	/* Every provider is listed; one not built in says so at open. */
	for (const char *const *n = mrc_dp_names(); *n; n++) {
		const struct mrc_dp_ops *ops = mrc_dp_find(*n);
		assert_non_null(ops);
		if (ops->fd)
			continue;   /* built in */
		why[0] = 0;
		assert_int_equal(mrc_dp_open(&d, *n, &c, why, sizeof(why)), -EOPNOTSUPP);
		assert_non_null(strstr(why, "not built in"));
		assert_non_null(strstr(why, *n));
	}
}

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(batch_roundtrip),
		cmocka_unit_test(ecn_and_source_across_calls),
		cmocka_unit_test(open_errors),
		cmocka_unit_test(gso_runs),
		cmocka_unit_test(gro_split),
		cmocka_unit_test(gro_fallback),
		cmocka_unit_test(args_words),
		cmocka_unit_test(gso_auto_veth),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}

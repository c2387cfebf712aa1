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
#include <sys/socket.h>
#include <cmocka.h>

#include "datapath/datapath.h"

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

/* A plain socket on loopback with a given traffic class, bound to port. */
static int tclass_sock(int tclass, uint16_t port)
{
	int fd = socket(AF_INET6, SOCK_DGRAM, 0);
	assert_true(fd >= 0);
	assert_int_equal(setsockopt(fd, IPPROTO_IPV6, IPV6_TCLASS, &tclass, sizeof(tclass)), 0);
	struct sockaddr_in6 sa = { .sin6_family = AF_INET6, .sin6_port = htons(port),
		.sin6_addr = IN6ADDR_LOOPBACK_INIT };
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
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
	int got = 0;
	while (got < N - 1) {
		assert_true(poll(&p, 1, 2000) == 1);   /* bounded wait for data */
		int n = mrc_dp_recv(b, 0, in, MRC_DP_BATCH);
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
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}

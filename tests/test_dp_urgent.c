/* The udp datapath's urgent receive queue (mrc_dp_cfg.urgent_dscp,
 * datapath/udp_urgent.c), on loopback:
 *   urgent_ahead_of_backlog: a backlog of bulk datagrams (DSCP 10, more
 *     than a batch) waits in a plane, then one urgent datagram (DSCP 46)
 *     arrives: the next recv hands the urgent one up first, with its own
 *     source and port (the checks mrcd runs on every datagram see it as
 *     any other), and then the backlog in its order, nothing lost;
 *     rx_urgent counts it.  With one socket per plane (urgent_dscp 0, as
 *     before) it came last: the backlog's FIFO.  With gro on and off.
 *   urgent_wakes: only an urgent datagram waits: the plane's descriptor
 *     is readable (the loop would wake) and recv returns it.
 *   port_in_use: a second datapath on the same address and port is
 *     refused (EADDRINUSE), as with one socket per plane, rather than
 *     joining the first one's reuseport group.
 * Arrival is known, not waited for: the test runs on one CPU, so
 * loopback delivers in send order, and a fence datagram to a plain socket
 * sent after the rest has arrived only once they all have.  Ports come
 * from the seed (MRC_TEST_SEED replays; printed). */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <cmocka.h>

#include "datapath/datapath.h"
#include "tests/support/tclass_sock.h"

static unsigned seed;

static uint16_t port_base(void)
{
	return (uint16_t)(21000 + (seed % 9000) * 4);
}

static void send_to(int fd, uint16_t port, const void *buf, size_t len)
{
	struct sockaddr_in6 sa = { .sin6_family = AF_INET6, .sin6_port = htons(port),
		.sin6_addr = IN6ADDR_LOOPBACK_INIT };
	assert_int_equal(sendto(fd, buf, len, 0, (struct sockaddr *)&sa, sizeof(sa)), (ssize_t)len);
}

/* Waits (bounded) for the fence datagram: everything sent before it on
 * this CPU has been delivered. */
static void fence(int fsock, int tx, uint16_t fport)
{
	char b = 'F';
	send_to(tx, fport, &b, 1);
	struct pollfd p = { .fd = fsock, .events = POLLIN };
	assert_int_equal(poll(&p, 1, 10000), 1);
	assert_int_equal(recv(fsock, &b, 1, 0), 1);
}

static struct mrc_dp *open_rx(uint16_t port, uint8_t urgent, const char *args)
{
	static struct mrc_dp_plane pl = { .ifname = "", .local = IN6ADDR_LOOPBACK_INIT };
	struct mrc_dp_cfg c = { .planes = &pl, .nplanes = 1, .port = port, .args = args,
		.urgent_dscp = urgent };
	struct mrc_dp *dp;
	char why[256] = "";
	int rc = mrc_dp_open(&dp, "udp", &c, why, sizeof(why));
	if (rc)
		fprintf(stderr, "seed %u: open: %s\n", seed, why);
	assert_int_equal(rc, 0);
	return dp;
}

/* Where the urgent datagram (first byte 'U') came among the datagrams the
 * plane hands up, all of them read; bulk ones must come in order. */
static int urgent_position(struct mrc_dp *dp, uint16_t bulk_sport, uint16_t urg_sport, int nbulk)
{
	struct mrc_dp_in in[MRC_DP_BATCH];
	int pos = -1, seen = 0, next_bulk = 0, n;
	while ((n = mrc_dp_recv(dp, 0, in, MRC_DP_BATCH)) > 0)
		for (int k = 0; k < n; k++, seen++) {
			assert_memory_equal(&in[k].src, &in6addr_loopback, 16);
			if (in[k].buf[0] == 'U') {
				assert_int_equal(in[k].sport, urg_sport);
				assert_int_equal(in[k].len, 64);
				pos = seen;
				continue;
			}
			assert_int_equal(in[k].sport, bulk_sport);
			assert_int_equal(in[k].buf[0], 'B');
			assert_int_equal(in[k].buf[1], (uint8_t)next_bulk);
			next_bulk++;
		}
	assert_int_equal(n, 0);
	assert_int_equal(next_bulk, nbulk);   /* the backlog, nothing lost */
	return pos;
}

static int run_backlog(uint8_t urgent, const char *args, uint64_t *rx_urgent)
{
	uint16_t p = port_base();
	struct mrc_dp *dp = open_rx(p, urgent, args);
	int bulk = tclass_sock(10 << 2, (uint16_t)(p + 1)), urg = tclass_sock(46 << 2, (uint16_t)(p + 2));
	int fs = tclass_sock(0, (uint16_t)(p + 3));
	/* More than one batch, small enough for an unprivileged receive
	 * buffer (rmem_default) to hold them all. */
	enum { NB = MRC_DP_BATCH + 16 };
	uint8_t buf[64] = { 'B' };
	for (int i = 0; i < NB; i++) {
		buf[1] = (uint8_t)i;
		send_to(bulk, p, buf, sizeof(buf));
	}
	buf[0] = 'U';
	send_to(urg, p, buf, sizeof(buf));
	fence(fs, bulk, (uint16_t)(p + 3));
	int pos = urgent_position(dp, (uint16_t)(p + 1), (uint16_t)(p + 2), NB);
	struct mrc_dp_stats st;
	mrc_dp_get_stats(dp, &st);
	assert_int_equal(st.rx_pkts, NB + 1);
	assert_int_equal(st.rx_urgent_fallbacks, 0);
	*rx_urgent = st.rx_urgent;
	mrc_dp_close(dp);
	close(bulk);
	close(urg);
	close(fs);
	return pos;
}

static void urgent_ahead_of_backlog(void **state)
{
	(void)state;
	const char *args[] = { NULL, "gro=off" };
	for (int a = 0; a < 2; a++) {
		uint64_t ru;
		int pos = run_backlog(46, args[a], &ru);
		if (pos != 0)
			fprintf(stderr, "seed %u, %s: urgent datagram handed up %d-th\n", seed,
				args[a] ? args[a] : "gro=on", pos);
		assert_int_equal(pos, 0);
		assert_int_equal(ru, 1);
		/* One socket per plane: the urgent datagram waits behind all. */
		pos = run_backlog(0, args[a], &ru);
		assert_int_equal(pos, MRC_DP_BATCH + 16);
		assert_int_equal(ru, 0);
	}
}

static void urgent_wakes(void **state)
{
	(void)state;
	uint16_t p = port_base();
	struct mrc_dp *dp = open_rx(p, 46, NULL);
	int urg = tclass_sock(46 << 2 | 2, (uint16_t)(p + 2));   /* with ECT(0), as mrcd sends */
	struct mrc_dp_in in[MRC_DP_BATCH];
	assert_int_equal(mrc_dp_recv(dp, 0, in, MRC_DP_BATCH), 0);
	uint8_t buf[64] = { 'U' };
	send_to(urg, p, buf, sizeof(buf));
	struct pollfd pf = { .fd = mrc_dp_fd(dp, 0), .events = POLLIN };
	int r = poll(&pf, 1, 10000);
	if (r != 1)
		fprintf(stderr, "seed %u: plane descriptor not readable with an urgent datagram waiting\n", seed);
	assert_int_equal(r, 1);
	assert_int_equal(mrc_dp_recv(dp, 0, in, MRC_DP_BATCH), 1);
	assert_int_equal(in[0].buf[0], 'U');
	struct mrc_dp_stats st;
	mrc_dp_get_stats(dp, &st);
	assert_int_equal(st.rx_urgent, 1);
	mrc_dp_close(dp);
	close(urg);
}

static void port_in_use(void **state)
{
	(void)state;
	uint16_t p = port_base();
	struct mrc_dp *dp = open_rx(p, 46, NULL), *two;
	static struct mrc_dp_plane pl = { .ifname = "", .local = IN6ADDR_LOOPBACK_INIT };
	char why[256] = "";
	for (int u = 0; u < 2; u++) {
		struct mrc_dp_cfg c = { .planes = &pl, .nplanes = 1, .port = p, .urgent_dscp = u ? 46 : 0 };
		assert_int_equal(mrc_dp_open(&two, "udp", &c, why, sizeof(why)), -EADDRINUSE);
	}
	mrc_dp_close(dp);
}

int main(void)
{
	const char *e = getenv("MRC_TEST_SEED");
	seed = e ? (unsigned)strtoul(e, NULL, 10) : (unsigned)getpid();
	printf("test_dp_urgent: seed %u (MRC_TEST_SEED replays)\n", seed);
	/* One CPU: loopback then delivers in send order (the fence). */
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu() < 0 ? 0 : sched_getcpu(), &one);
	sched_setaffinity(0, sizeof(one), &one);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(urgent_ahead_of_backlog),
		cmocka_unit_test(urgent_wakes),
		cmocka_unit_test(port_in_use),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

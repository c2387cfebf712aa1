/* Loopback mode's datagrams to the daemon itself go in-process
 * (daemon/core/local.c, node.c self_inproc; docs/client.md "Clients of
 * one mrcd"), on a real loopback mrcd:
 *   inproc: a 16 MiB WRITE between two QPs of one client, checked byte
 *     for byte, is carried by local.c (stats daemon.local_tx grows by at
 *     least its data packets, none dropped) and the udp datapath moves
 *     no datagram at all (datapath.tx_pkts, rx_pkts unchanged: not the
 *     data, nor its ACKs, nor the CTRL of a listen/connect pair);
 *   kernel_when_off: loopback_inproc=0 puts the same WRITE through lo
 *     (datapath.tx_pkts grows by at least its packets, local_tx stays 0):
 *     the counters above mean what the first test reads them for;
 *   forged_still_dropped: with in-process delivery on, the plane socket
 *     is still read: a datagram from a port that is not the MRC port is
 *     counted (datapath.rx_pkts) and dropped (daemon.rx_bad_sport), and
 *     the daemon keeps serving.
 *   by_reference: the data packets' payloads of that WRITE are handed
 *     over by reference, not copied into local.c's queue (local_ref grows
 *     by at least its packets);
 *   unmap_in_flight: a client posts a 16 MiB WRITE and dies at once, until
 *     its memory was unmapped while datagrams pointing into it were still
 *     queued (at most ROUNDS times; local_unref grows: the case happened):
 *     they got their own copy first, and the daemon keeps serving (a
 *     checked WRITE after).
 * The pattern is seeded (printed; MRC_SEED to repeat). */
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <sys/wait.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/prng.h"
#include "mrc/mrc.h"
#include "tests/support/get1.h"
#include "tests/support/mrcd_one.h"
#include "tests/support/qp_pair.h"
#include "tests/support/skip.h"

static uint64_t seed;

/* One counter of the daemon's stats (operator socket): SECTION.KEY. */
static long long stat_of(const struct mrcd_proc *d, const char *sec, const char *key)
{
	json_t *j = one_stats(d);
	json_t *r = json_object_get(j, "result");
	json_t *v = json_object_get(json_object_get(r ? r : j, sec), key);
	if (!json_is_integer(v))
		fail_msg("stats %s.%s: not in the reply", sec, key);
	long long x = json_integer_value(v);
	json_decref(j);
	return x;
}

struct counts {
	long long local_tx, local_drop, dp_tx, dp_rx;
};

static struct counts counts(const struct mrcd_proc *d)
{
	return (struct counts){ stat_of(d, "daemon", "local_tx"),
		stat_of(d, "daemon", "local_drop"), stat_of(d, "datapath", "tx_pkts"),
		stat_of(d, "datapath", "rx_pkts") };
}

/* One WRITE of len from src to dst on qp, checked byte for byte. */
static void write_checked(struct mrc_qp *qp, struct mrc_mr *src, struct mrc_mr *dst,
			  uint64_t len)
{
	qp_pair_fill(mrc_mr_addr(src), len, seed);
	memset(mrc_mr_addr(dst), 0, len);
	assert_int_equal(mrc_post_write(qp, 1, mrc_mr_key(src), 0, len, mrc_mr_key(dst), 0), 0);
	struct mrc_completion c = mrcd_get1(qp);
	assert_int_equal(c.status, 0);
	assert_int_equal(c.wr_id, 1);
	if (memcmp(mrc_mr_addr(src), mrc_mr_addr(dst), len))
		fail_msg("seed %llu: the target differs", (unsigned long long)seed);
}

static int start(struct mrcd_proc *d, const char *a1)
{
	const char *argv[] = { a1, NULL };
	return one_start(d, argv);
}

#define LEN (16ull << 20)
#define PKTS (LEN / 8192)   /* local_mtu's data packets */

/* A QP pair connected through the connection manager, then a WRITE on it. */
static void cm_pair_write(const struct mrcd_proc *d)
{
	struct cm_pair p;
	cm_pair_open(d, &p, 4546, 1 << 20);
	write_checked(p.qp, p.src, p.dst, 1 << 20);
	cm_pair_close(&p);
}

static void test_inproc(void **state)
{
	(void)state;
	static struct mrcd_proc d;   /* outlives a failed test: teardown */
	ONE_NEED(start(&d, NULL));
	struct counts c0 = counts(&d);
	struct qp_pair p;
	qp_pair_open(&d, &p, LEN);
	write_checked(p.a, p.src, p.dst, LEN);
	cm_pair_write(&d);
	struct counts c1 = counts(&d);
	long long ref = stat_of(&d, "daemon", "local_ref");
	print_message("seed %llu: local_tx %lld (by reference %lld), datapath tx %lld rx %lld\n",
		      (unsigned long long)seed, c1.local_tx - c0.local_tx, ref, c1.dp_tx - c0.dp_tx,
		      c1.dp_rx - c0.dp_rx);
	assert_true(c1.local_tx - c0.local_tx >= (long long)PKTS);
	assert_true(ref >= (long long)PKTS);
	assert_int_equal(c1.local_drop, c0.local_drop);
	assert_int_equal(c1.dp_tx, c0.dp_tx);
	assert_int_equal(c1.dp_rx, c0.dp_rx);
	mrc_close(p.ctx);
	one_stop(&d);
}

static void test_kernel_when_off(void **state)
{
	(void)state;
	static struct mrcd_proc d;   /* outlives a failed test: teardown */
	ONE_NEED(start(&d, "--loopback_inproc=0"));
	struct counts c0 = counts(&d);
	struct qp_pair p;
	qp_pair_open(&d, &p, LEN);
	write_checked(p.a, p.src, p.dst, LEN);
	struct counts c1 = counts(&d);
	assert_int_equal(c1.local_tx, 0);
	assert_true(c1.dp_tx - c0.dp_tx >= (long long)PKTS);
	assert_true(c1.dp_rx - c0.dp_rx >= (long long)PKTS);
	mrc_close(p.ctx);
	one_stop(&d);
}

struct bad_wait {
	const struct mrcd_proc *d;
	long long bad0;
};
static int bad_moved(void *arg)
{
	struct bad_wait *w = arg;
	return stat_of(w->d, "daemon", "rx_bad_sport") != w->bad0;
}

static void test_forged_still_dropped(void **state)
{
	(void)state;
	static struct mrcd_proc d;   /* outlives a failed test: teardown */
	ONE_NEED(start(&d, NULL));
	long long bad0 = stat_of(&d, "daemon", "rx_bad_sport");
	struct counts c0 = counts(&d);
	int s = socket(AF_INET6, SOCK_DGRAM, 0);
	assert_true(s >= 0);
	struct sockaddr_in6 to = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT,
		.sin6_port = htons((uint16_t)d.port) };
	uint64_t junk[8];   /* 64 bytes, aligned for qp_pair_fill */
	qp_pair_fill(junk, sizeof(junk), seed);
	assert_int_equal(sendto(s, junk, sizeof(junk), 0, (struct sockaddr *)&to, sizeof(to)),
			 (ssize_t)sizeof(junk));
	close(s);
	struct bad_wait w = { &d, bad0 };
	assert_int_equal(mrcd_spawn_wait_for(bad_moved, &w, MRCD_SPAWN_WAIT_MS), 0);
	assert_int_equal(stat_of(&d, "daemon", "rx_bad_sport"), bad0 + 1);
	assert_int_equal(counts(&d).dp_rx, c0.dp_rx + 1);
	struct qp_pair p;
	qp_pair_open(&d, &p, 1 << 20);
	write_checked(p.a, p.src, p.dst, 1 << 20);
	mrc_close(p.ctx);
	one_stop(&d);
}

#define ROUNDS 100

/* A client that WRITEs 16 MiB into qp b's client's dst and dies at once
 * (no close: its socket hangs up).  When mrcd has sent a window of it by
 * then, local.c holds more datagrams than one turn delivers (LOCAL_TURN),
 * and the hang-up unmaps the source between two turns; the target stays
 * alive, so what is still queued is placed. */
static void die_writing(struct mrcd_proc *d, struct mrc_qp *b, struct mrc_mr *dst)
{
	int up[2], down[2];
	assert_int_equal(pipe(up), 0);
	assert_int_equal(pipe(down), 0);
	struct mrc_qp_addr lb, la;
	assert_int_equal(mrc_qp_info_get(b, &lb), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct mrc_ctx *ctx;
		struct mrc_mr *src;
		struct mrc_qp *a;
		char x;
		if (mrc_open(d->sock, &ctx) || mrc_alloc_mr(ctx, LEN, MRC_MR_LOCAL_READ, &src) ||
		    mrc_create_qp(ctx, NULL, &a) || mrc_qp_info_get(a, &la) ||
		    mrc_connect_oob(a, &lb) ||
		    write(up[1], &la, sizeof(la)) != (ssize_t)sizeof(la) || read(down[0], &x, 1) != 1)
			_exit(1);
		_exit(mrc_post_write(a, 1, mrc_mr_key(src), 0, LEN, mrc_mr_key(dst), 0) ? 2 : 0);
	}
	assert_int_equal(read(up[0], &la, sizeof(la)), (ssize_t)sizeof(la));
	assert_int_equal(mrc_connect_oob(b, &la), 0);
	char x = 0;
	assert_int_equal(write(down[1], &x, 1), 1);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	for (int i = 0; i < 2; i++) {
		close(up[i]);
		close(down[i]);
	}
}

static void test_unmap_in_flight(void **state)
{
	(void)state;
	static struct mrcd_proc d;   /* outlives a failed test: teardown */
	ONE_NEED(start(&d, NULL));
	long long u0 = stat_of(&d, "daemon", "local_unref"), u = u0;
	struct mrc_ctx *ctx;
	struct mrc_mr *dst;
	assert_int_equal(mrc_open(d.sock, &ctx), 0);
	assert_int_equal(mrc_alloc_mr(ctx, LEN, MRC_MR_ALL, &dst), 0);
	int r;
	for (r = 0; r < ROUNDS && u == u0; r++) {
		struct mrc_qp *b;
		assert_int_equal(mrc_create_qp(ctx, NULL, &b), 0);
		die_writing(&d, b, dst);
		u = stat_of(&d, "daemon", "local_unref");
		mrc_destroy_qp(b);
	}
	mrc_close(ctx);
	print_message("seed %llu: %d rounds, %lld queued payloads copied before an unmap\n",
		      (unsigned long long)seed, r, u - u0);
	assert_true(u > u0);
	struct qp_pair p;
	qp_pair_open(&d, &p, 1 << 20);
	write_checked(p.a, p.src, p.dst, 1 << 20);
	mrc_close(p.ctx);
	one_stop(&d);
}

int main(void)
{
	seed = getenv("MRC_SEED") ? strtoull(getenv("MRC_SEED"), NULL, 0) : (uint64_t)time(NULL);
	printf("test_local_inproc: seed %llu (MRC_SEED to repeat)\n", (unsigned long long)seed);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_inproc, one_teardown),
		cmocka_unit_test_teardown(test_kernel_when_off, one_teardown),
		cmocka_unit_test_teardown(test_forged_still_dropped, one_teardown),
		cmocka_unit_test_teardown(test_unmap_in_flight, one_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* mrcd's limits against a real loopback daemon (tests/support/mrcd_spawn):
 *   - readers that stop reading (a metrics HTTP client, an `events -f`
 *     follower, an mrcctl client pipelining requests) do not delay a
 *     ping-pong through the daemon: median round trip within 1 ms of the
 *     same run without them, no single round trip stalled;
 *   - one uid hits each per-uid limit (clients, QPs, regions, memory);
 *   - service ids belong to the uid that listens first, and reservations
 *     (needs root to act as a second uid; skipped otherwise).
 * Skipped when build/bin/mrcd has not been built. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "mrc/error.h"
#include "mrc/mrc.h"
#include "tests/support/mrcd_spawn.h"
#include "tests/support/qp_pair.h"
#include "tests/support/skip.h"

#define NEED_DAEMON() do { if (!mrcd_spawn_available()) \
	MRC_SKIP("%s is not built", mrcd_spawn_bin()); } while (0)

/* ---- ping-pong -------------------------------------------------------- */


/* One round trip: a WRITE through the daemon's engine and its ACK back. */
static int64_t pp_once(struct qp_pair *p, uint64_t id)
{
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(mrc_post_write(p->a, id, mrc_mr_key(p->src), 0, 64, mrc_mr_key(p->dst), 0), 0);
	struct mrc_completion c;
	int64_t end = mrcd_spawn_now_ms() + MRCD_SPAWN_WAIT_MS;
	while (mrc_poll_cq(p->a, &c, 1) != 1) {
		if (mrcd_spawn_now_ms() >= end) {
			printf("round trip %llu: no completion in %d ms\n", (unsigned long long)id,
			       MRCD_SPAWN_WAIT_MS);
			fail();
		}
		int r = mrc_wait(p->a, 100);
		assert_true(r == 0 || r == -ETIMEDOUT);
	}
	assert_int_equal(c.status, 0);
	assert_int_equal(c.wr_id, id);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (int64_t)(t1.tv_sec - t0.tv_sec) * 1000000000 + (t1.tv_nsec - t0.tv_nsec);
}

static int cmp64(const void *x, const void *y)
{
	int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
	return a < b ? -1 : a > b;
}

#define PP_N 2000

/* Runs PP_N round trips; fills median and max (ns). */
static void pp_run(struct qp_pair *p, int64_t *median, int64_t *max)
{
	static int64_t s[PP_N];
	static uint64_t id;
	for (int i = 0; i < 100; i++)      /* warm up */
		pp_once(p, ++id);
	for (int i = 0; i < PP_N; i++)
		s[i] = pp_once(p, ++id);
	qsort(s, PP_N, sizeof(s[0]), cmp64);
	*median = s[PP_N / 2];
	*max = s[PP_N - 1];
}

/* ---- readers that stop reading ---------------------------------------- */

static int oper_connect(struct mrcd_proc *d)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", d->ctl);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

static int metrics_connect(unsigned port, int rcvbuf)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

/* One request on a fresh operator connection; the reply (bounded wait). */
static void oper_call(struct mrcd_proc *d, const char *req, char *rep, size_t len)
{
	int fd = oper_connect(d);
	assert_int_equal(send(fd, req, strlen(req), 0), (ssize_t)strlen(req));
	struct pollfd pf = { .fd = fd, .events = POLLIN };
	assert_int_equal(poll(&pf, 1, 5000), 1);
	ssize_t n = recv(fd, rep, len - 1, 0);
	assert_true(n > 0);
	rep[n] = 0;
	close(fd);
}

#define N_GET 4        /* metrics clients that ask and never read */
#define N_SILENT 8     /* that connect and say nothing (each holds a slot 5 s) */
#define N_EXTRA 8      /* beyond metrics_max_conns = N_GET + N_SILENT */
#define N_METRICS (N_GET + N_SILENT + N_EXTRA)
/* Sends stats requests and never reads a reply, for as long as the
 * ping-pong runs: the daemon's replies fill the socket (512 records), and
 * the old daemon then waited 2 x 1 s per reply with its loop frozen. */
struct piper {
	int fd;
	volatile int stop;
	int sent;
};

static void *piper_main(void *arg)
{
	struct piper *pp = arg;
	while (!pp->stop) {
		char rq[96];
		int n = snprintf(rq, sizeof(rq), "{\"v\":1,\"id\":%d,\"verb\":\"stats\"}", pp->sent + 2);
		if (send(pp->fd, rq, (size_t)n, MSG_DONTWAIT) == n) {
			pp->sent++;
			continue;
		}
		struct pollfd pf = { .fd = pp->fd, .events = POLLOUT };
		poll(&pf, 1, 10);
	}
	return NULL;
}

/* The test's daemon, stopped by the teardown even when an assertion failed. */
static struct mrcd_proc d;

static int stop_daemon(void **state)
{
	mrcd_spawn_stop(&d);
	return 0;
}

static void test_loop_never_blocks(void **state)
{
	NEED_DAEMON();
	const char *argv[] = { "--metrics_listen=auto", "--metrics_max_conns=12", NULL };
	assert_int_equal(mrcd_spawn_start(&d, argv), 0);
	unsigned mport = d.port + 1;
	struct qp_pair p;
	qp_pair_open(&d, &p, 4096);

	int64_t med0, max0, med1, max1;
	printf("baseline run\n");
	pp_run(&p, &med0, &max0);
	printf("baseline: median %.1f us, max %.1f us\n", med0 / 1e3, max0 / 1e3);

	/* Metrics clients with tiny receive buffers that ask and never read. */
	int mfd[N_METRICS];
	const char *get = "GET /metrics HTTP/1.0\r\n\r\n";
	for (int i = 0; i < N_METRICS; i++) {
		mfd[i] = metrics_connect(mport, 1024);
		if (i < N_GET)
			send(mfd[i], get, strlen(get), MSG_NOSIGNAL);
	}
	/* An events -f follower that never reads. */
	int fol = oper_connect(&d);
	const char *ev = "{\"v\":1,\"id\":1,\"verb\":\"events\",\"follow\":true,\"last\":100}";
	assert_int_equal(send(fol, ev, strlen(ev), 0), (ssize_t)strlen(ev));
	/* A client that sends many requests and never reads a reply: the
	 * replies fill its socket (the old daemon then waited 2 s each). */
	struct piper pip = { .fd = oper_connect(&d) };
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, piper_main, &pip), 0);
	/* Events for the follower while it does not read: clients come and go. */
	for (int i = 0; i < 50; i++) {
		struct mrc_ctx *c;
		assert_int_equal(mrc_open(d.sock, &c), 0);
		mrc_close(c);
	}

	pp_run(&p, &med1, &max1);
	pip.stop = 1;
	pthread_join(th, NULL);
	int sent = pip.sent;
	printf("ping-pong %d round trips: median %.1f us, max %.1f us without stalled readers; "
	       "median %.1f us, max %.1f us with %d metrics clients (%d asking), a follower and %d requests whose replies are unread\n",
	       PP_N, med0 / 1e3, max0 / 1e3, med1 / 1e3, max1 / 1e3, N_METRICS, N_GET, sent);
	assert_true(med1 - med0 <= 1000000);      /* median delayed by at most 1 ms */
	/* No stall: the old daemon blocked 1-2 s per reply; 500 ms still
	 * catches one while leaving room for a test process descheduled on a
	 * busy 2-core machine (200 ms was seen to be close under load 8).  The
	 * bound grows with the baseline's own worst round trip, measured in
	 * this run: at load 30 a baseline max of 212 ms and 2.8 s with the
	 * stalled readers were both descheduling, not a blocked loop. */
	double bound = 500000000.0 + 4.0 * max0;
	if (max1 >= bound)
		fail_msg("a round trip took %.1f ms with stalled readers (baseline max %.1f ms, bound %.1f ms)",
			 max1 / 1e6, max0 / 1e6, bound / 1e6);

	/* The daemon still answers, and counted the refused metrics clients. */
	char rep[1 << 16];
	oper_call(&d, "{\"v\":1,\"id\":9,\"verb\":\"stats\"}", rep, sizeof(rep));
	char *m = strstr(rep, "\"metrics_refused\":");
	char *e = strstr(rep, "\"metrics_evicted\":");
	assert_non_null(m);
	assert_non_null(e);
	/* a GET client served in full frees its slot for one of the extra;
	 * the others are refused, or (since idle connections give way to new
	 * ones) close a silent one to get in */
	assert_true(strtol(m + strlen("\"metrics_refused\":"), NULL, 10) +
		    strtol(e + strlen("\"metrics_evicted\":"), NULL, 10) >= N_EXTRA - N_GET);

	for (int i = 0; i < N_METRICS; i++)
		close(mfd[i]);
	close(fol);
	close(pip.fd);
	mrc_close(p.ctx);
	mrcd_spawn_stop(&d);
}

/* ---- per-uid limits --------------------------------------------------- */

static void test_uid_limits(void **state)
{
	NEED_DAEMON();
	const char *argv[] = { "--uid_max_clients=2", "--uid_max_qps=3", "--uid_max_mrs=3",
			       "--uid_max_mem_mb=2", NULL };
	assert_int_equal(mrcd_spawn_start(&d, argv), 0);
	struct mrc_ctx *c1, *c2, *c3;
	assert_int_equal(mrc_open(d.sock, &c1), 0);
	/* mrcd_spawn_start's readiness probe was a client of this uid too;
	 * mrcd counts it until it has read the probe's hang-up, which a
	 * loaded machine may leave for after this open: retry that refusal
	 * only, for at most 5 s. */
	int rc2;
	int64_t probe_gone = mrcd_spawn_now_ms() + 5000;
	while ((rc2 = mrc_open(d.sock, &c2)) == -EUSERS && mrcd_spawn_now_ms() < probe_gone)
		poll(NULL, 0, 5);
	assert_int_equal(rc2, 0);
	/* clients: a third of the same uid is refused */
	assert_int_equal(mrc_open(d.sock, &c3), -EUSERS);
	assert_non_null(strstr(mrc_strerror(-EUSERS), "user"));
	struct mrc_ctx_info info;
	assert_int_equal(mrc_ctx_info(c1, &info), 0);
	assert_int_equal(info.max_qps, 3);
	assert_int_equal(info.max_mrs, 3);

	/* QPs: 3 over both clients */
	struct mrc_qp *q[4];
	assert_int_equal(mrc_create_qp(c1, NULL, &q[0]), 0);
	assert_int_equal(mrc_create_qp(c1, NULL, &q[1]), 0);
	assert_int_equal(mrc_create_qp(c2, NULL, &q[2]), 0);
	assert_int_equal(mrc_create_qp(c2, NULL, &q[3]), -EDQUOT);
	assert_non_null(strstr(mrc_last_error(c2), "uid_max_qps"));
	assert_int_equal(mrc_destroy_qp(q[0]), 0);
	assert_int_equal(mrc_create_qp(c2, NULL, &q[3]), 0);   /* a share came back */

	/* regions: 3 over both clients */
	struct mrc_mr *r[4];
	assert_int_equal(mrc_alloc_mr(c1, 4096, MRC_MR_ALL, &r[0]), 0);
	assert_int_equal(mrc_alloc_mr(c2, 4096, MRC_MR_ALL, &r[1]), 0);
	assert_int_equal(mrc_alloc_mr(c2, 4096, MRC_MR_ALL, &r[2]), 0);
	assert_int_equal(mrc_alloc_mr(c1, 4096, MRC_MR_ALL, &r[3]), -EDQUOT);
	assert_non_null(strstr(mrc_last_error(c1), "uid_max_mrs"));
	assert_int_equal(mrc_dereg_mr(r[1]), 0);
	assert_int_equal(mrc_dereg_mr(r[2]), 0);

	/* memory: 2 MiB over both clients (4 KiB already in r[0]) */
	assert_int_equal(mrc_alloc_mr(c2, 1u << 20, MRC_MR_ALL, &r[1]), 0);
	assert_int_equal(mrc_alloc_mr(c1, 1u << 20, MRC_MR_ALL, &r[2]), -EDQUOT);
	assert_non_null(strstr(mrc_last_error(c1), "uid_max_mem_mb"));
	assert_non_null(strstr(mrc_strerror(-EDQUOT), "user"));

	/* a client that goes gives its user's shares back */
	mrc_close(c2);
	int64_t end = mrcd_spawn_now_ms() + MRCD_SPAWN_WAIT_MS;
	int rc;
	while ((rc = mrc_open(d.sock, &c3)) == -EUSERS && mrcd_spawn_now_ms() < end)
		poll(NULL, 0, 5);
	assert_int_equal(rc, 0);
	assert_int_equal(mrc_alloc_mr(c3, 1u << 20, MRC_MR_ALL, &r[2]), 0);
	mrc_close(c3);
	mrc_close(c1);
	mrcd_spawn_stop(&d);
}

/* ---- service id ownership --------------------------------------------- */

#define OTHER_UID 65534

/* In a child as OTHER_UID: listens on sid and reports the result; with
 * hold, keeps its listener until the returned fd is closed (else -1). */
static int other_listen(struct mrcd_proc *dp, uint32_t sid, int *res, pid_t *pid, int hold)
{
	int p[2], q[2];
	assert_int_equal(pipe(p), 0);
	assert_int_equal(pipe(q), 0);
	*pid = fork();
	assert_true(*pid >= 0);
	if (*pid == 0) {
		gid_t g = OTHER_UID;
		close(p[0]);
		close(q[1]);
		if (setgroups(1, &g) || setgid(g) || setuid(OTHER_UID))
			_exit(2);
		struct mrc_ctx *c;
		int r = mrc_open(dp->sock, &c);
		if (!r)
			r = mrc_listen(c, sid, 4);
		if (write(p[1], &r, sizeof(r)) != sizeof(r))
			_exit(3);
		char b;
		while (hold && read(q[0], &b, 1) > 0)
			;
		_exit(0);
	}
	close(p[1]);
	close(q[0]);
	assert_int_equal(read(p[0], res, sizeof(*res)), sizeof(*res));
	close(p[0]);
	if (hold)
		return q[1];
	close(q[1]);
	waitpid(*pid, NULL, 0);
	return -1;
}

static void test_sid_ownership(void **state)
{
	NEED_DAEMON();
	if (geteuid())
		MRC_SKIP("acting as a second uid needs root");
	char res[64];
	snprintf(res, sizeof(res), "--service_reserve=600-610:%u", OTHER_UID);
	const char *argv[] = { res, "--socket_group=nogroup", NULL };
	assert_int_equal(mrcd_spawn_start(&d, argv), 0);
	chmod(d.dir, 0711);   /* the other uid reaches the socket, not the directory's list */
	struct mrc_ctx *c;
	assert_int_equal(mrc_open(d.sock, &c), 0);

	/* root listens first on 500: the other uid is refused */
	int r;
	pid_t pid;
	assert_int_equal(mrc_listen(c, 500, 4), 0);
	other_listen(&d, 500, &r, &pid, 0);
	assert_int_equal(r, -EADDRINUSE);
	assert_non_null(strstr(mrc_strerror(-EADDRINUSE), "another user"));
	/* once root's listener is gone the id is free for anyone */
	assert_int_equal(mrc_unlisten(c, 500), 0);
	other_listen(&d, 500, &r, &pid, 0);
	assert_int_equal(r, 0);

	/* the other uid listens first on 501 and holds it: root is refused */
	int rel = other_listen(&d, 501, &r, &pid, 1);
	assert_int_equal(r, 0);
	assert_int_equal(mrc_listen(c, 501, 4), -EADDRINUSE);
	assert_non_null(strstr(mrc_last_error(c), "owned by uid 65534"));
	close(rel);
	waitpid(pid, NULL, 0);          /* it exits: its listener goes with its client */
	int64_t end = mrcd_spawn_now_ms() + MRCD_SPAWN_WAIT_MS;
	while ((r = mrc_listen(c, 501, 4)) == -EADDRINUSE && mrcd_spawn_now_ms() < end)
		poll(NULL, 0, 5);
	assert_int_equal(r, 0);

	/* 600-610 are reserved for the other uid: root may not, it may */
	assert_int_equal(mrc_listen(c, 605, 4), -EADDRINUSE);
	assert_non_null(strstr(mrc_last_error(c), "reserved for uid 65534"));
	other_listen(&d, 605, &r, &pid, 0);
	assert_int_equal(r, 0);
	mrc_close(c);
	mrcd_spawn_stop(&d);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_loop_never_blocks, stop_daemon),
		cmocka_unit_test_teardown(test_uid_limits, stop_daemon),
		cmocka_unit_test_teardown(test_sid_ownership, stop_daemon),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

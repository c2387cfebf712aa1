/* mrcd's local sockets under misuse by local users (docs/security.md
 * "Local users: limits and ownership", docs/ctl.md), against a real
 * loopback daemon (tests/support/mrcd_spawn):
 *   - test_pending_cap: one uid's idle client connections (no HELLO) are
 *     capped (uid_max_pending); the rest are answered and closed at once,
 *     never counted against max_clients, so another uid's first client
 *     gets in; idle ones are closed after client_hello_timeout_ms;
 *   - test_ctl_admin_slot: a non-admin uid that fills ctl_max_conns does
 *     not lock root out (ctl_admin_reserve), refusals are closed at once;
 *   - test_ctl_uid_cap: one non-admin uid holds at most ctl_uid_max_conns,
 *     so another uid still gets a connection;
 *   - test_ctl_peergroups: group membership comes from the socket
 *     (SO_PEERGROUPS), not from NSS on the loop;
 *   - test_idle_timeouts: idle mrcctl connections close after
 *     ctl_idle_timeout_ms (followers do not), metrics connections after
 *     metrics_idle_timeout_ms;
 *   - test_metrics_evict: idle metrics connections holding every slot are
 *     closed to make room for a scraper instead of refusing it;
 *   - test_fd_limit: at the descriptor limit the daemon pauses accept: no
 *     spinning (CPU time bounded), a bounded log, and it recovers once
 *     descriptors are free.
 * The tests that act as a second uid need root (skipped otherwise).
 * Skipped when build/bin/mrcd has not been built. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <dirent.h>

#include "codec/climsg.h"
#include "mrc/mrc.h"
#include "tests/support/mrcd_spawn.h"
#include "tests/support/skip.h"

#define NEED_DAEMON() do { if (!mrcd_spawn_available()) \
	MRC_SKIP("%s is not built", mrcd_spawn_bin()); } while (0)
#define NEED_ROOT() do { if (geteuid()) \
	MRC_SKIP("acting as a second uid needs root"); } while (0)

#define OTHER_UID 65534     /* nobody, in group nogroup (65534) */
#define THIRD_UID 65533     /* a uid with no account: only its gid counts */
#define NOGROUP 65534

static struct mrcd_proc d;
static char logp[64];    /* test_fd_limit's daemon log, removed by the teardown */

static int stop_daemon(void **state)
{
	(void)state;
	mrcd_spawn_stop(&d);
	if (logp[0])
		unlink(logp);
	logp[0] = 0;
	return 0;
}

/* ---- helpers ------------------------------------------------------------ */

/* Reads until EOF (bounded): 0 at EOF, -ETIMEDOUT; the first message read
 * goes to first (NUL-terminated, may be empty). */
static int wait_eof(int fd, int ms, char *first, size_t len)
{
	int64_t end = mrcd_spawn_now_ms() + ms;
	int got = 0;
	if (first && len)
		first[0] = 0;
	for (;;) {
		int left = (int)(end - mrcd_spawn_now_ms());
		if (left < 0)
			return -ETIMEDOUT;
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		if (poll(&pf, 1, left) == 0)
			return -ETIMEDOUT;
		char buf[1 << 16];
		ssize_t n = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno == ECONNRESET))
			return 0;
		if (n > 0 && !got++ && first && len) {
			size_t k = (size_t)n < len - 1 ? (size_t)n : len - 1;
			memcpy(first, buf, k);
			first[k] = 0;
		}
	}
}

/* Whether a connection is still open (not at EOF), without waiting. */
static int still_open(int fd)
{
	struct pollfd pf = { .fd = fd, .events = POLLIN | POLLRDHUP };
	return poll(&pf, 1, 0) == 0;
}

/* One request on an operator connection; the reply (bounded wait). */
static int oper_req(int fd, const char *req, char *rep, size_t len)
{
	/* A refused connection is answered and closed at accept, maybe before
	 * this send: the answer is still queued (mrcctl reads it too). */
	if (send(fd, req, strlen(req), MSG_NOSIGNAL) != (ssize_t)strlen(req) && errno != EPIPE)
		return -errno;
	struct pollfd pf = { .fd = fd, .events = POLLIN };
	if (poll(&pf, 1, MRCD_SPAWN_WAIT_MS) != 1)
		return -ETIMEDOUT;
	ssize_t n = recv(fd, rep, len - 1, 0);
	if (n < 0 && errno == ECONNRESET)   /* reported before what is queued */
		n = recv(fd, rep, len - 1, MSG_DONTWAIT);
	if (n <= 0)
		return -EPIPE;
	rep[n] = 0;
	return 0;
}

#define STATUS_REQ "{\"v\":1,\"id\":7,\"verb\":\"status\"}"

/* A stats counter of the "oper" object (fresh root connection). */
static long long oper_counter(const char *name)
{
	int fd = mrcd_spawn_connect(d.ctl);
	assert_true(fd >= 0);
	static char rep[1 << 20];
	assert_int_equal(oper_req(fd, "{\"v\":1,\"id\":9,\"verb\":\"stats\"}", rep, sizeof(rep)), 0);
	close(fd);
	char key[64];
	snprintf(key, sizeof(key), "\"%s\":", name);
	char *p = strstr(rep, key);
	if (!p)
		printf("stats has no %s: %.300s\n", name, rep);
	assert_non_null(p);
	return strtoll(p + strlen(key), NULL, 10);
}

/* A child as uid in group nogroup, which the daemon admits as
 * socket_group (mrcd_spawn_fork_as). */
static pid_t fork_as(uid_t uid, int *fd)
{
	return mrcd_spawn_fork_as(uid, NOGROUP, NOGROUP, fd);
}

/* ---- client socket: pending connections ----------------------------------- */

#define N_IDLE 70           /* the audit's figure: more than max_clients (64) */
#define PENDING 8

static void test_pending_cap(void **state)
{
	(void)state;
	NEED_DAEMON();
	NEED_ROOT();
	/* Defaults otherwise (uid_max_pending 8, client_hello_timeout_ms 5000,
	 * max_clients 64, uid_max_clients 16). */
	const char *argv[] = { "--socket_group=nogroup", NULL };
	assert_int_equal(mrcd_spawn_start(&d, argv), 0);
	chmod(d.dir, 0711);   /* the other uid reaches the socket */

	/* Root opens N_IDLE connections and says nothing.  The daemon accepts
	 * in order: the first PENDING are held, the rest refused. */
	int fd[N_IDLE];
	for (int i = 0; i < N_IDLE; i++) {
		fd[i] = mrcd_spawn_connect(d.sock);
		assert_true(fd[i] >= 0);
	}
	/* Refused ones are answered (EUSERS, naming the key) and closed at
	 * once, without sending anything: the old daemon kept them open. */
	for (int i = PENDING; i < N_IDLE; i++) {
		char first[512];
		int r = wait_eof(fd[i], i == PENDING ? 5000 : 1000, first, sizeof(first));
		if (r)
			printf("idle connection %d of root: not closed (the daemon holds refused connections)\n", i);
		assert_int_equal(r, 0);
	}
	/* The reply decodes as a refusal of HELLO naming the key. */
	{
		int x = mrcd_spawn_connect(d.sock);
		assert_true(x >= 0);
		uint8_t buf[MRC_CLI_MSG_MAX];
		struct pollfd pf = { .fd = x, .events = POLLIN };
		assert_int_equal(poll(&pf, 1, 5000), 1);
		ssize_t n = recv(x, buf, sizeof(buf), 0);
		assert_true(n > 0);
		struct mrc_cli_msg m;
		const char *why;
		assert_int_equal(mrc__cli_dec_rep(buf, (size_t)n, &m, &why), 0);
		assert_int_equal(m.status, -EUSERS);
		assert_int_equal(m.hdr.type & ~MRC_CLI_REPLY, MRC_CLI_HELLO);
		assert_non_null(memmem(m.reason, m.reason_len, "uid_max_pending", 15));
		close(x);
	}
	long long refused = oper_counter("clients_refused");
	printf("refused client connections counted: %lld\n", refused);
	assert_true(refused >= N_IDLE - PENDING + 1);

	/* Another uid's first client is admitted (it was refused with EUSERS:
	 * root's 70 idle connections filled max_clients). */
	int pfd;
	pid_t pid = fork_as(OTHER_UID, &pfd);
	assert_true(pid >= 0);
	if (pid == 0) {
		struct mrc_ctx *c;
		int r = mrc_open(d.sock, &c);
		if (write(pfd, &r, sizeof(r)) != sizeof(r))
			_exit(3);
		_exit(0);
	}
	int r = 1;
	assert_int_equal(read(pfd, &r, sizeof(r)), sizeof(r));
	close(pfd);
	waitpid(pid, NULL, 0);
	printf("uid %d's first client with %d idle connections of root: %s\n", OTHER_UID, N_IDLE,
	       r ? strerror(-r) : "admitted");
	assert_int_equal(r, 0);

	/* The held ones are closed when client_hello_timeout_ms runs out. */
	for (int i = 0; i < PENDING; i++)
		assert_int_equal(wait_eof(fd[i], 10000, NULL, 0), 0);
	assert_true(oper_counter("clients_hello_timeouts") >= PENDING);
	for (int i = 0; i < N_IDLE; i++)
		close(fd[i]);
	/* A real client after all that. */
	struct mrc_ctx *c;
	assert_int_equal(mrc_open(d.sock, &c), 0);
	mrc_close(c);
	mrcd_spawn_stop(&d);
}

/* ---- operator socket ------------------------------------------------------- */

/* A child as uid that opens n operator connections, sends status on each
 * and reports the first errno of each reply (0: ok) and whether a refused
 * one was closed; it holds the open ones until *hold is closed. */
struct ctl_child {
	pid_t pid;
	int hold;          /* write end: closing it lets the child go */
	int res[16];
	int closed[16];    /* a refused connection was at EOF */
};

static void ctl_child_start(struct ctl_child *cc, uid_t uid, int n)
{
	int pfd, q[2];   /* q: the child holds its connections until q closes */
	assert_int_equal(pipe(q), 0);
	cc->pid = fork_as(uid, &pfd);
	assert_true(cc->pid >= 0);
	if (cc->pid == 0) {
		close(q[1]);
		int res[16] = { 0 }, closed[16] = { 0 }, fds[16];
		for (int i = 0; i < n; i++) {
			char rep[1 << 16];
			fds[i] = mrcd_spawn_connect(d.ctl);
			if (fds[i] < 0) {
				res[i] = -fds[i];
				continue;
			}
			int r = oper_req(fds[i], STATUS_REQ, rep, sizeof(rep));
			char *e = strstr(rep, "\"errno\":");
			res[i] = r ? -r : e ? atoi(e + 8) : 0;
			if (res[i])
				closed[i] = wait_eof(fds[i], 5000, NULL, 0) == 0;
		}
		if (write(pfd, res, sizeof(res)) != sizeof(res) ||
		    write(pfd, closed, sizeof(closed)) != sizeof(closed))
			_exit(3);
		char b;
		while (read(q[0], &b, 1) > 0)
			;
		_exit(0);
	}
	close(q[0]);
	assert_int_equal(read(pfd, cc->res, sizeof(cc->res)), sizeof(cc->res));
	assert_int_equal(read(pfd, cc->closed, sizeof(cc->closed)), sizeof(cc->closed));
	close(pfd);
	cc->hold = q[1];
}

static void ctl_child_stop(struct ctl_child *cc)
{
	close(cc->hold);
	waitpid(cc->pid, NULL, 0);
}

#define CTL_MAX 4
#define RESERVE 4

static void test_ctl_admin_slot(void **state)
{
	(void)state;
	NEED_DAEMON();
	NEED_ROOT();
	/* Defaults otherwise: ctl_uid_max_conns 8 (so this uid may take the
	 * whole cap), ctl_admin_reserve 4. */
	const char *argv[] = { "--socket_group=nogroup", "--ctl_max_conns=4", NULL };
	assert_int_equal(mrcd_spawn_start(&d, argv), 0);
	chmod(d.dir, 0711);
	struct ctl_child cc;
	ctl_child_start(&cc, OTHER_UID, CTL_MAX + 1);
	for (int i = 0; i < CTL_MAX; i++)
		assert_int_equal(cc.res[i], 0);
	/* its fifth is refused (the cap holds for it) and closed at once */
	assert_int_equal(cc.res[CTL_MAX], EBUSY);
	assert_int_equal(cc.closed[CTL_MAX], 1);

	/* root still reaches mrcctl: the old daemon answered EBUSY */
	int fd = mrcd_spawn_connect(d.ctl);
	assert_true(fd >= 0);
	char rep[1 << 16];
	assert_int_equal(oper_req(fd, STATUS_REQ, rep, sizeof(rep)), 0);
	printf("root with %d connections of uid %d open (ctl_max_conns %d): %.120s\n", CTL_MAX,
	       OTHER_UID, CTL_MAX, rep);
	assert_null(strstr(rep, "\"error\""));
	assert_non_null(strstr(rep, "\"result\""));
	/* the reserve is ctl_admin_reserve (4) wide: root's fifth beyond the
	 * cap is refused */
	int more[RESERVE];
	for (int i = 0; i < RESERVE; i++) {
		more[i] = mrcd_spawn_connect(d.ctl);
		assert_true(more[i] >= 0);
		assert_int_equal(oper_req(more[i], STATUS_REQ, rep, sizeof(rep)), 0);
		if (i < RESERVE - 1)
			assert_null(strstr(rep, "\"error\""));
		else
			assert_non_null(strstr(rep, "ctl_max_conns"));
	}
	for (int i = 0; i < RESERVE; i++)
		close(more[i]);
	close(fd);
	ctl_child_stop(&cc);
	mrcd_spawn_stop(&d);
}

static void test_ctl_uid_cap(void **state)
{
	(void)state;
	NEED_DAEMON();
	NEED_ROOT();
	const char *argv[] = { "--socket_group=nogroup", "--ctl_max_conns=4",
			       "--ctl_uid_max_conns=2", NULL };
	assert_int_equal(mrcd_spawn_start(&d, argv), 0);
	chmod(d.dir, 0711);
	struct ctl_child a, b;
	ctl_child_start(&a, OTHER_UID, CTL_MAX);
	assert_int_equal(a.res[0], 0);
	assert_int_equal(a.res[1], 0);
	/* beyond its share: refused, naming the key, closed at once */
	assert_int_equal(a.res[2], EBUSY);
	assert_int_equal(a.res[3], EBUSY);
	assert_int_equal(a.closed[2], 1);
	/* another uid gets its share (the old daemon: EBUSY, the first uid
	 * held every slot) */
	ctl_child_start(&b, THIRD_UID, 1);
	printf("uid %d with uid %d holding its share: errno %d\n", THIRD_UID, OTHER_UID, b.res[0]);
	assert_int_equal(b.res[0], 0);
	assert_true(oper_counter("refused") >= 2);
	ctl_child_stop(&b);
	ctl_child_stop(&a);
	mrcd_spawn_stop(&d);
}

/* A uid with no account whose only tie to socket_group is a supplementary
 * group: the daemon reads the groups from the socket (SO_PEERGROUPS).  The
 * old daemon looked the uid up in NSS on its loop (getpwuid,
 * getgrouplist), found no account and refused it. */
static void test_ctl_peergroups(void **state)
{
	(void)state;
	NEED_DAEMON();
	NEED_ROOT();
	const char *argv[] = { "--socket_group=nogroup", NULL };
	assert_int_equal(mrcd_spawn_start(&d, argv), 0);
	chmod(d.dir, 0711);
	int pfd;   /* primary group 1 (daemon: not socket_group), nogroup supplementary */
	pid_t pid = mrcd_spawn_fork_as(THIRD_UID, 1, NOGROUP, &pfd);
	assert_true(pid >= 0);
	if (pid == 0) {
		char rep[1 << 16];
		int res = -1, fd = mrcd_spawn_connect(d.ctl);
		if (fd >= 0 && !oper_req(fd, STATUS_REQ, rep, sizeof(rep))) {
			char *e = strstr(rep, "\"errno\":");
			res = e ? atoi(e + 8) : 0;
		}
		if (write(pfd, &res, sizeof(res)) != sizeof(res))
			_exit(3);
		_exit(0);
	}
	int res = -2;
	assert_int_equal(read(pfd, &res, sizeof(res)), sizeof(res));
	close(pfd);
	waitpid(pid, NULL, 0);
	printf("uid %d (no account, gid 1, supplementary nogroup): status errno %d\n", THIRD_UID, res);
	assert_int_equal(res, 0);
	mrcd_spawn_stop(&d);
}

/* ---- idle timeouts ------------------------------------------------------ */

static int tcp_connect(unsigned port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

#define IDLE_MS 300

static void test_idle_timeouts(void **state)
{
	(void)state;
	NEED_DAEMON();
	char a1[64], a2[64];
	snprintf(a1, sizeof(a1), "--ctl_idle_timeout_ms=%d", IDLE_MS);
	snprintf(a2, sizeof(a2), "--metrics_idle_timeout_ms=%d", IDLE_MS);
	const char *argv[] = { "--metrics_listen=auto", a1, a2, NULL };
	assert_int_equal(mrcd_spawn_start(&d, argv), 0);
	char rep[1 << 16];

	/* A follower first (its timer runs out first): not idle. */
	int fol = mrcd_spawn_connect(d.ctl);
	assert_true(fol >= 0);
	assert_int_equal(oper_req(fol, "{\"v\":1,\"id\":1,\"verb\":\"events\",\"follow\":true,\"last\":0}",
				  rep, sizeof(rep)), 0);
	/* An mrcctl connection that asks once, then nothing. */
	int64_t t0 = mrcd_spawn_now_ms();
	int idle = mrcd_spawn_connect(d.ctl);
	assert_true(idle >= 0);
	assert_int_equal(oper_req(idle, STATUS_REQ, rep, sizeof(rep)), 0);
	int mt = tcp_connect(d.port + 1);
	assert_int_equal(wait_eof(idle, 5000, NULL, 0), 0);
	int64_t t_ctl = mrcd_spawn_now_ms() - t0;
	assert_int_equal(wait_eof(mt, 5000, NULL, 0), 0);
	int64_t t_met = mrcd_spawn_now_ms() - t0;
	printf("idle mrcctl connection closed after %lld ms, metrics after %lld ms (timeouts %d ms)\n",
	       (long long)t_ctl, (long long)t_met, IDLE_MS);
	/* by the timer, not at once; the old daemon never (mrcctl), after 5 s
	 * (metrics) */
	assert_true(t_ctl >= IDLE_MS - 50 && t_ctl < 4000);
	assert_true(t_met >= IDLE_MS - 50 && t_met < 4000);
	/* the follower is still there: it answers (refusing a second verb) */
	assert_true(still_open(fol));
	assert_int_equal(oper_req(fol, STATUS_REQ, rep, sizeof(rep)), 0);
	assert_non_null(strstr(rep, "follows events"));
	assert_true(oper_counter("idle_closed") >= 1);
	close(fol);
	close(mt);
	close(idle);
	mrcd_spawn_stop(&d);
}

#define M_MAX 2

static void test_metrics_evict(void **state)
{
	(void)state;
	NEED_DAEMON();
	/* Only options the old daemon has: it refused the scraper. */
	const char *argv[] = { "--metrics_listen=auto", "--metrics_max_conns=2", NULL };
	assert_int_equal(mrcd_spawn_start(&d, argv), 0);
	int idle[M_MAX];
	for (int i = 0; i < M_MAX; i++)
		idle[i] = tcp_connect(d.port + 1);
	/* Every slot is held by a connection that asks nothing: a scraper
	 * still gets its metrics, the oldest idle one makes room. */
	int s = tcp_connect(d.port + 1);
	const char *get = "GET /metrics HTTP/1.0\r\n\r\n";
	assert_int_equal(send(s, get, strlen(get), MSG_NOSIGNAL), (ssize_t)strlen(get));
	char first[256];
	assert_int_equal(wait_eof(s, 5000, first, sizeof(first)), 0);
	printf("scraper with %d idle metrics connections open: %.40s\n", M_MAX, first);
	assert_non_null(strstr(first, "HTTP/1.0 200"));
	assert_int_equal(wait_eof(idle[0], 5000, NULL, 0), 0);
	for (int i = 0; i < M_MAX; i++)
		close(idle[i]);
	close(s);
	mrcd_spawn_stop(&d);
}

/* ---- the descriptor limit ------------------------------------------------ */

static long cpu_ticks(pid_t pid)
{
	char path[64], buf[2048];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	char *p = strrchr(buf, ')');
	assert_non_null(p);
	unsigned long ut = 0, st = 0;
	/* after ")": state is field 3; utime 14, stime 15 */
	assert_int_equal(sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st), 2);
	return (long)(ut + st);
}

/* The RLIMIT_NOFILE that leaves the process exactly room free descriptor
 * numbers (the limit bounds numbers, not the count). */
static int limit_for(pid_t pid, int room)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	static char used[4096];
	memset(used, 0, sizeof(used));
	DIR *dir = opendir(path);
	assert_non_null(dir);
	struct dirent *e;
	while ((e = readdir(dir)))
		if (e->d_name[0] != '.' && atoi(e->d_name) < (int)sizeof(used))
			used[atoi(e->d_name)] = 1;
	closedir(dir);
	int k = 0;
	for (; room; k++)
		room -= !used[k];
	return k;
}

static long log_lines(const char *path, const char *what)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	char line[1024];
	long n = 0;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, what) != NULL;
	fclose(f);
	return n;
}

struct logwait {
	const char *path;
};

static int accept_logged(void *arg)
{
	struct logwait *w = arg;
	return log_lines(w->path, "accept:") > 0;
}

#define ROOM 8      /* descriptors left to the daemon */
#define N_CTL 20    /* idle mrcctl connections of root: more than ROOM plus
		       what it may still free, fewer than ROOM + its backlog */
#define N_CLI 2     /* client connections queued behind them */

static void test_fd_limit(void **state)
{
	(void)state;
	NEED_DAEMON();
	snprintf(logp, sizeof(logp), "/tmp/mrc-fdlimit-XXXXXX");
	int lf = mkostemp(logp, O_CLOEXEC);
	assert_true(lf >= 0);
	/* The daemon's stderr (its log) goes to the file. */
	fflush(stderr);
	int saved = fcntl(2, F_DUPFD_CLOEXEC, 3);
	dup2(lf, 2);
	int rc = mrcd_spawn_start(&d, NULL);
	dup2(saved, 2);
	close(saved);
	close(lf);
	assert_int_equal(rc, 0);

	/* Room for about ROOM more descriptors (the start's probe client may
	 * still hold a few, freed later: N_CTL covers them). */
	int lim = limit_for(d.pid, ROOM);
	struct rlimit rl;
	assert_int_equal(prlimit(d.pid, RLIMIT_NOFILE, NULL, &rl), 0);
	rl.rlim_cur = (rlim_t)lim;
	assert_int_equal(prlimit(d.pid, RLIMIT_NOFILE, &rl, NULL), 0);
	int fd[N_CTL + N_CLI];
	for (int i = 0; i < N_CTL + N_CLI; i++) {
		fd[i] = mrcd_spawn_connect(i < N_CTL ? d.ctl : d.sock);
		assert_true(fd[i] >= 0);
	}
	struct logwait w = { logp };
	if (mrcd_spawn_wait_for(accept_logged, &w, 5000)) {
		printf("no accept line at limit %d\n", lim);
		fail();
	}
	/* One second at the limit: the old daemon spun on the listeners
	 * (~97 % of a core, a log line per try on the client socket). */
	int64_t t_first = mrcd_spawn_now_ms();
	long c0 = cpu_ticks(d.pid);
	long l0 = log_lines(logp, "accept:");
	poll(NULL, 0, 1000);   /* the measurement window, not a synchronisation */
	long c1 = cpu_ticks(d.pid);
	long l1 = log_lines(logp, "accept:");
	long hz = sysconf(_SC_CLK_TCK);
	printf("at the fd limit (%d): %ld ms of CPU in 1 s, %ld accept log lines (%ld in that second)\n",
	       lim, (c1 - c0) * 1000 / hz, l1, l1 - l0);
	assert_true((c1 - c0) * 1000 / hz < 300);
	/* a line a second per listener (client, operator) at most, since
	 * the first one */
	long span_s = (long)((mrcd_spawn_now_ms() - t_first) / 1000);
	assert_true(l1 <= 2 * (span_s + 2));
	/* and each says how many failures it stands for */
	assert_true(log_lines(logp, "since the last such line") >= 1);

	/* Descriptors come back: the waiting connections are served, a new
	 * client gets in, and the daemon counted its pauses. */
	for (int i = 0; i < N_CTL + N_CLI; i++)
		close(fd[i]);
	int64_t end = mrcd_spawn_now_ms() + MRCD_SPAWN_WAIT_MS;
	struct mrc_ctx *c = NULL;
	while ((rc = mrc_open(d.sock, &c)) != 0 && mrcd_spawn_now_ms() < end)
		poll(NULL, 0, 20);
	printf("after the fds came back: mrc_open %s\n", rc ? strerror(-rc) : "ok");
	assert_int_equal(rc, 0);
	mrc_close(c);
	assert_true(oper_counter("accept_paused") >= 1);
	mrcd_spawn_stop(&d);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_pending_cap, stop_daemon),
		cmocka_unit_test_teardown(test_ctl_admin_slot, stop_daemon),
		cmocka_unit_test_teardown(test_ctl_uid_cap, stop_daemon),
		cmocka_unit_test_teardown(test_ctl_peergroups, stop_daemon),
		cmocka_unit_test_teardown(test_idle_timeouts, stop_daemon),
		cmocka_unit_test_teardown(test_metrics_evict, stop_daemon),
		cmocka_unit_test_teardown(test_fd_limit, stop_daemon),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

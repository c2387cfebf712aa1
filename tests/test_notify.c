/* mrcd's systemd notification protocol, checked against a fake
 * NOTIFY_SOCKET: READY=1 with STATUS=, WATCHDOG=1 when WATCHDOG_USEC is
 * set, RELOADING=1 then READY=1 on SIGHUP, STOPPING=1 on SIGTERM and a
 * clean exit.  mrcd runs unprivileged-friendly in loopback mode on a
 * random port (seed printed) with its sockets in a temp directory; the
 * operator socket answers a status request while it runs. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "auth/auth.h"
#include "codec/operjson.h"

static char mrcd_bin[512];

struct fx {
	char dir[64];
	int nfd;
	pid_t pid;
	char log[256];
};

/* Waits (bounded) for a notification datagram containing want; every
 * message seen is appended to seen for the failure message. */
static int wait_msg(struct fx *f, const char *want, int timeout_ms, char *got, size_t gotlen)
{
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct timespec t;
		clock_gettime(CLOCK_MONOTONIC, &t);
		long el = (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000;
		if (el >= timeout_ms)
			return -ETIMEDOUT;
		struct pollfd p = { .fd = f->nfd, .events = POLLIN };
		if (poll(&p, 1, (int)(timeout_ms - el)) <= 0)
			continue;
		char buf[1024];
		ssize_t n = recv(f->nfd, buf, sizeof(buf) - 1, 0);
		if (n <= 0)
			continue;
		buf[n] = 0;
		size_t l = strlen(got);
		snprintf(got + l, gotlen - l, "[%s] ", buf);
		if (strstr(buf, want)) {
			snprintf(got, gotlen, "%s", buf);
			return 0;
		}
	}
}

static int setup(void **state)
{
	static struct fx f;
	memset(&f, 0, sizeof(f));
	snprintf(f.dir, sizeof(f.dir), "/tmp/mrc-notify-XXXXXX");
	assert_non_null(mkdtemp(f.dir));
	char np[90];
	snprintf(np, sizeof(np), "%s/notify", f.dir);
	f.nfd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", np);
	assert_int_equal(bind(f.nfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
	srand(seed);
	unsigned port = 20000 + (unsigned)rand() % 40000;
	printf("# test_notify: seed %u, port %u, dir %s\n", seed, port, f.dir);
	snprintf(f.log, sizeof(f.log), "%s/mrcd.log", f.dir);
	/* mrcd refuses to start without a cluster key: one of our own. */
	char key[140];
	snprintf(key, sizeof(key), "--key_file=%s/cluster.key", f.dir);
	assert_int_equal(mrc_auth_key_generate(key + strlen("--key_file="), NULL), 0);
	f.pid = fork();
	assert_true(f.pid >= 0);
	if (!f.pid) {
		char sock[200], portarg[32], pidenv[32];
		snprintf(sock, sizeof(sock), "--socket=%s/mrcd.sock", f.dir);
		snprintf(portarg, sizeof(portarg), "--port=%u", port);
		snprintf(pidenv, sizeof(pidenv), "%d", (int)getpid());
		setenv("NOTIFY_SOCKET", np, 1);
		setenv("WATCHDOG_USEC", "200000", 1);
		setenv("WATCHDOG_PID", pidenv, 1);
		int lf = open(f.log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (lf >= 0)
			dup2(lf, 2);
		execl(mrcd_bin, "mrcd", "-c", "/dev/null", sock, portarg, key, (char *)NULL);
		_exit(127);
	}
	*state = &f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	if (f->pid > 0 && !kill(f->pid, SIGKILL))
		waitpid(f->pid, NULL, 0);
	close(f->nfd);
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	if (system(cmd))
		return -1;
	return 0;
}

static void fail_with_log(struct fx *f, const char *what, const char *got)
{
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "cat '%s' >&2", f->log);
	if (system(cmd)) {
	}
	fail_msg("%s; notifications seen: %s", what, got);
}

static void status_over_operator_socket(struct fx *f)
{
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/" MRC_OPER_SOCK_NAME, f->dir);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	const char *req = "{\"v\":1,\"id\":42,\"verb\":\"status\"}";
	assert_int_equal(send(fd, req, strlen(req), 0), (ssize_t)strlen(req));
	struct pollfd p = { .fd = fd, .events = POLLIN };
	assert_int_equal(poll(&p, 1, 5000), 1);
	static char buf[1 << 16];
	ssize_t n = recv(fd, buf, sizeof(buf), 0);
	assert_true(n > 0);
	json_t *res;
	char msg[256];
	uint32_t id;
	assert_int_equal(mrc_oper_reply_parse(buf, (size_t)n, &id, &res, msg, sizeof(msg)), 0);
	assert_int_equal(id, 42);
	assert_string_equal(json_string_value(json_object_get(res, "mode")), "loopback");
	json_decref(res);
	close(fd);
}

static void test_notify_lifecycle(void **state)
{
	struct fx *f = *state;
	char got[4096] = "";
	if (wait_msg(f, "READY=1", 10000, got, sizeof(got)))
		fail_with_log(f, "no READY=1 within 10 s", got);
	if (!strstr(got, "STATUS="))
		fail_with_log(f, "READY=1 came without STATUS=", got);
	status_over_operator_socket(f);

	got[0] = 0;
	if (wait_msg(f, "WATCHDOG=1", 5000, got, sizeof(got)))
		fail_with_log(f, "no WATCHDOG=1 within 5 s with WATCHDOG_USEC=200000", got);

	got[0] = 0;
	assert_int_equal(kill(f->pid, SIGHUP), 0);
	if (wait_msg(f, "RELOADING=1", 5000, got, sizeof(got)))
		fail_with_log(f, "SIGHUP: no RELOADING=1", got);
	if (!strstr(got, "MONOTONIC_USEC="))
		fail_with_log(f, "RELOADING=1 without MONOTONIC_USEC=", got);
	got[0] = 0;
	if (wait_msg(f, "READY=1", 5000, got, sizeof(got)))
		fail_with_log(f, "SIGHUP: no READY=1 after RELOADING=1", got);

	got[0] = 0;
	assert_int_equal(kill(f->pid, SIGTERM), 0);
	if (wait_msg(f, "STOPPING=1", 5000, got, sizeof(got)))
		fail_with_log(f, "SIGTERM: no STOPPING=1", got);
	int st = 0;
	for (int i = 0; i < 100; i++) {
		pid_t r = waitpid(f->pid, &st, WNOHANG);
		if (r == f->pid) {
			f->pid = 0;
			break;
		}
		struct pollfd none;
		poll(&none, 0, 50);   /* bounded wait for the exit, 5 s in all */
	}
	if (f->pid)
		fail_with_log(f, "mrcd did not exit within 5 s of SIGTERM", got);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	/* It removed its operator socket. */
	char path[200];
	snprintf(path, sizeof(path), "%s/" MRC_OPER_SOCK_NAME, f->dir);
	assert_int_equal(access(path, F_OK), -1);
}

int main(int argc, char **argv)
{
	(void)argc;
	char tmp[512];
	snprintf(tmp, sizeof(tmp), "%s", argv[0]);
	/* build[/san]/tests/test_notify -> build[/san]/bin/mrcd */
	snprintf(mrcd_bin, sizeof(mrcd_bin), "%s/../bin/mrcd", dirname(tmp));
	if (access(mrcd_bin, X_OK)) {
		fprintf(stderr, "test_notify: %s is not built (make all first)\n", mrcd_bin);
		return 1;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_notify_lifecycle, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

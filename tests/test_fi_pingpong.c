/* Debian's fi_pingpong (libfabric-bin), unmodified, over the provider
 * "mrc": a server and a client process on one loopback mrcd, RDM
 * endpoints, msg and tagged modes, every size of its default list, with
 * its data integrity check (-c).  Both must exit 0 and the client must
 * report its results.  Skipped without fi_pingpong. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include <dlfcn.h>

#include "tests/support/fi_fix.h"
#include "tests/support/seeded.h"

#define PINGPONG "/usr/bin/fi_pingpong"

/* Whether a TCP socket listens on port (the server is ready for its
 * client): /proc/net/tcp and tcp6, state 0A. */
static int listening(unsigned port)
{
	const char *files[] = { "/proc/net/tcp", "/proc/net/tcp6" };
	char line[512], want[16];
	snprintf(want, sizeof(want), ":%04X ", port);
	for (int i = 0; i < 2; i++) {
		FILE *f = fopen(files[i], "r");
		while (f && fgets(line, sizeof(line), f)) {
			char *loc = strchr(line, ':');
			/* "sl: local rem st": local address, then remote, then state */
			if (!loc || !(loc = strchr(loc + 1, ':')) || strncmp(loc, want, strlen(want)))
				continue;
			char st[8];
			if (sscanf(loc + strlen(want), "%*s %7s", st) == 1 && !strcmp(st, "0A")) {
				fclose(f);
				return 1;
			}
		}
		if (f)
			fclose(f);
	}
	return 0;
}

/* A sanitizer build of the provider needs its runtime first in
 * fi_pingpong (which is not instrumented): preload the one this test
 * runs with. */
static void preload_sanitizer(void)
{
	void *sym = dlsym(RTLD_DEFAULT, "__asan_init");
	Dl_info di;
	if (sym && dladdr(sym, &di) && di.dli_fname && strstr(di.dli_fname, "asan")) {
		setenv("LD_PRELOAD", di.dli_fname, 1);
		/* fi_pingpong's and libfabric's own leaks are not ours; the
		 * provider's are the other test_fi_*'s to find */
		setenv("ASAN_OPTIONS", "detect_leaks=0", 1);
	}
}

/* Runs fi_pingpong with args, its output into out (a file); the pid. */
static pid_t run(const char *const *args, const char *out)
{
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execv(PINGPONG, (char *const *)args);
		_exit(127);
	}
	return pid;
}

/* The exit status, killing the process after ms. */
static int reap(pid_t pid, int ms)
{
	int64_t end = mrcd_spawn_now_ms() + ms;
	int st;
	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);
		if (r == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		if (mrcd_spawn_now_ms() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return -ETIMEDOUT;
		}
		/* a child's exit is polled: waitpid has no timeout */
		usleep(2000);
	}
}

static void dump(const char *path)
{
	char line[512];
	FILE *f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		print_message("  | %s", line);
	if (f)
		fclose(f);
}

static void pingpong(const char *mode)
{
	char port[16], sout[64], cout[64];
	unsigned p = 20000 + (unsigned)(rnd() % 20000);
	snprintf(port, sizeof(port), "%u", p);
	snprintf(sout, sizeof(sout), "/tmp/mrc-fipp-s.%d", (int)getpid());
	snprintf(cout, sizeof(cout), "/tmp/mrc-fipp-c.%d", (int)getpid());
	const char *sargs[] = { "fi_pingpong", "-p", "mrc", "-e", "rdm", "-m", mode, "-c", "-I",
				"20", "-B", port, NULL };
	const char *cargs[] = { "fi_pingpong", "-p", "mrc", "-e", "rdm", "-m", mode, "-c", "-I",
				"20", "-P", port, "127.0.0.1", NULL };
	pid_t s = run(sargs, sout);
	int64_t end = mrcd_spawn_now_ms() + FIX_WAIT_MS;
	while (!listening(p)) {
		int st;
		CHECK(waitpid(s, &st, WNOHANG) == 0, "fi_pingpong server exited before listening");
		CHECK(mrcd_spawn_now_ms() < end, "fi_pingpong server never listened on %u", p);
	}
	pid_t c = run(cargs, cout);
	int cst = reap(c, 60000);
	int sst = reap(s, 60000);
	if (cst || sst) {
		print_message("server (%d):\n", sst);
		dump(sout);
		print_message("client (%d):\n", cst);
		dump(cout);
	}
	assert_int_equal(cst, 0);
	assert_int_equal(sst, 0);
	/* the client printed its table: bytes, iterations, ... */
	FILE *f = fopen(cout, "r");
	char buf[8192] = "";
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	CHECK(strstr(buf, "bytes") && strstr(buf, "usec/xfer"), "no results from the client:\n%s",
	      buf);
	print_message("%s", buf);
	unlink(sout);
	unlink(cout);
}

static void test_pingpong_msg(void **state)
{
	FIX_NEED();
	if (access(PINGPONG, X_OK))
		MRC_SKIP("%s not installed (libfabric-bin)", PINGPONG);
	preload_sanitizer();
	pingpong("msg");
}

static void test_pingpong_tagged(void **state)
{
	FIX_NEED();
	if (access(PINGPONG, X_OK))
		MRC_SKIP("%s not installed (libfabric-bin)", PINGPONG);
	preload_sanitizer();
	pingpong("tagged");
}

int main(void)
{
	seed_init("test_fi_pingpong");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_pingpong_msg, reseed),
		cmocka_unit_test_setup(test_pingpong_tagged, reseed),
	};
	return cmocka_run_group_tests(tests, fix_group_setup, fix_group_teardown);
}

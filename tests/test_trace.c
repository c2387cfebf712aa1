/* The message-path trace (common/trace.h): off unless MRC_TRACE names a
 * directory when the process starts; on, every MRC_TRACE call from any
 * thread is one line "ns stage qpn id aux pid" of a file written at exit,
 * with CLOCK_MONOTONIC times (the clock every process of a host shares,
 * which bench/trace.py merges on), in the directory named. */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/trace.h"

#define PER_THREAD 1000

static char self[4096];

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void *recorder(void *arg)
{
	uint32_t k = (uint32_t)(uintptr_t)arg;
	for (uint32_t i = 0; i < PER_THREAD; i++)
		MRC_TRACE(k ? MRC_TR_D_PICK : MRC_TR_C_POST, k, i, 7);
	return NULL;
}

/* The child: two threads record PER_THREAD events each. */
static int child(void)
{
	if (!mrc__trace_on)
		return 3;
	pthread_t t[2];
	for (uintptr_t k = 0; k < 2; k++)
		if (pthread_create(&t[k], NULL, recorder, (void *)k))
			return 4;
	for (int k = 0; k < 2; k++)
		pthread_join(t[k], NULL);
	return 0;
}

static void test_off(void **state)
{
	(void)state;
	if (getenv("MRC_TRACE"))
		skip();
	assert_int_equal(mrc__trace_on, 0);
	MRC_TRACE(MRC_TR_C_POST, 1, 2, 3);    /* a no-op: nothing to write */
}

static void test_on(void **state)
{
	(void)state;
	char dir[] = "/tmp/mrc-trace-test.XXXXXX";
	assert_non_null(mkdtemp(dir));
	uint64_t t0 = now_ns();
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		setenv("MRC_TRACE", dir, 1);
		execl(self, self, "child", (char *)NULL);
		_exit(127);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	uint64_t t1 = now_ns();
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	char path[4200];
	snprintf(path, sizeof(path), "%s/mrc-trace.%d.0", dir, (int)pid);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	unsigned long long ts, id;
	unsigned qpn, aux;
	int fpid;
	char stage[32];
	unsigned seen[2] = { 0, 0 };
	uint64_t last_id[2] = { 0, 0 };
	int n = 0;
	while (fscanf(f, "%llu %31s %u %llu %u %d", &ts, stage, &qpn, &id, &aux, &fpid) == 6) {
		n++;
		assert_true(ts >= t0 && ts <= t1);
		assert_int_equal(fpid, pid);
		assert_int_equal(aux, 7);
		assert_true(qpn < 2);
		assert_string_equal(stage, qpn ? "d_pick" : "c_post");
		/* one thread's events in its own order */
		if (seen[qpn])
			assert_int_equal(id, last_id[qpn] + 1);
		else
			assert_int_equal(id, 0);
		last_id[qpn] = id;
		seen[qpn]++;
	}
	fclose(f);
	assert_int_equal(n, 2 * PER_THREAD);
	assert_int_equal(seen[0], PER_THREAD);
	assert_int_equal(seen[1], PER_THREAD);
	/* nothing else written */
	DIR *d = opendir(dir);
	assert_non_null(d);
	int files = 0;
	for (struct dirent *e; (e = readdir(d));)
		if (e->d_name[0] != '.') {
			files++;
			char p[4200];
			snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
			unlink(p);
		}
	closedir(d);
	rmdir(dir);
	assert_int_equal(files, 1);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "child"))
		return child();
	ssize_t k = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (k <= 0)
		return 1;
	self[k] = 0;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_off),
		cmocka_unit_test(test_on),
	};
	return cmocka_run_group_tests_name("trace", tests, NULL, NULL);
}

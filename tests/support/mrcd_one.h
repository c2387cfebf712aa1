/* One mrcd per test, spawned with extra options, and its counters.
 * Include after <cmocka.h> (and tests/support/skip.h for ONE_NEED). */
#ifndef MRC_TESTS_MRCD_ONE_H
#define MRC_TESTS_MRCD_ONE_H

#include <jansson.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "tests/support/mrcd_spawn.h"

/* The test's daemon: stopped by one_teardown too, so a failed assertion
 * (a longjmp out of the test) leaves none running. */
static struct mrcd_proc *one_cur;

/* argv: NULL-terminated extra options.  1 when mrcd is not built. */
static inline int one_start(struct mrcd_proc *d, const char *const *argv)
{
	if (!mrcd_spawn_available())
		return 1;
	int rc = mrcd_spawn_start(d, argv);
	if (!rc)
		one_cur = d;
	return rc;
}

static inline void one_stop(struct mrcd_proc *d)
{
	mrcd_spawn_stop(d);
	one_cur = NULL;
}

static inline int one_teardown(void **state)
{
	(void)state;
	if (one_cur)
		one_stop(one_cur);
	return 0;
}

/* call (one_start) is evaluated once: twice would start a second daemon
 * and leak the first. */
#define ONE_NEED(call) do { int need_rc_ = (call); \
		      if (need_rc_ == 1) MRC_SKIP("build/bin/mrcd not built"); \
		      assert_int_equal(need_rc_, 0); } while (0)

/* The daemon's stats reply (operator socket), parsed; the caller frees. */
static inline json_t *one_stats(const struct mrcd_proc *d)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", d->ctl);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	static const char req[] = "{\"v\":1,\"id\":1,\"verb\":\"stats\"}";
	assert_int_equal(send(fd, req, strlen(req), 0), (ssize_t)strlen(req));
	struct pollfd pf = { .fd = fd, .events = POLLIN };
	assert_int_equal(poll(&pf, 1, MRCD_SPAWN_WAIT_MS), 1);
	static char rep[1 << 18];
	ssize_t n = recv(fd, rep, sizeof(rep) - 1, 0);
	assert_true(n > 0);
	close(fd);
	json_t *j = json_loadb(rep, (size_t)n, 0, NULL);
	assert_non_null(j);
	return j;
}

#endif

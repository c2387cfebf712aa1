/* mrcd's verb handler table (daemon/oper/oper_verbs.c, generated from
 * codec/operverbs.def) against a real loopback daemon
 * (tests/support/mrcd_spawn):
 *   - test_every_verb_answered: every verb of the definition, sent with
 *     the fields it needs, reaches its handler (a reply with the request's
 *     id, never "verb not implemented");
 *   - test_admin_verbs_refused: a uid in socket_group but not admin_group
 *     gets EPERM, naming the verb as an admin verb, for exactly the admin
 *     verbs of the definition, and every other verb is answered; the
 *     refused plane-disable changed nothing (plane 0 still enabled).
 * Skipped when build/bin/mrcd has not been built; the second test needs
 * root (it acts as uid nobody). */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
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
#include <unistd.h>
#include <cmocka.h>

#include "codec/operjson.h"
#include "tests/support/mrcd_spawn.h"
#include "tests/support/skip.h"

#define NEED_DAEMON() do { if (!mrcd_spawn_available()) \
	MRC_SKIP("%s is not built", mrcd_spawn_bin()); } while (0)
#define NEED_ROOT() do { if (geteuid()) \
	MRC_SKIP("acting as a second uid needs root"); } while (0)

#define NOBODY 65534        /* uid nobody, group nogroup (socket_group below) */
#define NOGROUP 65534

static struct mrcd_proc d;

static int stop_daemon(void **state)
{
	(void)state;
	mrcd_spawn_stop(&d);
	return 0;
}

/* What each verb needs, from the definition. */
static const unsigned need[MRC_OPER__COUNT] = {
#define MRC_VERB(ID, wire, admin, need_, allow, ...) [MRC_OPER_##ID] = need_,
#include "codec/operverbs.def"
};

/* Sends verb v with what it needs (on the loopback fabric: peer "self",
 * plane 0, EV 0, a short probe) and reads the reply: 0 or the daemon's
 * -errno with msg filled; -ETIMEDOUT / -EPIPE / -EBADMSG when no valid
 * reply with the request's id came back. */
static int ask(int fd, enum mrc_oper_verb v, char *msg, size_t len)
{
	struct mrc_oper_req r;
	mrc_oper_req_init(&r);
	r.verb = v;
	r.id = 500u + (unsigned)v;
	if (need[v] & MRC_OPER_F_PEER)
		snprintf(r.peer, sizeof(r.peer), "self");
	if (need[v] & MRC_OPER_F_PLANE)
		r.plane = 0;
	if (need[v] & MRC_OPER_F_EV)
		r.ev = 0;
	if (v == MRC_OPER_PROBE)
		r.timeout_ms = 200;
	char *s = mrc_oper_req_encode(&r);
	if (!s)
		return -ENOMEM;
	ssize_t sent = send(fd, s, strlen(s), MSG_NOSIGNAL);
	free(s);
	if (sent < 0)
		return -errno;
	struct pollfd pf = { .fd = fd, .events = POLLIN };
	if (poll(&pf, 1, MRCD_SPAWN_WAIT_MS) != 1)
		return -ETIMEDOUT;
	static char buf[MRC_OPER_MSG_MAX];
	ssize_t n = recv(fd, buf, sizeof(buf), 0);
	if (n <= 0)
		return -EPIPE;
	uint32_t id = 0;
	json_t *res = NULL;
	int rc = mrc_oper_reply_parse(buf, (size_t)n, &id, &res, msg, len);
	json_decref(res);
	if (rc != -EBADMSG && id != r.id) {
		snprintf(msg, len, "reply id %u, request id %u", id, r.id);
		return -EBADMSG;
	}
	return rc;
}

static void test_every_verb_answered(void **state)
{
	(void)state;
	NEED_DAEMON();
	assert_int_equal(mrcd_spawn_start(&d, NULL), 0);
	int fd = mrcd_spawn_connect(d.ctl);
	assert_true(fd >= 0);
	for (int v = MRC_OPER_NONE + 1; v < MRC_OPER__COUNT; v++) {
		char msg[1024] = "";
		int rc = ask(fd, (enum mrc_oper_verb)v, msg, sizeof(msg));
		printf("%-14s %s%s%s\n", mrc_oper_verb_name((enum mrc_oper_verb)v),
		       rc ? mrc_oper_errno_name(rc) : "ok", rc ? ": " : "", rc ? msg : "");
		/* a daemon error is a handler's answer; these are not */
		if (rc == -ENOSYS || rc == -ETIMEDOUT || rc == -EPIPE || rc == -EBADMSG ||
		    rc == -EPERM || rc == -EINVAL)
			fail_msg("verb '%s': %d %s", mrc_oper_verb_name((enum mrc_oper_verb)v), rc, msg);
	}
	close(fd);
}

static void test_admin_verbs_refused(void **state)
{
	(void)state;
	NEED_DAEMON();
	NEED_ROOT();
	const char *argv[] = { "--socket_group=nogroup", NULL };
	assert_int_equal(mrcd_spawn_start(&d, argv), 0);
	chmod(d.dir, 0711);   /* the other uid reaches the socket */
	/* nobody: in socket_group (may connect), not admin */
	int pfd;
	pid_t pid = mrcd_spawn_fork_as(NOBODY, NOGROUP, NOGROUP, &pfd);
	assert_true(pid >= 0);
	if (pid == 0) {
		int fd = mrcd_spawn_connect(d.ctl);
		if (fd < 0)
			_exit(91);
		for (int v = MRC_OPER_NONE + 1; v < MRC_OPER__COUNT; v++) {
			struct { int rc; char msg[256]; } out = { 0, "" };
			out.rc = ask(fd, (enum mrc_oper_verb)v, out.msg, sizeof(out.msg));
			if (write(pfd, &out, sizeof(out)) != (ssize_t)sizeof(out))
				_exit(92);
		}
		_exit(0);
	}
	int refused = 0;
	for (int v = MRC_OPER_NONE + 1; v < MRC_OPER__COUNT; v++) {
		struct { int rc; char msg[256]; } in;
		assert_int_equal(read(pfd, &in, sizeof(in)), sizeof(in));
		const char *name = mrc_oper_verb_name((enum mrc_oper_verb)v);
		printf("as uid %d: %-14s %s %s\n", NOBODY, name,
		       in.rc ? mrc_oper_errno_name(in.rc) : "ok", in.msg);
		if (mrc_oper_verb_is_admin((enum mrc_oper_verb)v)) {
			char want[96];
			snprintf(want, sizeof(want), "'%s' is an admin verb", name);
			assert_int_equal(in.rc, -EPERM);
			if (!strstr(in.msg, want))
				fail_msg("'%s': wanted \"%s\" in \"%s\"", name, want, in.msg);
			refused++;
		} else if (in.rc == -EPERM || in.rc == -ENOSYS || in.rc == -ETIMEDOUT ||
			   in.rc == -EPIPE || in.rc == -EBADMSG) {
			fail_msg("read-only verb '%s' refused to a socket_group member: %s", name, in.msg);
		}
	}
	close(pfd);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_true(refused > 0);    /* the definition has admin verbs */

	/* The refused plane-disable 0 changed nothing. */
	int fd = mrcd_spawn_connect(d.ctl);
	assert_true(fd >= 0);
	assert_int_equal(send(fd, "{\"v\":1,\"id\":3,\"verb\":\"planes\"}", 30, MSG_NOSIGNAL), 30);
	static char buf[1 << 20];
	struct pollfd pf = { .fd = fd, .events = POLLIN };
	assert_int_equal(poll(&pf, 1, MRCD_SPAWN_WAIT_MS), 1);
	ssize_t n = recv(fd, buf, sizeof(buf) - 1, 0);
	assert_true(n > 0);
	buf[n] = 0;
	close(fd);
	if (!strstr(buf, "\"admin\":\"enabled\"") || strstr(buf, "\"admin\":\"disabled\""))
		fail_msg("plane admin state changed by a refused verb: %.400s", buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_every_verb_answered, stop_daemon),
		cmocka_unit_test_teardown(test_admin_verbs_refused, stop_daemon),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* tests/support/nccl_pairs.h */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "tests/support/nccl_pairs.h"

int nccl_pairs_daemon_start(struct mrcd_proc *d)
{
	const char *argv[] = { "--max_clients=64", NULL };
	if (mrcd_spawn_start(d, argv))
		return -1;
	setenv("MRC_SOCKET", d->sock, 1);
	return 0;
}

void nccl_pairs_daemon_stop(struct mrcd_proc *d)
{
	mrcd_spawn_stop(d);
	unsetenv("MRC_SOCKET");
}

int nccl_pairs_group_setup(void **state, struct mrcd_proc *d)
{
	*state = NULL;
	if (!mrcd_spawn_available())
		return 0;
	if (nccl_pairs_daemon_start(d))
		return -1;
	setenv("MRC_NCCL_BOUNCE_MB", "8", 1);
	*state = d;
	return 0;
}

int nccl_pairs_group_teardown(void **state)
{
	if (*state)
		nccl_pairs_daemon_stop(*state);
	unsetenv("MRC_NCCL_BOUNCE_MB");
	return 0;
}

unsigned nccl_connect_pairs(const ncclNet_v11_t *n, void *ctx, struct nccl_pair *p, int np)
{
	unsigned nulls = 0;
	for (int i = 0; i < np; i++) {
		memset(&p[i], 0, sizeof(p[i]));
		assert_int_equal(n->listen(ctx, 0, p[i].handle, &p[i].lc), ncclSuccess);
	}
	int64_t end = mrcd_spawn_now_ms() + MRCD_SPAWN_WAIT_MS;
	for (int left = 2 * np; left;) {
		if (mrcd_spawn_now_ms() >= end)
			fail_msg("%d connects/accepts not done", left);
		for (int i = 0; i < np; i++) {
			ncclNetDeviceHandle_t *dev = NULL;
			if (!p[i].sc) {
				assert_int_equal(n->connect(ctx, 0, p[i].handle, &p[i].sc, &dev),
						 ncclSuccess);
				left -= p[i].sc != NULL;
				nulls += p[i].sc == NULL;
			}
			if (!p[i].rc) {
				assert_int_equal(n->accept(p[i].lc, &p[i].rc, &dev), ncclSuccess);
				left -= p[i].rc != NULL;
				nulls += p[i].rc == NULL;
			}
		}
	}
	return nulls;
}

json_t *nccl_pairs_ctl(const struct mrcd_proc *d, enum mrc_oper_verb v)
{
	int fd = mrcd_spawn_connect(d->ctl);
	assert_true(fd >= 0);
	struct mrc_oper_req r;
	mrc_oper_req_init(&r);
	r.verb = v;
	r.id = 77;
	char *s = mrc_oper_req_encode(&r);
	assert_non_null(s);
	assert_true(send(fd, s, strlen(s), MSG_NOSIGNAL) == (ssize_t)strlen(s));
	free(s);
	struct pollfd pf = { .fd = fd, .events = POLLIN };
	assert_int_equal(poll(&pf, 1, MRCD_SPAWN_WAIT_MS), 1);
	static char buf[MRC_OPER_MSG_MAX];
	ssize_t n = recv(fd, buf, sizeof(buf), 0);
	close(fd);
	assert_true(n > 0);
	uint32_t id = 0;
	json_t *res = NULL;
	char msg[256] = "";
	int rc = mrc_oper_reply_parse(buf, (size_t)n, &id, &res, msg, sizeof(msg));
	if (rc)
		fail_msg("%s: %d %s", mrc_oper_verb_name(v), rc, msg);
	return res;
}

uint64_t nccl_pairs_engine_stat(const struct mrcd_proc *d, const char *name)
{
	json_t *res = nccl_pairs_ctl(d, MRC_OPER_STATS);
	json_t *x = json_object_get(json_object_get(res, "engine"), name);
	assert_true(json_is_integer(x));
	uint64_t v = (uint64_t)json_integer_value(x);
	json_decref(res);
	return v;
}

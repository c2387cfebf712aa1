/* tests/support/nccl_pairs.h */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
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

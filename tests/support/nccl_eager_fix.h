/* The fixture the eager-message tests of libnccl-net-mrc.so share
 * (tests/test_nccl_eager.c: the protocol; tests/test_nccl_tags.c: NCCL's
 * per-tag order; tests/test_nccl_hostile.c: a hostile peer), included
 * once per test program: a real mrcd on loopback, and the test build of
 * the plugin (build/tests/libnccl-net-mrcfake.so: the same plugin, which
 * also exports mrcn_comm_stats, its per-comm counters).
 * MRC_NCCL_TEST_PLUGIN names another plugin to run them against (e.g. an
 * older build, to see them fail). */
#ifndef MRC_TESTS_SUPPORT_NCCL_EAGER_FIX_H
#define MRC_TESTS_SUPPORT_NCCL_EAGER_FIX_H

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include <mrc/mrc.h>

#include "tests/support/mrcd_spawn.h"
#include "tests/support/nccl_pairs.h"
#include "tests/support/seeded.h"
#include "tests/support/skip.h"

#include "tools/nccl-harness/drive.h"
#include "nccl/proto.h"

#define NC(call) assert_int_equal((call), ncclSuccess)

typedef int mrcn_comm_stats_fn(void *comm, struct mrcn_stats *out);
static char plugin_path[PATH_MAX];
static struct ndrv drv;
static mrcn_comm_stats_fn *stats_fn;
static struct mrcd_proc mrcd_d;

static inline int setup_daemon(void **state)
{
	unsetenv("MRC_NCCL_EAGER_BYTES");       /* the default: 64 KiB */
	return nccl_pairs_group_setup(state, &mrcd_d);
}

static inline int teardown_daemon(void **state)
{
	return nccl_pairs_group_teardown(state);
}

#define NEED(state) NCCL_PAIRS_NEED(state, drv.net, plugin_path)

static inline struct mrcn_stats stats(void *comm)
{
	struct mrcn_stats s;
	memset(&s, 0, sizeof(s));
	CHECK(stats_fn, "%s exports no mrcn_comm_stats", plugin_path);
	assert_int_equal(stats_fn(comm, &s), 0);
	return s;
}

/* The sender has the receiver's eager ring (advertised at accept). */
static inline void wait_ring(void *sc)
{
	int64_t end = mrcd_spawn_now_ms() + MRCD_SPAWN_WAIT_MS;
	while (stats(sc).ring_slots != MRCN_EG_SLOTS)
		CHECK(mrcd_spawn_now_ms() < end, "the receiver's eager ring was never advertised");
}

/* The receiver holds want eager messages no irecv asked for yet. */
static inline void wait_unexpected(void *rc, uint64_t want)
{
	int64_t end = mrcd_spawn_now_ms() + MRCD_SPAWN_WAIT_MS;
	while (stats(rc).unexpected < want)
		CHECK(mrcd_spawn_now_ms() < end, "%llu eager messages never arrived",
		      (unsigned long long)want);
}

static inline void wait_req(const ncclNet_v11_t *n, void *req, int *sizes)
{
	int64_t end = mrcd_spawn_now_ms() + MRCD_SPAWN_WAIT_MS;
	for (int done = 0; !done;) {
		NC(n->test(req, &done, sizes));
		CHECK(done || mrcd_spawn_now_ms() < end, "request not done");
	}
}

/* isend retried while it returns NULL (NCCL's proxy does the same). */
static inline void *send_retry(const ncclNet_v11_t *n, void *sc, void *buf, size_t len, int tag, void *mh)
{
	int64_t end = mrcd_spawn_now_ms() + MRCD_SPAWN_WAIT_MS;
	void *req = NULL;
	for (;;) {
		NC(n->isend(sc, buf, len, tag, mh, NULL, &req));
		if (req)
			return req;
		CHECK(mrcd_spawn_now_ms() < end, "isend of tag %d stays NULL", tag);
	}
}

static inline void *recv1(const ncclNet_v11_t *n, void *rc, void *buf, size_t cap, int tag, void *mh)
{
	void *data[1] = { buf }, *req = NULL;
	size_t sizes[1] = { cap };
	int tags[1] = { tag };
	NC(n->irecv(rc, 1, data, sizes, tags, &mh, NULL, &req));
	CHECK(req, "irecv of tag %d returned NULL", tag);
	return req;
}

static inline void fill(uint8_t *b, size_t n, uint8_t salt)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(rnd() ^ salt);
}

static inline void close_pair(const ncclNet_v11_t *n, struct nccl_pair *p)
{
	NC(n->closeSend(p->sc));
	NC(n->closeRecv(p->rc));
	NC(n->closeListen(p->lc));
}

/* One comm pair on a fresh init (id: its commId), the ring advertised;
 * and its end: the buffers deregistered, the pair closed, finalize. */
static inline const ncclNet_v11_t *open_pair(uint64_t id, void **ctx, struct nccl_pair *p)
{
	const ncclNet_v11_t *n = drv.net;
	NC(n->init(ctx, id, NULL, NULL, NULL));
	nccl_connect_pairs(n, *ctx, p, 1);
	wait_ring(p->sc);
	return n;
}

static inline void close_all(const ncclNet_v11_t *n, struct nccl_pair *p, void *ctx, void *smh,
			     void *rmh)
{
	NC(n->deregMr(p->sc, smh));
	NC(n->deregMr(p->rc, rmh));
	close_pair(n, p);
	NC(n->finalize(ctx));
}

#define BIG (256u << 10)     /* above the eager limit: the CTS path */

/* The program's main: the plugin loaded, tests run on one daemon. */
static inline int nccl_eager_main(const char *name, const struct CMUnitTest *t, size_t n)
{
	const char *alt = getenv("MRC_NCCL_TEST_PLUGIN");
	if (alt)
		snprintf(plugin_path, sizeof(plugin_path), "%s", alt);
	else if (mrcd_spawn_build_path(plugin_path, sizeof(plugin_path),
				       "tests/libnccl-net-mrcfake.so"))
		return 1;
	seed_init(name);
	char err[256];
	if (ndrv_load(&drv, plugin_path, err, sizeof(err)) == 0)
		stats_fn = (mrcn_comm_stats_fn *)dlsym(drv.dl, "mrcn_comm_stats");
	else
		memset(&drv, 0, sizeof(drv));
	int r = _cmocka_run_group_tests(name, t, n, setup_daemon, teardown_daemon);
	if (drv.net)
		ndrv_unload(&drv);
	return r;
}

#endif

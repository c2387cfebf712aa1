/* CUDA buffers in libnccl-net-mrc.so without a GPU: the plugin built with
 * a fake copy engine in place of libmrc-gpu's CUDA one
 * (build/tests/libnccl-net-mrcfake.so, tests/support/nccl_fake_cuda.c:
 * "device" memory is host memory, copies run only at their event's wait,
 * after an injected delay), against a real mrcd on loopback.  Checks:
 * NCCL_PTR_CUDA advertised only with a device; CUDA-typed registrations
 * driven end to end through the harness's verified rounds (every byte,
 * sizes, each message staged once each way, arenas pinned and released);
 * a failed device copy, on the send side and on the receive side, is the
 * request's error from test (within a deadline, never a hang); no device:
 * host only, CUDA refused; dma-buf refused.  And the real plugin on this
 * machine: host only unless a GPU is present. */
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

#include "tests/support/mrcd_spawn.h"
#include "tests/support/nccl_pairs.h"
#include "tests/support/nccl_fake_cuda.h"
#include "tests/support/seeded.h"
#include "tests/support/skip.h"

#include "tools/nccl-harness/drive.h"
#include "nccl/proto.h"

#define NC(call) assert_int_equal((call), ncclSuccess)
#define NPAIRS 3

static char fake_path[PATH_MAX], real_path[PATH_MAX];
static struct ndrv drv;
static mrcn_fake_cuda_set_fn *fake_set;
static mrcn_fake_cuda_stats_fn *fake_stats;

static struct mrcd_proc mrcd_d;

/* state: the daemon, or NULL when build/bin/mrcd is missing */
static int setup_daemon(void **state)
{
	return nccl_pairs_group_setup(state, &mrcd_d);
}

static int teardown_daemon(void **state)
{
	return nccl_pairs_group_teardown(state);
}

#define NEED(state) NCCL_PAIRS_NEED(state, drv.net, fake_path)

static void close_pairs(const ncclNet_v11_t *n, struct nccl_pair *p, int np)
{
	for (int i = 0; i < np; i++) {
		NC(n->closeSend(p[i].sc));
		NC(n->closeRecv(p[i].rc));
		NC(n->closeListen(p[i].lc));
	}
}

/* Verified rounds with every buffer registered NCCL_PTR_CUDA. */
static void test_cuda_rounds(void **state)
{
	NEED(state);
	const ncclNet_v11_t *n = drv.net;
	fake_set(1, 0, 50);
	void *ctx = NULL;
	NC(n->init(&ctx, 1, NULL, NULL, NULL));
	ncclNetProperties_v11_t pr;
	NC(n->getProperties(0, &pr));
	assert_int_equal(pr.ptrSupport, NCCL_PTR_HOST | NCCL_PTR_CUDA);
	struct nccl_pair p[NPAIRS];
	nccl_connect_pairs(n, ctx, p, NPAIRS);
	struct ndrv_link sends[NPAIRS], recvs[NPAIRS];
	for (int i = 0; i < NPAIRS; i++) {
		sends[i] = (struct ndrv_link){ 0, 0, i, p[i].sc };
		recvs[i] = (struct ndrv_link){ 0, 0, i, p[i].rc };
	}
	struct ndrv_stats st = { 0 };
	char err[256];
	uint64_t seed = g_seed;
	for (uint64_t round = 0; round < 6; round++) {
		int r = ndrv_round_typed(n, sends, NPAIRS, recvs, NPAIRS, seed, round, 1u << 20, 8,
					 MRCD_SPAWN_WAIT_MS, NCCL_PTR_CUDA, &st, err, sizeof(err));
		CHECK(r == 0, "round %llu: %s", (unsigned long long)round, err);
	}
	struct mrcn_fake_stats f;
	fake_stats(&f);
	print_message("%llu messages, %llu bytes; %llu d2h %llu h2d copies, %llu waits\n",
		      (unsigned long long)st.msgs, (unsigned long long)st.bytes,
		      (unsigned long long)f.d2h, (unsigned long long)f.h2d,
		      (unsigned long long)f.waits);
	assert_true(st.msgs > 20 && st.bytes > 0 && st.grouped > 0 && st.zero_msgs > 0);
	/* each byte went device -> arena on the send side and arena ->
	 * device on the receive side, once: no host memcpy of "device" data */
	assert_int_equal(f.d2h_bytes, st.bytes);
	assert_int_equal(f.h2d_bytes, st.bytes);
	assert_int_equal(f.failed, 0);
	/* one engine per comm that carried CUDA data, its arena pinned */
	assert_int_equal(f.engines, 2 * NPAIRS + 1);   /* + the probe at init */
	assert_int_equal(f.pinned, 2 * NPAIRS);
	/* iflush: nothing left to flush once test said done */
	void *freq = (void *)1;
	NC(n->iflush(p[0].rc, 1, NULL, NULL, NULL, &freq));
	assert_null(freq);
	close_pairs(n, p, NPAIRS);
	NC(n->finalize(ctx));
	fake_stats(&f);
	/* the helper threads released every engine and unpinned every arena */
	assert_int_equal(f.destroyed, f.engines);
	assert_int_equal(f.unpinned, f.pinned);
}

static void wait_error(const ncclNet_v11_t *n, void *req, const char *what)
{
	int64_t end = mrcd_spawn_now_ms() + MRCD_SPAWN_WAIT_MS;
	for (;;) {
		int done = 0, sz = 0;
		ncclResult_t r = n->test(req, &done, &sz);
		if (r != ncclSuccess) {
			assert_int_equal(r, ncclUnhandledCudaError);
			return;
		}
		CHECK(!done, "%s: a failed copy reported done", what);
		CHECK(mrcd_spawn_now_ms() < end, "%s: no error from test", what);
	}
}

/* A device copy that fails (as an async CUDA error at the event wait):
 * the request's test returns ncclUnhandledCudaError; the send side posts
 * nothing, the receive side reports nothing done. */
static void test_cuda_copy_fail(void **state)
{
	NEED(state);
	const ncclNet_v11_t *n = drv.net;
	fake_set(1, 0, 0);
	void *ctx = NULL;
	NC(n->init(&ctx, 1, NULL, NULL, NULL));
	struct nccl_pair p[2];
	nccl_connect_pairs(n, ctx, p, 2);
	static uint8_t sb[3000], rb[4096];
	memset(sb, 0x5a, sizeof(sb));
	void *smh, *rmh, *cmh, *sreq = NULL, *rreq = NULL;
	int64_t end = mrcd_spawn_now_ms() + MRCD_SPAWN_WAIT_MS;

	/* receive side: a CUDA receive fed by a host send; the first copy
	 * from now on (its arena -> device copy) fails */
	NC(n->regMr(p[0].sc, sb, sizeof(sb), NCCL_PTR_HOST, &smh));
	NC(n->regMr(p[0].rc, rb, sizeof(rb), NCCL_PTR_CUDA, &rmh));
	fake_set(1, 1, 0);
	void *data[1] = { rb };
	size_t sizes[1] = { sizeof(rb) };
	int tags[1] = { 7 };
	NC(n->irecv(p[0].rc, 1, data, sizes, tags, &rmh, NULL, &rreq));
	assert_non_null(rreq);
	while (!sreq) {
		NC(n->isend(p[0].sc, sb, sizeof(sb), 7, smh, NULL, &sreq));
		CHECK(sreq || mrcd_spawn_now_ms() < end, "isend");
	}
	wait_error(n, rreq, "receive");
	struct mrcn_fake_stats f;
	fake_stats(&f);
	assert_int_equal(f.failed, 1);           /* the fault happened */
	assert_int_equal(f.h2d, 1);
	NC(n->deregMr(p[0].sc, smh));
	NC(n->deregMr(p[0].rc, rmh));

	/* send side: a CUDA send whose device -> arena copy fails */
	NC(n->regMr(p[1].sc, sb, sizeof(sb), NCCL_PTR_CUDA, &cmh));
	NC(n->regMr(p[1].rc, rb, sizeof(rb), NCCL_PTR_HOST, &rmh));
	fake_set(1, 1, 0);
	rreq = sreq = NULL;
	NC(n->irecv(p[1].rc, 1, data, sizes, tags, &rmh, NULL, &rreq));
	while (!sreq) {
		NC(n->isend(p[1].sc, sb, sizeof(sb), 7, cmh, NULL, &sreq));
		CHECK(sreq || mrcd_spawn_now_ms() < end, "isend");
	}
	wait_error(n, sreq, "send");
	fake_stats(&f);
	assert_int_equal(f.failed, 1);
	assert_int_equal(f.d2h, 1);
	assert_int_equal(f.d2h_bytes, 0);        /* nothing copied, nothing sent */
	NC(n->deregMr(p[1].sc, cmh));
	NC(n->deregMr(p[1].rc, rmh));
	close_pairs(n, p, 2);
	NC(n->finalize(ctx));
}

/* No CUDA device at init: host only, CUDA refused; dma-buf refused. */
static void test_cuda_no_device(void **state)
{
	NEED(state);
	const ncclNet_v11_t *n = drv.net;
	fake_set(0, 0, 0);
	void *ctx = NULL;
	NC(n->init(&ctx, 1, NULL, NULL, NULL));
	ncclNetProperties_v11_t pr;
	NC(n->getProperties(0, &pr));
	assert_int_equal(pr.ptrSupport, NCCL_PTR_HOST);
	static uint8_t buf[256];
	void *mh;
	assert_int_equal(n->regMr(NULL, buf, sizeof(buf), NCCL_PTR_CUDA, &mh), ncclInternalError);
	NC(n->regMr(NULL, buf, sizeof(buf), NCCL_PTR_HOST, &mh));
	NC(n->deregMr(NULL, mh));
	NC(n->finalize(ctx));
	/* with a device, a dma-buf is still refused (no GPUDirect datapath),
	 * and CUDA without an fd is accepted */
	fake_set(1, 0, 0);
	NC(n->init(&ctx, 1, NULL, NULL, NULL));
	assert_int_equal(n->regMrDmaBuf(NULL, buf, sizeof(buf), NCCL_PTR_CUDA, 0, 3, &mh),
			 ncclInternalError);
	NC(n->regMrDmaBuf(NULL, buf, sizeof(buf), NCCL_PTR_CUDA, 0, -1, &mh));
	NC(n->deregMr(NULL, mh));
	NC(n->finalize(ctx));
}

/* The real plugin: CUDA pointers only where a GPU is (none here: host). */
static void test_real_plugin(void **state)
{
	if (!*state)
		MRC_SKIP("%s is not built", mrcd_spawn_bin());
	struct ndrv d;
	char err[256];
	if (ndrv_load(&d, real_path, err, sizeof(err)))
		MRC_SKIP("%s", err);
	void *ctx = NULL;
	NC(d.net->init(&ctx, 1, NULL, NULL, NULL));
	ncclNetProperties_v11_t pr;
	NC(d.net->getProperties(0, &pr));
	int gpu = (pr.ptrSupport & NCCL_PTR_CUDA) != 0;
	print_message("real plugin: pointer support %s\n", gpu ? "host+cuda" : "host");
	assert_true(pr.ptrSupport == NCCL_PTR_HOST || pr.ptrSupport == (NCCL_PTR_HOST | NCCL_PTR_CUDA));
	void *mh;
	static uint8_t buf[64];
	if (!gpu)
		assert_int_equal(d.net->regMr(NULL, buf, sizeof(buf), NCCL_PTR_CUDA, &mh),
				 ncclInternalError);
	NC(d.net->finalize(ctx));
	ndrv_unload(&d);
}

int main(void)
{
	if (mrcd_spawn_build_path(fake_path, sizeof(fake_path), "tests/libnccl-net-mrcfake.so") ||
	    mrcd_spawn_build_path(real_path, sizeof(real_path), "lib/libnccl-net-mrc.so"))
		return 1;
	seed_init("test_nccl_cuda");
	char err[256];
	if (ndrv_load(&drv, fake_path, err, sizeof(err)) == 0) {
		fake_set = (mrcn_fake_cuda_set_fn *)dlsym(drv.dl, "mrcn_fake_cuda_set");
		fake_stats = (mrcn_fake_cuda_stats_fn *)dlsym(drv.dl, "mrcn_fake_cuda_stats");
		if (!fake_set || !fake_stats) {
			fprintf(stderr, "%s: no fake controls\n", fake_path);
			return 1;
		}
	} else {
		memset(&drv, 0, sizeof(drv));
	}
	const struct CMUnitTest t[] = {
		cmocka_unit_test(test_cuda_rounds),
		cmocka_unit_test(test_cuda_copy_fail),
		cmocka_unit_test(test_cuda_no_device),
		cmocka_unit_test(test_real_plugin),
	};
	int r = cmocka_run_group_tests_name("nccl plugin, CUDA buffers (fake copy engine)", t,
					    setup_daemon, teardown_daemon);
	if (drv.net)
		ndrv_unload(&drv);
	return r;
}

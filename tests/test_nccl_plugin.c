/* libnccl-net-mrc.so (nccl/): loaded by NCCL's rules (NCCL_NET_PLUGIN=mrc
 * -> libnccl-net-mrc.so on the library path, ncclNetPlugin_v11/_v10/_v9,
 * name and table checks), init refused without a daemon, the bounce arena
 * against a model, and the whole plugin against a real mrcd on loopback
 * with both ends in this process: non-blocking connect/accept, an isend
 * before its receive (NULL request, or eager at once), grouped tagged receives larger than
 * the sends with sizes from test, irecv returning NULL when full, refused
 * pointer types, closes with operations in flight, many comms, the v9
 * adapter.  The daemon parts are skipped when build/bin/mrcd is missing. */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include "tests/support/mrcd_spawn.h"
#include "tests/support/nccl_pairs.h"
#include "tests/support/skip.h"
#include "tests/support/seeded.h"

#include "nccl/arena.h"
#include "tools/nccl-harness/drive.h"
#include "nccl/proto.h"

static char libdir[PATH_MAX];
static struct ndrv drv;

static void test_loader(void **state)
{
	(void)state;
	char err[512];
	/* what NCCL does for NCCL_NET_PLUGIN=mrc */
	assert_int_equal(ndrv_load(&drv, "mrc", err, sizeof(err)), 0);
	assert_string_equal(drv.path, "libnccl-net-mrc.so");
	assert_non_null(drv.net);
	assert_non_null(drv.v10);
	assert_non_null(drv.v9);
	assert_non_null(drv.v8);
	assert_string_equal(drv.v8->name, "mrc");
	assert_string_equal(drv.net->name, "mrc");
	assert_string_equal(drv.v10->name, "mrc");
	assert_string_equal(drv.v9->name, "mrc");
	/* resolved from this build's lib directory */
	Dl_info di;
	assert_true(dladdr(drv.net, &di));
	char want[PATH_MAX + 32];
	snprintf(want, sizeof(want), "%s/libnccl-net-mrc.so", libdir);
	char real_got[PATH_MAX], real_want[PATH_MAX];
	assert_non_null(realpath(di.dli_fname, real_got));
	assert_non_null(realpath(want, real_want));
	assert_string_equal(real_got, real_want);
	/* every v11 entry NCCL calls is there; device offload is not */
	const ncclNet_v11_t *n = drv.net;
	assert_true(n->init && n->devices && n->getProperties && n->listen && n->connect &&
		    n->accept && n->regMr && n->regMrDmaBuf && n->deregMr && n->isend && n->irecv &&
		    n->iflush && n->test && n->closeSend && n->closeRecv && n->closeListen &&
		    n->makeVDevice && n->finalize && n->setNetAttr);
	assert_null(n->getDeviceMr);
	assert_null(n->irecvConsumed);
	/* only the plugin's tables are exported */
	assert_null(dlsym(drv.dl, "mrc_open"));
	/* a full path is used as given; an unknown name is not found */
	struct ndrv d2;
	assert_int_equal(ndrv_load(&d2, want, err, sizeof(err)), 0);
	assert_ptr_equal(d2.net, drv.net);
	ndrv_unload(&d2);
	assert_int_equal(ndrv_load(&d2, "no-such-net", err, sizeof(err)), -ENOENT);
}

static void test_no_daemon(void **state)
{
	(void)state;
	char dir[] = "/tmp/mrc-nccl-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char sock[128];
	snprintf(sock, sizeof(sock), "%s/none.sock", dir);
	setenv("MRC_SOCKET", sock, 1);
	void *ctx = NULL;
	/* NCCL skips a plugin whose init fails */
	assert_int_not_equal(drv.net->init(&ctx, 1, NULL, NULL, NULL), ncclSuccess);
	unsetenv("MRC_SOCKET");
	rmdir(dir);
}

/* The arena against a model: live allocations never overlap, lie inside
 * the arena, and everything comes back once all are freed. */
static void test_arena(void **state)
{
	(void)state;
	static struct mrcn_arena a;
	const uint64_t size = 1 << 16;
	mrcn_arena_init(&a, size);
	int live[MRCN_ARENA_Q], nlive = 0;
	uint64_t len[MRCN_ARENA_Q];
	unsigned nospc = 0, ok = 0;
	assert_int_equal(mrcn_arena_alloc(&a, size + 1), -ENOSPC);
	assert_int_equal(mrcn_arena_alloc(&a, 0), -ENOSPC);
	for (int step = 0; step < 20000; step++) {
		if (nlive && (rnd() % 2 || nlive == MRCN_ARENA_Q)) {
			int i = (int)(rnd() % (uint64_t)nlive);
			mrcn_arena_free(&a, live[i]);
			live[i] = live[--nlive];
			len[i] = len[nlive];
			continue;
		}
		uint64_t l = 1 + rnd() % (size / 4);
		int h = mrcn_arena_alloc(&a, l);
		if (h < 0) {
			CHECK(h == -ENOSPC, "alloc: %d", h);
			nospc++;
			continue;
		}
		ok++;
		uint64_t off = mrcn_arena_off(&a, h);
		CHECK(off + l <= size, "allocation [%llu, +%llu) outside", (unsigned long long)off,
		      (unsigned long long)l);
		for (int i = 0; i < nlive; i++) {
			uint64_t o = mrcn_arena_off(&a, live[i]);
			CHECK(off + l <= o || o + len[i] <= off, "overlap at step %d", step);
		}
		live[nlive] = h;
		len[nlive++] = l;
	}
	CHECK(ok > 1000 && nospc > 0, "ok %u nospc %u: both paths exercised", ok, nospc);
	while (nlive)
		mrcn_arena_free(&a, live[--nlive]);
	assert_int_equal(mrcn_arena_used(&a), 0);
	assert_true(mrcn_arena_alloc(&a, size) >= 0);
}

/* ---- against mrcd ------------------------------------------------------- */
struct env {
	struct mrcd_proc d;
	void *ctx;
};

static int setup_daemon(void **state)
{
	*state = NULL;
	if (!mrcd_spawn_available())
		return 0;
	struct env *e = calloc(1, sizeof(*e));
	if (nccl_pairs_daemon_start(&e->d)) {
		free(e);
		return -1;
	}
	unsetenv("MRC_NCCL_BOUNCE_MB");
	*state = e;
	return 0;
}

static int teardown_daemon(void **state)
{
	struct env *e = *state;
	if (e) {
		nccl_pairs_daemon_stop(&e->d);
		free(e);
	}
	return 0;
}

#define NEED_DAEMON(state) do { if (!*(state)) MRC_SKIP("%s is not built", mrcd_spawn_bin()); } while (0)
#define NC(call) assert_int_equal((call), ncclSuccess)
#define NCOMMS 6

static void wait_req(const ncclNet_v11_t *n, void *req, int *sizes)
{
	int64_t end = mrcd_spawn_now_ms() + MRCD_SPAWN_WAIT_MS;
	for (int done = 0; !done;) {
		NC(n->test(req, &done, sizes));
		CHECK(done || mrcd_spawn_now_ms() < end, "request not done");
	}
}

static void test_plugin_loopback(void **state)
{
	NEED_DAEMON(state);
	struct env *e = *state;
	const ncclNet_v11_t *n = drv.net;
	ncclNetCommConfig_t cfg = { .trafficClass = -1 };
	NC(n->init(&e->ctx, 42, &cfg, NULL, NULL));
	int ndev = 0;
	NC(n->devices(&ndev));
	assert_int_equal(ndev, 1);
	ncclNetProperties_v11_t pr;
	NC(n->getProperties(0, &pr));
	assert_int_equal(pr.ptrSupport, NCCL_PTR_HOST);
	assert_int_equal(pr.maxRecvs, MRCN_MAX_RECVS);
	assert_int_equal(pr.maxP2pBytes, MRCN_MAX_MSG);
	assert_true(pr.maxComms > NCOMMS && pr.speed > 0);
	assert_int_not_equal(n->getProperties(1, &pr), ncclSuccess);
	ncclNetAttr_v11_t attr = { .op = 1 };
	NC(n->setNetAttr(e->ctx, &attr));
	ncclNetVDeviceProps_t vp = { 1, { 0 } };
	int vd = -1;
	NC(n->makeVDevice(&vd, &vp));
	assert_int_equal(vd, 0);

	struct nccl_pair p[NCOMMS];
	unsigned nulls = nccl_connect_pairs(n, e->ctx, p, NCOMMS);
	print_message("connected %d pairs; %u calls returned no comm yet\n", NCOMMS, nulls);

	/* refused pointer types */
	static uint8_t buf[4096];
	void *mh;
	assert_int_not_equal(n->regMr(p[0].sc, buf, sizeof(buf), NCCL_PTR_CUDA, &mh), ncclSuccess);
	assert_int_not_equal(n->regMr(p[0].sc, buf, sizeof(buf), NCCL_PTR_DMABUF, &mh), ncclSuccess);
	assert_int_not_equal(n->regMrDmaBuf(p[0].rc, buf, sizeof(buf), NCCL_PTR_HOST, 0, 0, &mh),
			     ncclSuccess);

	/* an isend before its receive: NULL, or eager at once; through once
	 * posted */
	void *smh, *rmh, *sreq = NULL, *rreq = NULL;
	static uint8_t sb[3000], rb[5000];
	for (size_t i = 0; i < sizeof(sb); i++)
		sb[i] = (uint8_t)rnd();
	memset(rb, 0xee, sizeof(rb));
	NC(n->regMr(p[0].sc, sb, sizeof(sb), NCCL_PTR_HOST, &smh));
	NC(n->regMr(p[0].rc, rb, sizeof(rb), NCCL_PTR_HOST, &rmh));
	/* an eager send (the receiver's ring advertised) goes at once */
	NC(n->isend(p[0].sc, sb, sizeof(sb), 5, smh, NULL, &sreq));
	void *data[1] = { rb };
	size_t sizes[1] = { sizeof(rb) };
	int tags[1] = { 5 };
	NC(n->irecv(p[0].rc, 1, data, sizes, tags, &rmh, NULL, &rreq));
	assert_non_null(rreq);
	int64_t end = mrcd_spawn_now_ms() + MRCD_SPAWN_WAIT_MS;
	while (!sreq) {
		NC(n->isend(p[0].sc, sb, sizeof(sb), 5, smh, NULL, &sreq));
		CHECK(sreq || mrcd_spawn_now_ms() < end, "isend stays NULL");
	}
	int ssz = 0, rsz = 0;
	wait_req(n, sreq, &ssz);
	wait_req(n, rreq, &rsz);
	assert_int_equal(ssz, sizeof(sb));
	assert_int_equal(rsz, sizeof(sb));       /* the send's size, not the receive's */
	assert_memory_equal(rb, sb, sizeof(sb));
	assert_int_equal(rb[sizeof(sb)], 0xee);
	void *freq = (void *)1;
	int fsz[1] = { rsz };
	NC(n->iflush(p[0].rc, 1, data, fsz, &rmh, &freq));
	assert_null(freq);
	/* a send larger than its receive is refused, not truncated */
	rreq = sreq = NULL;
	sizes[0] = 100;
	NC(n->irecv(p[0].rc, 1, data, sizes, tags, &rmh, NULL, &rreq));
	assert_non_null(rreq);
	/* (or, sent eagerly before its CTS came, the receive fails) */
	end = mrcd_spawn_now_ms() + MRCD_SPAWN_WAIT_MS;
	ncclResult_t r;
	while ((r = n->isend(p[0].sc, sb, 200, 5, smh, NULL, &sreq)) == ncclSuccess && !sreq)
		CHECK(mrcd_spawn_now_ms() < end, "isend never saw the receive");
	if (sreq) {
		int dn = 0;
		NC(n->test(sreq, &dn, NULL));
		assert_int_equal(dn, 1);
		while ((r = n->test(rreq, &dn, NULL)) == ncclSuccess && !dn)
			CHECK(mrcd_spawn_now_ms() < end, "the oversized eager message never came");
		sreq = NULL;
	}
	assert_int_equal(r, ncclInvalidUsage);
	assert_null(sreq);
	/* too many grouped receives */
	void *d9[9] = { 0 }, *m9[9] = { 0 };
	size_t s9[9] = { 0 };
	int t9[9] = { 0 };
	assert_int_equal(n->irecv(p[1].rc, 9, d9, s9, t9, m9, NULL, &rreq), ncclInvalidArgument);

	/* rounds over every pair, both ends here */
	struct ndrv_link sl[NCOMMS], rl[NCOMMS];
	for (int i = 1; i < NCOMMS; i++) {
		sl[i - 1] = (struct ndrv_link){ 0, 1, i, p[i].sc };
		rl[i - 1] = (struct ndrv_link){ 0, 1, i, p[i].rc };
	}
	struct ndrv_stats st = { 0 };
	char err[256];
	for (int k = 0; k < 8; k++)
		CHECK(ndrv_round(n, sl, NCOMMS - 1, rl, NCOMMS - 1, g_seed, (uint64_t)k, 1 << 20, 8,
				 MRCD_SPAWN_WAIT_MS, &st, err, sizeof(err)) == 0, "%s", err);
	print_message("%llu messages, %llu bytes; grouped %llu, larger %llu, isend NULL %llu\n",
		      (unsigned long long)st.msgs, (unsigned long long)st.bytes,
		      (unsigned long long)st.grouped, (unsigned long long)st.larger_recvs,
		      (unsigned long long)st.isend_null);
	CHECK(st.grouped > 0 && st.larger_recvs > 0 && st.msgs > 20, "behaviours exercised");

	/* irecv returns NULL when its comm is full; then close with
	 * receives and sends in flight */
	static uint8_t many[64][64];
	int m = 0;
	for (; m < 64; m++) {
		void *dm[1] = { many[m] };
		size_t sm[1] = { 64 };
		int tm[1] = { 100 + m };
		NC(n->irecv(p[2].rc, 1, dm, sm, tm, &rmh, NULL, &rreq));
		if (!rreq)
			break;
	}
	CHECK(m > 0 && m < 64, "irecv returned NULL after %d receives", m);
	int sent = 0;
	end = mrcd_spawn_now_ms() + MRCD_SPAWN_WAIT_MS;
	while (sent < m / 2) {
		NC(n->isend(p[2].sc, sb, 64, 100 + sent, smh, NULL, &sreq));
		sent += sreq != NULL;
		CHECK(mrcd_spawn_now_ms() < end, "in-flight sends");
	}
	NC(n->deregMr(p[0].sc, smh));
	NC(n->deregMr(p[0].rc, rmh));
	for (int i = 0; i < NCOMMS; i++) {
		NC(n->closeSend(p[i].sc));
		NC(n->closeRecv(p[i].rc));
		NC(n->closeListen(p[i].lc));
	}
	/* still usable afterwards */
	nccl_connect_pairs(n, e->ctx, p, 1);
	sl[0] = (struct ndrv_link){ 0, 1, 0, p[0].sc };
	rl[0] = (struct ndrv_link){ 0, 1, 0, p[0].rc };
	CHECK(ndrv_round(n, sl, 1, rl, 1, g_seed, 99, 1 << 20, 8, MRCD_SPAWN_WAIT_MS, &st, err,
			 sizeof(err)) == 0, "after closes: %s", err);
	NC(n->closeSend(p[0].sc));
	NC(n->closeRecv(p[0].rc));
	NC(n->closeListen(p[0].lc));
	/* a listen comm closed with a connection pending */
	void *lc, *sc = NULL;
	uint8_t h[NCCL_NET_HANDLE_MAXSIZE];
	NC(n->listen(e->ctx, 0, h, &lc));
	ncclNetDeviceHandle_t *dev = NULL;
	NC(n->connect(e->ctx, 0, h, &sc, &dev));
	end = mrcd_spawn_now_ms() + MRCD_SPAWN_WAIT_MS;
	while (!sc) {
		NC(n->connect(e->ctx, 0, h, &sc, &dev));
		CHECK(mrcd_spawn_now_ms() < end, "connect");
	}
	NC(n->closeListen(lc));
	NC(n->closeSend(sc));
	NC(n->finalize(e->ctx));
}

/* MRC_NCCL_BOUNCE_MB shrinks the bounce regions, and maxP2pBytes with
 * them (a full grouped receive must fit); larger messages are refused. */
static void test_bounce_env(void **state)
{
	NEED_DAEMON(state);
	struct env *e = *state;
	const ncclNet_v11_t *n = drv.net;
	setenv("MRC_NCCL_BOUNCE_MB", "2", 1);
	NC(n->init(&e->ctx, 7, NULL, NULL, NULL));
	ncclNetProperties_v11_t pr;
	NC(n->getProperties(0, &pr));
	assert_int_equal(pr.maxP2pBytes, (2u << 20) / MRCN_MAX_RECVS);
	assert_int_equal(pr.maxCollBytes, (2u << 20) / MRCN_MAX_RECVS);
	struct nccl_pair p[1];
	nccl_connect_pairs(n, e->ctx, p, 1);
	struct ndrv_link sl = { 0, 1, 0, p[0].sc }, rl = { 0, 1, 0, p[0].rc };
	struct ndrv_stats st = { 0 };
	char err[256];
	for (int k = 0; k < 6; k++)
		CHECK(ndrv_round(n, &sl, 1, &rl, 1, g_seed, (uint64_t)k, pr.maxP2pBytes, 8,
				 MRCD_SPAWN_WAIT_MS, &st, err, sizeof(err)) == 0, "%s", err);
	static uint8_t big[(2u << 20) / MRCN_MAX_RECVS + 1];
	void *mh, *req = NULL;
	NC(n->regMr(p[0].sc, big, sizeof(big), NCCL_PTR_HOST, &mh));
	assert_int_equal(n->isend(p[0].sc, big, sizeof(big), 0, mh, NULL, &req), ncclInvalidArgument);
	assert_null(req);
	NC(n->deregMr(p[0].sc, mh));
	NC(n->closeSend(p[0].sc));
	NC(n->closeRecv(p[0].rc));
	NC(n->closeListen(p[0].lc));
	NC(n->finalize(e->ctx));
	unsetenv("MRC_NCCL_BOUNCE_MB");
}

/* The plugin's environment is checked: a value that is not a whole
 * number in range fails init (nothing opened: a later init works), and
 * good ones reach the properties. */
static void test_env_values(void **state)
{
	NEED_DAEMON(state);
	struct env *e = *state;
	const ncclNet_v11_t *n = drv.net;
	static const char *const bad[][2] = {
		{ "MRC_NCCL_BOUNCE_MB", "0" }, { "MRC_NCCL_BOUNCE_MB", "33" },
		{ "MRC_NCCL_BOUNCE_MB", "2x" }, { "MRC_NCCL_PLANES", "-1" },
		{ "MRC_NCCL_PLANES", "lots" }, { "MRC_NCCL_PLANE_MBPS", "99999999999" },
		{ "MRC_NCCL_LATENCY_US", " " }, { "MRC_NCCL_EAGER_BYTES", "-1" },
		{ "MRC_NCCL_EAGER_BYTES", "1048577" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		setenv(bad[i][0], bad[i][1], 1);
		if (n->init(&e->ctx, 7, NULL, NULL, NULL) != ncclInvalidArgument)
			fail_msg("%s='%s' was accepted", bad[i][0], bad[i][1]);
		unsetenv(bad[i][0]);
	}
	setenv("MRC_NCCL_PLANES", "4", 1);
	setenv("MRC_NCCL_PLANE_MBPS", "400000", 1);
	setenv("MRC_NCCL_LATENCY_US", "7", 1);
	NC(n->init(&e->ctx, 7, NULL, NULL, NULL));
	ncclNetProperties_v11_t pr;
	NC(n->getProperties(0, &pr));
	assert_int_equal(pr.speed, 4 * 400000);
	assert_true(pr.latency == 7.0f);
	NC(n->finalize(e->ctx));
	unsetenv("MRC_NCCL_PLANES");
	unsetenv("MRC_NCCL_PLANE_MBPS");
	unsetenv("MRC_NCCL_LATENCY_US");
}

/* The v9 and v8 tables (older NCCLs) drive the same plugin. */
/* Waits until the sender's comm holds the receiver's CTS for tag, without
 * consuming it: an isend larger than the receive is refused while the CTS
 * is there and returns NULL before. */
static void wait_cts(const ncclNet_v11_t *n, void *sc, void *buf, size_t big, int tag, void *mh)
{
	int64_t end = mrcd_spawn_now_ms() + MRCD_SPAWN_WAIT_MS;
	void *req = NULL;
	ncclResult_t r;
	while ((r = n->isend(sc, buf, big, tag, mh, NULL, &req)) == ncclSuccess) {
		assert_null(req);
		CHECK(mrcd_spawn_now_ms() < end, "the CTS of tag %d never came", tag);
	}
	assert_int_equal(r, ncclInvalidUsage);
}

/* isend's request is done once its data is in the bounce region, as a
 * socket send is once written, not when the peer acknowledged it: with
 * mrcd stopped (SIGSTOP) nothing can be acknowledged, yet test says done
 * at once.  The data still arrives once mrcd runs again, also when the
 * send comm was closed in between (closeSend lets data in flight through).
 * Before, test waited for the WRITE_IMM's completion: an ACK round trip,
 * or a held ACK's delay, in every send (docs/nccl.md "Send completion"). */
static void test_send_done_at_post(void **state)
{
	NEED_DAEMON(state);
	struct env *e = *state;
	const ncclNet_v11_t *n = drv.net;
	ncclNetCommConfig_t cfg = { .trafficClass = -1 };
	/* wait_cts probes for the CTS with an oversized send: eager off, or
	 * that send would go at once */
	setenv("MRC_NCCL_EAGER_BYTES", "0", 1);
	NC(n->init(&e->ctx, 43, &cfg, NULL, NULL));
	unsetenv("MRC_NCCL_EAGER_BYTES");
	struct nccl_pair p[1];
	nccl_connect_pairs(n, e->ctx, p, 1);
	static uint8_t sb[4096], rb[2][4096];
	for (size_t i = 0; i < sizeof(sb); i++)
		sb[i] = (uint8_t)rnd();
	memset(rb, 0xee, sizeof(rb));
	void *smh, *rmh, *sreq = NULL, *rreq[2] = { NULL, NULL };
	NC(n->regMr(p[0].sc, sb, sizeof(sb), NCCL_PTR_HOST, &smh));
	NC(n->regMr(p[0].rc, rb, sizeof(rb), NCCL_PTR_HOST, &rmh));
	for (int k = 0; k < 2; k++) {
		void *data[1] = { rb[k] };
		size_t sizes[1] = { 1000 };
		int tags[1] = { 20 + k };
		NC(n->irecv(p[0].rc, 1, data, sizes, tags, &rmh, NULL, &rreq[k]));
		assert_non_null(rreq[k]);
		wait_cts(n, p[0].sc, sb, 2000, 20 + k, smh);
	}
	/* 1: done at the post while mrcd cannot move anything */
	assert_int_equal(kill(e->d.pid, SIGSTOP), 0);
	NC(n->isend(p[0].sc, sb, 900, 20, smh, NULL, &sreq));
	assert_non_null(sreq);
	int done = 0, sz = -1;
	NC(n->test(sreq, &done, &sz));
	int rdone = 0;
	NC(n->test(rreq[0], &rdone, NULL));
	assert_int_equal(kill(e->d.pid, SIGCONT), 0);
	CHECK(done == 1 && sz == 900, "send not done at its post (done %d, size %d)", done, sz);
	assert_int_equal(rdone, 0);      /* really nothing moved meanwhile */
	wait_req(n, rreq[0], &sz);
	assert_int_equal(sz, 900);
	assert_memory_equal(rb[0], sb, 900);
	/* 2: closeSend right after a send that is done but not delivered */
	assert_int_equal(kill(e->d.pid, SIGSTOP), 0);
	NC(n->isend(p[0].sc, sb + 100, 800, 21, smh, NULL, &sreq));
	assert_non_null(sreq);
	NC(n->test(sreq, &done, &sz));
	assert_int_equal(done, 1);
	NC(n->deregMr(p[0].sc, smh));
	NC(n->closeSend(p[0].sc));
	assert_int_equal(kill(e->d.pid, SIGCONT), 0);
	wait_req(n, rreq[1], &sz);
	assert_int_equal(sz, 800);
	assert_memory_equal(rb[1], sb + 100, 800);
	assert_int_equal(rb[1][800], 0xee);
	NC(n->deregMr(p[0].rc, rmh));
	NC(n->closeRecv(p[0].rc));
	NC(n->closeListen(p[0].lc));
	NC(n->finalize(e->ctx));
}

/* A host buffer mrcd can map (a memfd mapping) is registered in place by
 * regMr and sent from without the bounce copy: its request is done only
 * at the WRITE's completion, since mrcd reads the buffer itself until
 * then.  With mrcd stopped the send is therefore not done (a bounced send
 * is: test_send_done_at_post); once mrcd runs, every byte arrives.  A
 * send below MRCN_ZC_MIN from the same buffer, and any send from a buffer
 * mrcd cannot map (static memory), still take the bounce path. */
static void test_send_zero_copy(void **state)
{
	NEED_DAEMON(state);
	struct env *e = *state;
	const ncclNet_v11_t *n = drv.net;
	ncclNetCommConfig_t cfg = { .trafficClass = -1 };
	NC(n->init(&e->ctx, 44, &cfg, NULL, NULL));
	struct nccl_pair p[1];
	nccl_connect_pairs(n, e->ctx, p, 1);
	const size_t len = 131072;
	int fd = memfd_create("nccl-host", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	assert_true(fd >= 0 && ftruncate(fd, (off_t)len) == 0);
	uint8_t *sb = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(sb != MAP_FAILED);
	for (size_t i = 0; i < len; i++)
		sb[i] = (uint8_t)rnd();
	static uint8_t rb[3][131072], bb[4096];
	memset(rb, 0xee, sizeof(rb));
	memcpy(bb, sb, sizeof(bb));
	void *smh, *bmh, *rmh, *sreq = NULL, *rreq[3] = { NULL, NULL, NULL };
	NC(n->regMr(p[0].sc, sb, len, NCCL_PTR_HOST, &smh));
	NC(n->regMr(p[0].sc, bb, sizeof(bb), NCCL_PTR_HOST, &bmh));
	NC(n->regMr(p[0].rc, rb, sizeof(rb), NCCL_PTR_HOST, &rmh));
	for (int k = 0; k < 3; k++) {
		void *data[1] = { rb[k] };
		size_t sizes[1] = { len };
		int tags[1] = { 40 + k };
		NC(n->irecv(p[0].rc, 1, data, sizes, tags, &rmh, NULL, &rreq[k]));
		assert_non_null(rreq[k]);
		wait_cts(n, p[0].sc, sb, len + 1, 40 + k, smh);
	}
	assert_int_equal(kill(e->d.pid, SIGSTOP), 0);
	NC(n->isend(p[0].sc, sb + 1000, 100000, 40, smh, NULL, &sreq));
	assert_non_null(sreq);
	int done = -1, sz = -1;
	NC(n->test(sreq, &done, &sz));
	/* below MRCN_ZC_MIN: copied even from the registered buffer */
	void *small = NULL;
	int sdone = -1;
	NC(n->isend(p[0].sc, sb + 7, MRCN_ZC_MIN - 1, 42, smh, NULL, &small));
	assert_non_null(small);
	NC(n->test(small, &sdone, NULL));
	assert_int_equal(kill(e->d.pid, SIGCONT), 0);
	CHECK(done == 0, "a send from the registered buffer was done while mrcd was stopped: "
	      "it was copied");
	CHECK(sdone == 1, "a small send from the registered buffer was not copied");
	wait_req(n, sreq, &sz);
	assert_int_equal(sz, 100000);
	wait_req(n, rreq[0], &sz);
	assert_int_equal(sz, 100000);
	assert_memory_equal(rb[0], sb + 1000, 100000);
	assert_int_equal(rb[0][100000], 0xee);
	wait_req(n, rreq[2], &sz);
	assert_int_equal(sz, (int)MRCN_ZC_MIN - 1);
	assert_memory_equal(rb[2], sb + 7, MRCN_ZC_MIN - 1);
	/* the static buffer: bounced, done at the post */
	void *breq = NULL;
	NC(n->isend(p[0].sc, bb, sizeof(bb), 41, bmh, NULL, &breq));
	assert_non_null(breq);
	wait_req(n, breq, &sz);
	wait_req(n, rreq[1], &sz);
	assert_int_equal(sz, (int)sizeof(bb));
	assert_memory_equal(rb[1], bb, sizeof(bb));
	NC(n->deregMr(p[0].sc, smh));
	NC(n->deregMr(p[0].sc, bmh));
	NC(n->deregMr(p[0].rc, rmh));
	NC(n->closeSend(p[0].sc));
	NC(n->closeRecv(p[0].rc));
	NC(n->closeListen(p[0].lc));
	NC(n->finalize(e->ctx));
	munmap(sb, len);
	close(fd);
}

static void test_old_adapters(void **state)
{
	NEED_DAEMON(state);
	const ncclNet_v9_t *n = drv.v9;
	assert_int_equal(n->init(NULL), ncclSuccess);
	ncclNetProperties_v9_t pr;
	NC(n->getProperties(0, &pr));
	assert_int_equal(pr.ptrSupport, NCCL_PTR_HOST);
	assert_int_equal(pr.maxCollBytes, MRCN_MAX_MSG);
	uint8_t h[NCCL_NET_HANDLE_MAXSIZE];
	void *lc, *sc = NULL, *rc = NULL;
	NC(n->listen(0, h, &lc));
	int64_t end = mrcd_spawn_now_ms() + MRCD_SPAWN_WAIT_MS;
	while (!sc || !rc) {
		ncclNetDeviceHandle_t *dev = NULL;
		if (!sc)
			NC(n->connect(0, h, &sc, &dev));
		if (!rc)
			NC(n->accept(lc, &rc, &dev));
		CHECK(mrcd_spawn_now_ms() < end, "v9 connect");
	}
	static uint8_t sb[777], rb[1000];
	memset(sb, 0x5a, sizeof(sb));
	void *smh, *rmh, *sreq = NULL, *rreq = NULL;
	NC(n->regMr(sc, sb, sizeof(sb), NCCL_PTR_HOST, &smh));
	NC(n->regMr(rc, rb, sizeof(rb), NCCL_PTR_HOST, &rmh));
	void *data[1] = { rb };
	size_t sizes[1] = { sizeof(rb) };
	int tags[1] = { 0 };
	NC(n->irecv(rc, 1, data, sizes, tags, &rmh, &rreq));
	while (!sreq) {
		NC(n->isend(sc, sb, sizeof(sb), 0, smh, &sreq));
		CHECK(sreq || mrcd_spawn_now_ms() < end, "v9 isend");
	}
	int sz = 0;
	wait_req(drv.net, rreq, &sz);
	assert_int_equal(sz, sizeof(sb));
	assert_memory_equal(rb, sb, sizeof(sb));
	wait_req(drv.net, sreq, &sz);
	NC(n->deregMr(sc, smh));
	NC(n->deregMr(rc, rmh));
	NC(n->closeSend(sc));
	NC(n->closeRecv(rc));
	NC(n->closeListen(lc));
	/* v8: int sizes, properties without limits */
	const ncclNet_v8_t *o = drv.v8;
	NC(o->init(NULL));
	ncclNetProperties_v8_t p8;
	NC(o->getProperties(0, &p8));
	assert_int_equal(p8.ptrSupport, NCCL_PTR_HOST);
	assert_int_equal(p8.maxRecvs, MRCN_MAX_RECVS);
	assert_string_equal(p8.name, "mrc0");
	sc = rc = NULL;
	NC(o->listen(0, h, &lc));
	end = mrcd_spawn_now_ms() + MRCD_SPAWN_WAIT_MS;
	while (!sc || !rc) {
		ncclNetDeviceHandle_t *dev = NULL;
		if (!sc)
			NC(o->connect(0, h, &sc, &dev));
		if (!rc)
			NC(o->accept(lc, &rc, &dev));
		CHECK(mrcd_spawn_now_ms() < end, "v8 connect");
	}
	memset(sb, 0xa5, sizeof(sb));
	memset(rb, 0, sizeof(rb));
	NC(o->regMr(sc, sb, sizeof(sb), NCCL_PTR_HOST, &smh));
	NC(o->regMr(rc, rb, sizeof(rb), NCCL_PTR_HOST, &rmh));
	int isz[1] = { sizeof(rb) };
	sreq = rreq = NULL;
	NC(o->irecv(rc, 1, data, isz, tags, &rmh, &rreq));
	assert_non_null(rreq);
	while (!sreq) {
		NC(o->isend(sc, sb, 100, 0, smh, &sreq));
		CHECK(sreq || mrcd_spawn_now_ms() < end, "v8 isend");
	}
	wait_req(drv.net, rreq, &sz);
	assert_int_equal(sz, 100);
	assert_memory_equal(rb, sb, 100);
	wait_req(drv.net, sreq, &sz);
	assert_int_equal(o->isend(sc, sb, -1, 0, smh, &sreq), ncclInvalidArgument);
	NC(o->deregMr(sc, smh));
	NC(o->deregMr(rc, rmh));
	NC(o->closeSend(sc));
	NC(o->closeRecv(rc));
	NC(o->closeListen(lc));
	/* v9 and v8 have no finalize: this process's state lives on (two
	 * v11 finalizes drop the references so the daemon is closed cleanly) */
	NC(drv.net->finalize(NULL));
	NC(drv.net->finalize(NULL));
}

int main(int argc, char **argv)
{
	(void)argc;
	/* NCCL finds plugins on the library path: put this build's lib/ on
	 * it (B/tests/x -> B/lib) and restart, as the dynamic loader reads
	 * LD_LIBRARY_PATH only at start. */
	if (mrcd_spawn_build_path(libdir, sizeof(libdir), "lib"))
		return 1;
	const char *lp = getenv("LD_LIBRARY_PATH");
	if (!lp || strncmp(lp, libdir, strlen(libdir))) {
		char nlp[2 * PATH_MAX];
		snprintf(nlp, sizeof(nlp), "%s%s%s", libdir, lp ? ":" : "", lp ? lp : "");
		setenv("LD_LIBRARY_PATH", nlp, 1);
		execv("/proc/self/exe", argv);
		return 1;
	}
	seed_init("test_nccl_plugin");
	const struct CMUnitTest base[] = {
		cmocka_unit_test(test_loader),
		cmocka_unit_test(test_no_daemon),
		cmocka_unit_test_setup(test_arena, reseed),
	};
	const struct CMUnitTest live[] = {
		cmocka_unit_test(test_plugin_loopback),
		cmocka_unit_test(test_bounce_env),
		cmocka_unit_test(test_env_values),
		cmocka_unit_test(test_old_adapters),
		cmocka_unit_test(test_send_done_at_post),
		cmocka_unit_test(test_send_zero_copy),
	};
	int r = cmocka_run_group_tests_name("nccl plugin", base, NULL, NULL);
	if (drv.net)
		r += cmocka_run_group_tests_name("nccl plugin on mrcd", live, setup_daemon,
						 teardown_daemon);
	ndrv_unload(&drv);
	return r;
}

/* The verbs datapath on a real RoCEv2 device, through the real libibverbs:
 * one plane on the first device's first RoCEv2 GID, a datagram to itself
 * through the NIC.  Skips when ibv_get_device_list finds no device (the
 * fake-device tests are tests/test_dp_verbs.c).  Where there is none,
 * mrcd with datapath=verbs refuses to start and says why. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <unistd.h>
#include <cmocka.h>

#include "tests/support/mrcd_spawn.h"
#include "tests/support/skip.h"

#ifdef MRC_HAVE_VERBS
#include "datapath/verbs_int.h"

/* 1 when libibverbs lists a device; 0 when it lists none or (ENOSYS) the
 * kernel has no RDMA support. */
static int have_device(void)
{
	int n = 0;
	struct ibv_device **l = mrc__dp_verbs_real.get_device_list(&n);
	if (l)
		mrc__dp_verbs_real.free_device_list(l);
	return l && n > 0;
}
#endif

static void real_device_loopback(void **state)
{
	(void)state;
#ifndef MRC_HAVE_VERBS
	MRC_SKIP("built without libibverbs-dev: the verbs datapath is not built in");
#else
	if (!have_device())
		MRC_SKIP("no RDMA device (ibv_get_device_list found none)");
	/* On a RoCE host: the first device's first RoCEv2 GID, a datagram to
	 * itself through the NIC. */
	struct ibv_context *ctx = NULL;
	struct ibv_gid_entry e[64];
	ssize_t ng = 0;
	int n = 0;
	struct ibv_device **l = mrc__dp_verbs_real.get_device_list(&n);
	ctx = mrc__dp_verbs_real.open_device(l[0]);
	assert_non_null(ctx);
	ng = mrc__dp_verbs_real.query_gid_table(ctx, e, 64);
	mrc__dp_verbs_real.close_device(ctx);
	mrc__dp_verbs_real.free_device_list(l);
	ssize_t g = 0;
	while (g < ng && e[g].gid_type != IBV_GID_TYPE_ROCE_V2)
		g++;
	if (g == ng)
		MRC_SKIP("no RoCEv2 GID on the first RDMA device");
	struct mrc_dp_plane pl = { .ifname = "" };
	memcpy(&pl.local, e[g].gid.raw, 16);
	struct mrc_dp_cfg c = { .planes = &pl, .nplanes = 1, .port = 4791 };
	struct mrc_dp *dp = NULL;
	char why[256] = "";
	int rc = mrc_dp_open(&dp, "verbs", &c, why, sizeof(why));
	if (rc)
		print_error("open: %s\n", why);
	assert_int_equal(rc, 0);
	struct mrc__dp_verbs_dp *v = (struct mrc__dp_verbs_dp *)dp;
	mrc__dp_verbs_set_peer(dp, 0, &pl.local, v->pl[0].qp->qp_num);
	struct mrc_dp_out o = { .plane = 0, .dst = pl.local, .iovcnt = 1, .iov = { { "ping", 4 } } };
	assert_int_equal(mrc_dp_send(dp, &o, 1), 1);
	struct pollfd p = { .fd = mrc_dp_fd(dp, 0), .events = POLLIN };
	struct mrc_dp_in in[MRC_DP_BATCH];
	int got = 0;
	for (int tries = 0; tries < 20 && !got; tries++) {
		poll(&p, 1, 100);                 /* bounded wait for the event */
		got = mrc_dp_recv(dp, 0, in, MRC_DP_BATCH);
	}
	assert_int_equal(got, 1);
	assert_int_equal(in[0].len, 4);
	assert_memory_equal(in[0].buf, "ping", 4);
	assert_memory_equal(&in[0].src, &pl.local, 16);   /* from the GRH */
	mrc_dp_close(dp);
#endif
}

/* With no RDMA device, mrcd --datapath=verbs exits 1 at start with the
 * reason and what to use instead (bounded by timeout(1)). */
static void mrcd_refuses_without_device(void **state)
{
	(void)state;
#ifndef MRC_HAVE_VERBS
	MRC_SKIP("built without libibverbs-dev: the verbs datapath is not built in");
#else
	if (have_device())
		MRC_SKIP("an RDMA device is present (mrcd would start)");
	if (!mrcd_spawn_available())
		MRC_SKIP("build/bin/mrcd not built");
	char dir[] = "/tmp/mrc-verbs-XXXXXX", cmd[1024], out[4096] = "";
	assert_non_null(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd), "cd %s && '%s' --genkey k >/dev/null && timeout 10 '%s' "
		 "--datapath=verbs --key_file=k --socket=%s/s.sock --port=%u 2>&1; echo rc=$?",
		 dir, mrcd_spawn_bin(), mrcd_spawn_bin(), dir, 30000u + (unsigned)getpid() % 20000);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	size_t got = fread(out, 1, sizeof(out) - 1, p);
	out[got] = 0;
	pclose(p);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
	if (!strstr(out, "datapath verbs: no RDMA device: ibv_get_device_list found none") ||
	    !strstr(out, "use datapath=udp") || !strstr(out, "rc=1"))
		fail_msg("mrcd said: %s", out);
#endif
}

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(mrcd_refuses_without_device),
		cmocka_unit_test(real_device_loopback),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}

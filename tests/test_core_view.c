/* The daemon core's read-only views (daemon/core/mrcd.h, view.c), the
 * only way the operator interface reads the core (issue 31), seen from a
 * program that includes mrcd.h alone, as daemon/oper does:
 *   loopback_views: a loopback core's configuration, planes, host address
 *     and counters as the views give them;
 *   peer_views: mrcd_peer_find never creates a peer (mrcd_peer_of_host
 *     does), the iterator visits exactly the peers there are, and a view's
 *     deny[] follows the core's admin actions;
 *   qp_bindings: the binding iterator lists exactly the bound QPs.
 * The core runs in loopback mode on a port drawn from the seed (printed
 * on failure). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <cmocka.h>

#include "auth/auth.h"
#include "daemon/core/mrcd.h"
#include "tests/support/mrcd_spawn.h"

static unsigned seed;
static struct mrcd_keydir kd;

static struct mrcd *core_up(void)
{
	struct mrcd_cfg c;
	char err[512] = "";
	mrcd_cfg_default(&c);
	snprintf(c.key_file, sizeof(c.key_file), "%s", kd.key);
	struct mrcd *d = NULL;
	int rc = -1;
	/* Another process may hold a port: a few tries from the seed. */
	for (int t = 0; t < 8 && rc; t++) {
		c.port = 20000 + (seed * 7919u + (unsigned)t * 104729u) % 40000;
		assert_int_equal(mrcd_cfg_check(&c, err, sizeof(err)), 0);
		rc = mrcd_core_new(&c, &d, err, sizeof(err));
	}
	if (rc)
		fail_msg("core (seed %u): %s", seed, err);
	return d;
}

static void core_down(struct mrcd *d)
{
	mrcd_core_free(d);
	ev_loop_destroy(EV_DEFAULT);   /* the next core starts on a fresh loop */
}

static void loopback_views(void **state)
{
	(void)state;
	struct mrcd *d = core_up();
	assert_null(mrcd_topology(d));
	assert_string_equal(mrcd_config(d)->key_file, kd.key);
	assert_true(mrcd_started_ns(d) > 0 && mrcd_started_ns(d) <= mrcd_now());
	assert_int_equal(mrcd_n_planes(d), 1);
	assert_int_equal(mrcd_local_down(d), 0);
	assert_int_equal(mrcd_admin_planes(d), 0);
	assert_string_equal(mrcd_plane_if(d, 0), "");   /* loopback: no NIC */
	struct in6_addr a;
	assert_int_equal(mrcd_host_addr(d, mrcd_self_host(d), &a), 0);
	assert_memory_equal(&a, &in6addr_loopback, sizeof(a));
	struct mrcd_stats st;
	memset(&st, 0xa5, sizeof(st));
	mrcd_stats_get(d, &st);
	assert_int_equal(st.ctrl_bad_mac, 0);        /* nothing arrived yet */
	assert_int_equal(st.rx_no_peer, 0);
	struct mrce_seal_stats es;
	assert_int_equal(mrcd_aead_stats(d, &es), -ENOENT);   /* payload_encryption off */
	core_down(d);
}

static int npeers(struct mrcd *d, struct mrcd_peer_view *last)
{
	int n = 0;
	for (uint32_t it = 0; mrcd_peer_next(d, &it, last);)
		n++;
	return n;
}

static void peer_views(void **state)
{
	(void)state;
	struct mrcd *d = core_up();
	uint32_t self = mrcd_self_host(d), p;
	struct mrcd_peer_view v;
	int before = npeers(d, &v);
	/* Looking does not create: the operator's reads change nothing. */
	assert_int_equal(mrcd_peer_find(d, self), UINT32_MAX);
	assert_int_equal(mrcd_peer_find(d, mrcd_n_hosts(d)), UINT32_MAX);   /* no such host */
	assert_int_equal(npeers(d, &v), before);
	assert_int_equal(mrcd_peer_of_host(d, self, &p), 0);
	assert_int_equal(mrcd_peer_find(d, self), p);
	assert_int_equal(npeers(d, &v), before + 1);
	assert_int_equal(mrcd_peer_get(d, p, &v), 0);
	assert_int_equal(v.id, p);
	assert_int_equal(v.host, self);
	assert_true(v.nev >= 1);
	assert_int_equal(mrcd_peer_get(d, p + 1, &v), -ENOENT);
	assert_int_equal(mrcd_peer_get(d, UINT32_MAX, &v), -ENOENT);
	/* A view's deny[] is the core's: it shows the admin actions. */
	assert_int_equal(mrcd_peer_get(d, p, &v), 0);
	assert_int_equal(v.deny[0] & (MRCD_DENY_ADMIN_PLANE | MRCD_DENY_ADMIN_PATH), 0);
	uint32_t np = 0, nev = 0;
	assert_int_equal(mrcd_admin_plane(d, 0, 1, &np, &nev), 0);
	assert_int_equal(mrcd_admin_planes(d), 1);
	assert_true(np >= 1 && nev >= 1);
	assert_true(v.deny[0] & MRCD_DENY_ADMIN_PLANE);
	assert_int_equal(mrcd_admin_plane(d, 0, 0, &np, &nev), 0);
	assert_int_equal(mrcd_admin_planes(d), 0);
	assert_int_equal(v.deny[0] & MRCD_DENY_ADMIN_PLANE, 0);
	assert_int_equal(mrcd_admin_path(d, p, 0, 1), 0);
	assert_true(v.deny[0] & MRCD_DENY_ADMIN_PATH);
	assert_string_equal(mrcd_deny_name(MRCD_DENY_ADMIN_PATH), "admin_path");
	assert_int_equal(mrcd_admin_path(d, p, 0, 0), 0);
	assert_int_equal(v.deny[0] & MRCD_DENY_ADMIN_PATH, 0);
	core_down(d);
}

static void on_wc(void *ctx, const struct mrce_wc *wc)
{
	(void)ctx, (void)wc;
}

static void qp_bindings(void **state)
{
	(void)state;
	struct mrcd *d = core_up();
	struct mrce *e = mrcd_engine(d);
	struct mrce_qp_attr qa = { .pd = 1 };
	uint32_t q[3], qpn, n = 0;
	for (int i = 0; i < 3; i++)
		assert_int_equal(mrce_qp_open(e, &qa, &q[i]), 0);
	for (uint32_t it = 0; mrcd_qp_bound_next(d, &it, &qpn);)
		n++;
	assert_int_equal(n, 0);   /* created, not bound: not served */
	assert_int_equal(mrcd_qp_bind(d, q[0], on_wc, NULL), 0);
	assert_int_equal(mrcd_qp_bind(d, q[2], on_wc, NULL), 0);
	int seen[3] = { 0 };
	for (uint32_t it = 0; mrcd_qp_bound_next(d, &it, &qpn); n++)
		for (int i = 0; i < 3; i++)
			seen[i] += qpn == q[i];
	assert_int_equal(n, 2);
	assert_int_equal(seen[0], 1);
	assert_int_equal(seen[1], 0);
	assert_int_equal(seen[2], 1);
	mrcd_qp_unbind(d, q[0]);
	n = 0;
	for (uint32_t it = 0; mrcd_qp_bound_next(d, &it, &qpn); n++)
		assert_int_equal(qpn, q[2]);
	assert_int_equal(n, 1);
	mrcd_qp_unbind(d, q[2]);
	for (int i = 0; i < 3; i++)
		assert_int_equal(mrce_qp_close(e, q[i]), 0);
	core_down(d);
}

static int setup(void **state)
{
	(void)state;
	const char *e = getenv("MRC_TEST_SEED");
	seed = e ? (unsigned)strtoul(e, NULL, 0) : (unsigned)time(NULL) ^ (unsigned)getpid();
	if (mrcd_keydir_make(&kd, "coreview"))
		return -1;
	mrcd_log_level = MRCD_LOG_WARNING;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	mrcd_keydir_remove(&kd);
	return 0;
}

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(loopback_views),
		cmocka_unit_test(peer_views),
		cmocka_unit_test(qp_bindings),
	};
	return cmocka_run_group_tests(t, setup, teardown);
}

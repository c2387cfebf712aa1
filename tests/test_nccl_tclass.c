/* NCCL's per-communicator traffic class in libnccl-net-mrc.so (docs/nccl.md
 * "Traffic class"): the trafficClass of v11's init config (and of v10's
 * connect config) becomes the class of the QP each send comm creates,
 * DSCP 46 (EF) -> MRC_QP_URGENT, 10 (AF11) -> MRC_QP_BULK, anything else
 * and -1 (undefined) the default; checked in the daemon's own view of its
 * QPs (the operator socket's "qps", what mrcctl qps prints).
 * MRC_NCCL_TEST_PLUGIN names another plugin (e.g. an older build, to see
 * it fail). */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tests/support/mrcd_spawn.h"
#include "tests/support/nccl_pairs.h"
#include "tests/support/skip.h"

#include "tools/nccl-harness/drive.h"

#define NC(call) assert_int_equal((call), ncclSuccess)
#define TOS(dscp, ecn) ((dscp) << 2 | (ecn))

static char plugin_path[PATH_MAX];
static struct ndrv drv;
static struct mrcd_proc mrcd_d;

static int setup_daemon(void **state)
{
	return nccl_pairs_group_setup(state, &mrcd_d);
}

static int teardown_daemon(void **state)
{
	return nccl_pairs_group_teardown(state);
}

/* The daemon's connected QPs (RTS) by class: counts of "urgent", "bulk",
 * "default".  (The accept thread's spare QP, not connected yet, is not
 * counted: when it is made is the thread's business.) */
struct classes {
	int urgent, bulk, dflt, other;
};

static void qp_classes(struct classes *out)
{
	json_t *res = nccl_pairs_ctl(&mrcd_d, MRC_OPER_QPS);
	json_t *qps = json_object_get(res, "qps");
	assert_true(json_is_array(qps));
	*out = (struct classes){ 0 };
	size_t i;
	json_t *q;
	json_array_foreach(qps, i, q) {
		const char *st = json_string_value(json_object_get(q, "state"));
		if (!st || strcmp(st, "RTS"))
			continue;
		const char *c = json_string_value(json_object_get(q, "class"));
		assert_non_null(c);
		if (!strcmp(c, "urgent"))
			out->urgent++;
		else if (!strcmp(c, "bulk"))
			out->bulk++;
		else if (!strcmp(c, "default"))
			out->dflt++;
		else
			out->other++;
	}
	json_decref(res);
}

/* One pair on the v10 table, its connect carrying cfg itself. */
static void v10_pair(struct nccl_pair *p, ncclNetCommConfig_t *cfg)
{
	const ncclNet_v10_t *n = drv.v10;
	memset(p, 0, sizeof(*p));
	NC(n->listen(0, p->handle, &p->lc));
	int64_t end = mrcd_spawn_now_ms() + MRCD_SPAWN_WAIT_MS;
	while (!p->sc || !p->rc) {
		assert_true(mrcd_spawn_now_ms() < end);
		ncclNetDeviceHandle_t *dev = NULL;
		if (!p->sc)
			NC(n->connect(0, cfg, p->handle, &p->sc, &dev));
		if (!p->rc)
			NC(n->accept(p->lc, &p->rc, &dev));
	}
}

static void close_pair(const ncclNet_v11_t *n, struct nccl_pair *p)
{
	NC(n->closeSend(p->sc));
	NC(n->closeRecv(p->rc));
	NC(n->closeListen(p->lc));
}

static void test_tclass(void **state)
{
	NCCL_PAIRS_NEED(state, drv.net, plugin_path);
	const ncclNet_v11_t *n = drv.net;
	struct classes cl;
	ncclNetCommConfig_t none = { .trafficClass = -1 };
	void *c0;
	NC(n->init(&c0, 1, &none, NULL, NULL));
	/* per init (communicator): EF with ECN bits set, AF11, AF21 (not a
	 * class of ours), undefined */
	ncclNetCommConfig_t ef = { .trafficClass = TOS(46, 1) }, af11 = { .trafficClass = TOS(10, 0) },
			    af21 = { .trafficClass = TOS(18, 0) };
	void *cu, *cb, *cd;
	NC(n->init(&cu, 2, &ef, NULL, NULL));
	NC(n->init(&cb, 3, &af11, NULL, NULL));
	NC(n->init(&cd, 4, &af21, NULL, NULL));
	struct nccl_pair pu[2], pb[1], pd[1], pn[1], p10[2];
	nccl_connect_pairs(n, cu, pu, 2);
	nccl_connect_pairs(n, cb, pb, 1);
	nccl_connect_pairs(n, cd, pd, 1);
	nccl_connect_pairs(n, c0, pn, 1);
	/* v10: the class comes with connect (its init takes no config) */
	NC(drv.v10->init(NULL, NULL));
	v10_pair(&p10[0], &af11);
	v10_pair(&p10[1], NULL);
	qp_classes(&cl);
	printf("connected QPs of 7 pairs: %d urgent, %d bulk, %d default\n", cl.urgent, cl.bulk,
	       cl.dflt);
	assert_int_equal(cl.other, 0);
	/* send comms: 2 urgent, 2 bulk (v11 and v10), 3 default; every recv
	 * comm's QP (CTS, credits) is made before its listener is known: the
	 * default class (docs/nccl.md) */
	assert_int_equal(cl.urgent, 2);
	assert_int_equal(cl.bulk, 2);
	assert_int_equal(cl.dflt, 3 + 7);
	for (int i = 0; i < 2; i++)
		close_pair(n, &pu[i]);
	close_pair(n, &pb[0]);
	close_pair(n, &pd[0]);
	close_pair(n, &pn[0]);
	for (int i = 0; i < 2; i++)
		close_pair(n, &p10[i]);
	NC(n->finalize(NULL));          /* the v10 init's reference */
	NC(n->finalize(cd));
	NC(n->finalize(cb));
	NC(n->finalize(cu));
	NC(n->finalize(c0));
}

int main(void)
{
	const char *alt = getenv("MRC_NCCL_TEST_PLUGIN");
	if (alt)
		snprintf(plugin_path, sizeof(plugin_path), "%s", alt);
	else if (mrcd_spawn_build_path(plugin_path, sizeof(plugin_path), "lib/libnccl-net-mrc.so"))
		return 1;
	char err[256];
	if (ndrv_load(&drv, plugin_path, err, sizeof(err)))
		memset(&drv, 0, sizeof(drv));
	const struct CMUnitTest t[] = {
		cmocka_unit_test(test_tclass),
	};
	int r = cmocka_run_group_tests_name("nccl plugin, traffic class", t, setup_daemon,
					    teardown_daemon);
	if (drv.net)
		ndrv_unload(&drv);
	return r;
}

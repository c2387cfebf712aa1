/* The af_xdp datapath without a NIC: open refuses loopback use, a missing
 * interface and bad datapath_args with a precise reason.  The frames it
 * builds and parses are datapath/frame.c's (tests/test_dp_dpdk.c,
 * fuzz/fuzz_frame.c); the real sockets are tested on the emulated fabric
 * (tests/root/af_xdp.sh: tests/root/xfer.sh with MRC_DATAPATH=af_xdp). */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "datapath/af_xdp.h"
#include "datapath/datapath.h"
#include "tests/support/skip.h"

#define PORT 4791

static int built_in(void)
{
	char why[256] = "";
	struct mrc_dp_plane pl = { .ifname = "" };
	struct mrc_dp_cfg c = { .planes = &pl, .nplanes = 1, .port = PORT };
	struct mrc_dp *dp;
	mrc_dp_open(&dp, "af_xdp", &c, why, sizeof(why));
	return !strstr(why, "not built in");
}

static void open_errors(void **state)
{
	(void)state;
	if (!built_in())
		MRC_SKIP("af_xdp not built in (libxdp-dev, libbpf-dev or clang missing)");
	char why[256] = "";
	struct mrc_dp *dp = NULL;
	struct mrc_dp_plane pl = { .ifname = "" };
	struct mrc_dp_cfg c = { .planes = &pl, .nplanes = 1, .port = PORT };
	assert_int_equal(mrc_dp_open(&dp, "af_xdp", &c, why, sizeof(why)), -EOPNOTSUPP);
	assert_non_null(strstr(why, "no loopback mode"));
	snprintf(pl.ifname, sizeof(pl.ifname), "mrcnosuch0");
	assert_int_equal(mrc_dp_open(&dp, "af_xdp", &c, why, sizeof(why)), -ENODEV);
	assert_non_null(strstr(why, "mrcnosuch0"));
	const char *bad[] = { "xdp_mode=turbo", "bind=fast", "queue=x", "queue=99999", "nokey",
			      "xdp_mode=skb,color=red" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		c.args = bad[i];
		why[0] = 0;
		assert_int_equal(mrc_dp_open(&dp, "af_xdp", &c, why, sizeof(why)), -EINVAL);
		assert_non_null(strstr(why, "datapath_args"));
	}
	/* good args get as far as the interface */
	c.args = "xdp_mode=skb,bind=copy,queue=0";
	assert_int_equal(mrc_dp_open(&dp, "af_xdp", &c, why, sizeof(why)), -ENODEV);
}

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(open_errors),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}

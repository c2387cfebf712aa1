/* The example programs (examples/common.h) refuse arguments they cannot
 * take, exit 2 and say which: a size with junk after it ("8x" is not 8
 * bytes), one past 2^64, a host that is neither an index nor hN.  Runs
 * build/bin/mrc_bulk; skipped when it has not been built. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "tests/support/mrcd_spawn.h"
#include "tests/support/skip.h"

static char bulk[4200];

/* Runs mrc_bulk ARGS; its exit status, and its output in out. */
static int run(const char *args, char *out, size_t len)
{
	char cmd[4600];
	snprintf(cmd, sizeof(cmd), "%s %s 2>&1 </dev/null", bulk, args);
	FILE *f = popen(cmd, "r");
	assert_non_null(f);
	size_t n = fread(out, 1, len - 1, f);
	out[n] = 0;
	int st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_bad_args(void **state)
{
	(void)state;
	snprintf(bulk, sizeof(bulk), "%s", mrcd_spawn_bin());
	char *sl = strrchr(bulk, '/');
	assert_non_null(sl);
	snprintf(sl + 1, sizeof(bulk) - (size_t)(sl + 1 - bulk), "mrc_bulk");
	if (access(bulk, X_OK))
		MRC_SKIP("%s not built", bulk);
	static const struct { const char *args, *says; } bad[] = {
		{ "-s 8x send 1", "invalid size '8x'" },
		{ "-s 1.5M send 1", "invalid size '1.5M'" },
		{ "-s 16777216T send 1", "invalid size '16777216T'" },
		{ "-s 17179869184G send 1", "invalid size '17179869184G'" },
		{ "-c -4 send 1", "invalid size '-4'" },
		{ "-i 7x send 1", "invalid service id '7x'" },
		{ "send hx", "invalid host 'hx'" },
		{ "send ' 1'", "invalid host ' 1'" },
		{ "-p 2x send 1", "invalid passes '2x'" },
		{ "-p 0 send 1", "usage: mrc_bulk" },
		{ "-p 1001 send 1", "usage: mrc_bulk" },
	};
	char out[4096];
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = run(bad[i].args, out, sizeof(out));
		if (rc != 2 || !strstr(out, bad[i].says))
			fail_msg("mrc_bulk %s: exit %d, said '%s' (want 2 and '%s')", bad[i].args, rc,
				 out, bad[i].says);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_args),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* mrc-step's command line and report (tools/step/args.c, print.c): the
 * keys mean what mrcsim's step workload's do (docs/sim.md "Training
 * steps"), bad values are refused with a line, and the JSON report
 * carries what the root test (tests/root/step.sh) reads. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tools/step/step.h"

/* Parses a NULL-terminated list (copied: the parser writes into args). */
static int parse(struct step_par *p, struct step_cli *cli, const char *const *args)
{
	static char buf[32][64];   /* p keeps pointers into it (fault_file) */
	char *v[32];
	int n = 0;
	v[n++] = strcpy(buf[0], "mrc-step");
	for (; args[n - 1]; n++)
		v[n] = strcpy(buf[n], args[n - 1]);
	v[n] = NULL;
	mrc__step_defaults(p);
	*cli = (struct step_cli){ 0 };
	FILE *err = fopen("/dev/null", "w");
	int r = mrc__step_parse(n, v, p, cli, err);
	fclose(err);
	return r;
}

static void test_keys(void **state)
{
	(void)state;
	struct step_par p;
	struct step_cli cli;
	const char *a[] = { "-S", "/tmp/s", "-s", "7700", "-H", "3", "-T", "5000", "-j", "-m",
			    "overlap", "-k", "3:/tmp/go", "layers=6", "fwd=1ms", "bwd=250",
			    "tokens=64", "tok=2K", "topk=1", "local=4", "cap=1.5", "skew=0",
			    "grad=512K", "bucket=1M", "bulk=8M", "stage=64K", "steps=10", "runs=4", "stub=sleep",
			    NULL };
	assert_int_equal(parse(&p, &cli, a), 0);
	assert_string_equal(cli.sock, "/tmp/s");
	assert_int_equal(cli.sid, 7700);
	assert_int_equal(cli.root_host, 3);
	assert_int_equal(cli.timeout_ms, 5000);
	assert_true(p.json);
	assert_int_equal(p.modes, 1 << STEP_OVERLAP);
	assert_int_equal(p.fault_step, 3);
	assert_string_equal(p.fault_file, "/tmp/go");
	assert_int_equal(p.layers, 6);
	assert_int_equal(p.moe, 3);   /* layers / 2 when not named, as mrcsim */
	assert_true(p.fwd_us == 1000 && p.bwd_us == 250);
	assert_int_equal(p.tokens, 64);
	assert_int_equal(p.tok, 2048);
	assert_int_equal(p.topk, 1);
	assert_int_equal(p.local, 4);
	assert_true(p.cap == 1.5 && p.skew == 0);
	assert_int_equal(p.grad, 512 << 10);
	assert_int_equal(p.bucket, 1 << 20);
	assert_int_equal(p.bulk, 8 << 20);
	assert_int_equal(p.stage, 64 << 10);
	assert_int_equal(p.steps, 10);
	assert_int_equal(p.runs, 4);
	assert_true(p.sleep);
	const char *b[] = { "tokens=0", NULL };
	assert_int_equal(parse(&p, &cli, b), 0);
	assert_int_equal(p.moe, UINT32_MAX);   /* tokens=0: no MoE layer, as mrcsim */
	const char *c[] = { "moe=none", "layers=2", NULL };
	assert_int_equal(parse(&p, &cli, c), 0);
	assert_int_equal(p.moe, UINT32_MAX);
}

static void test_refused(void **state)
{
	(void)state;
	struct step_par p;
	struct step_cli cli;
	static const char *const bad[][3] = {
		{ "layers=0" }, { "layers=x" }, { "nokey=1" }, { "novalue" }, { "fwd=3parsecs" },
		{ "fwd=-1" }, { "tok=3" }, { "moe=8" }, { "grad=4M", "bucket=1M" },
		{ "steps=65" }, { "cap=nan" }, { "-k", "3" }, { "-k", "20:/x" }, { "-m", "sideways" },
		{ "-T", "0" }, { "-q" }, { "grad=1Q" }, { "stub=nap" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *a[4] = { bad[i][0], bad[i][1], bad[i][2], NULL };
		if (parse(&p, &cli, a) != -EINVAL)
			fail_msg("accepted: %s %s", bad[i][0], bad[i][1] ? bad[i][1] : "");
	}
}

static void test_json(void **state)
{
	(void)state;
	struct step_par p;
	mrc__step_defaults(&p);
	p.json = 1;
	p.runs = 3;
	p.fault_step = 2;
	struct step_report r = { .ranks = 8, .tokens = 1000, .dropped = 50, .bulk_bytes = 7,
				 .fault_before = 100, .fault_after = 103 };
	r.m[STEP_OVERLAP].step_med = 1234.5;
	r.m[STEP_OVERLAP].exposed_med = 34.5;
	r.m[STEP_BLOCKING].step_med = 2000;
	char out[4096] = { 0 };
	FILE *f = fmemopen(out, sizeof(out) - 1, "w");
	mrc__step_print(&p, &r, f);
	fclose(f);
	assert_non_null(strstr(out, "\"ranks\": 8,"));
	assert_non_null(strstr(out, "\"drop_share\": 0.0500"));
	assert_non_null(strstr(out, "\"wrong\": 0"));
	assert_non_null(strstr(out, "\"fault_step\": 2, \"fault_before_us\": 100.0, \"fault_after_us\": 103.0"));
	assert_non_null(strstr(out, "\"overlap\": {\"step_us\": 1234.5"));
	assert_non_null(strstr(out, "\"exposed_us\": 34.5"));
	assert_non_null(strstr(out, "\"blocking\": {\"step_us\": 2000.0"));
	/* One object on one line: what a script pipes to jq. */
	assert_int_equal(out[0], '{');
	assert_ptr_equal(strchr(out, '\n'), out + strlen(out) - 1);
	assert_int_equal(out[strlen(out) - 2], '}');
}

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(test_keys),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_json),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}

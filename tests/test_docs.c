/* Figures the docs quote from the code are the code's own: the per-QP
 * memory of the engine at its defaults, as mrce_qp_bytes() computes
 * it, must be what README.md and docs/design.md say (so a change to the
 * engine's per-QP arrays fails here until the docs follow).  Run from the
 * repository root, as make check does. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tests/support/qpbytes.h"

/* Finds MARKER in FILE and parses the number after it ("55,984"). */
static long figure_after(const char *file, const char *marker)
{
	static char buf[1 << 18];
	FILE *f = fopen(file, "r");
	if (!f)
		fail_msg("%s: cannot open (run from the repository root)", file);
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	/* Collapse line breaks so a marker may wrap in the Markdown source. */
	for (char *p = buf; *p; p++)
		if (*p == '\n')
			*p = ' ';
	const char *at = strstr(buf, marker);
	if (!at)
		fail_msg("%s: no \"%s\" (the docs must quote the figure there)", file, marker);
	long v = 0;
	int digits = 0;
	for (const char *p = at + strlen(marker); *p && (*p == ',' || (*p >= '0' && *p <= '9') || (!digits && *p == ' ')); p++)
		if (*p >= '0' && *p <= '9') {
			v = v * 10 + (*p - '0');
			digits++;
		}
	if (!digits)
		fail_msg("%s: no number after \"%s\"", file, marker);
	return v;
}

static void test_qp_bytes_quoted(void **state)
{
	(void)state;
	long want = (long)mrc__qp_bytes_default();
	assert_true(want > 0);
	long design = figure_after("docs/design.md", "reports the bytes per QP:");
	long readme = figure_after("README.md", "Memory per QP:");
	if (design != want || readme != want)
		fail_msg("mrce_qp_bytes() is %ld at the defaults; docs/design.md says %ld, README.md %ld",
			 want, design, readme);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_qp_bytes_quoted),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Skipping a cmocka test with its reason.  cmocka's skip() carries no
 * reason and exits 0, so scripts/run-tests.sh reads the "mrc-skip:" line
 * this prints and reports the binary as skipped, never as passed. */
#ifndef MRC_TESTS_SUPPORT_SKIP_H
#define MRC_TESTS_SUPPORT_SKIP_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#define MRC_SKIP(...)                                   \
	do {                                            \
		print_message("mrc-skip: " __VA_ARGS__); \
		print_message("\n");                    \
		skip();                                 \
	} while (0)

#endif

/* The non-blocking tests' loop (tests/test_coll_nb.c,
 * tests/test_coll_pregate.c): start N calls, then test them in a random
 * order between slices of compute until all completed. */
#ifndef MRC_TESTS_SUPPORT_COLL_NB_H
#define MRC_TESTS_SUPPORT_COLL_NB_H

#include <stddef.h>
#include <stdint.h>

#include "common/prng.h"
#include "mrc/coll.h"

/* Starts call i of a run into *q: 0 or -errno. */
typedef int (*coll_nb_start_fn)(void *arg, size_t i, struct mrc_coll_req **q);

/* Starts n calls in order (start(arg, i, &q[i])); a start's error stops
 * the starts and is the result of every call not started.  Then tests the
 * started ones in a random order from g, with compute_us of busy compute
 * before each test, until every one completed.  res[i] (when res is not
 * NULL): call i's result; *peak (when not NULL): raised to the most calls
 * seen in flight on c.  Returns 0, or the first error: a start's, else
 * the lowest-numbered call's.  Nothing is left in flight. */
int coll_nb_run(struct mrc_coll *c, size_t n, coll_nb_start_fn start, void *arg,
		struct mrc_rng *g, int compute_us, int *res, uint32_t *peak);

/* Busy compute of about us microseconds. */
void coll_nb_compute(int us);

#endif

/* One completion for tests of a spawned mrcd (cmocka: tests only, not the
 * benchmarks that share tests/support/mrcd_spawn.c). */
#ifndef MRC_TESTS_SUPPORT_GET1_H
#define MRC_TESTS_SUPPORT_GET1_H

#include "mrc/mrc.h"

/* Waits (MRCD_SPAWN_WAIT_MS at most) for exactly one completion on qp and
 * returns it; a cmocka failure naming the QP when none comes. */
struct mrc_completion mrcd_get1(struct mrc_qp *qp);

#endif

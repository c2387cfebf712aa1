/* The matrix of collective cases the libmrc-coll tests run on n ranks
 * (test_coll_loop on host buffers, test_coll_dev through the device
 * table): one list, so that both cover the same cases. */
#ifndef MRC_TESTS_SUPPORT_COLL_MATRIX_H
#define MRC_TESTS_SUPPORT_COLL_MATRIX_H

#include <stddef.h>
#include <stdint.h>

struct coll_case {
	int kind;                  /* MRC__C_* */
	size_t ci;                 /* index of count in the list */
	size_t count;
	int dt, op, inplace;
};

/* Every collective x count (0, 1, n + 1: not a multiple of n, and
 * 3 x 4096 + 5: several 4 KiB chunks per rank) x type x op (the reducing
 * collectives only) x placement (no in-place all-to-all), in that order;
 * stops at the first non-zero return of one() and returns it. */
int coll_matrix(uint32_t n, int (*one)(void *arg, const struct coll_case *k), void *arg);

#endif

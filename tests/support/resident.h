/* Test helper: how many pages of [p, p + len) are resident (mincore), for
 * the engine's memory tests (every page the range touches counts: a heap
 * block shares its pages with its neighbours).  Include after
 * tests/support/etest_case.h (CHECK). */
#ifndef MRC_TESTS_RESIDENT_H
#define MRC_TESTS_RESIDENT_H

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

static inline size_t resident_pages(const void *p, size_t len)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	uintptr_t a = (uintptr_t)p & ~(uintptr_t)(pg - 1);
	len += (uintptr_t)p - a;
	size_t n = (len + pg - 1) / pg, k = 0;
	unsigned char *v = calloc(n, 1);
	CHECK(v != NULL);
	CHECK_EQ(mincore((void *)a, len, v), 0);
	for (size_t i = 0; i < n; i++)
		k += v[i] & 1;
	free(v);
	return k;
}

#endif

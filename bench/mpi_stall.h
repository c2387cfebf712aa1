/* The "# stalled" line of the MPI programs' -T bound (bench/mpi_coll.c,
 * tests/mpi_check.c), formatted in a SIGALRM handler: async-signal-safe,
 * by hand into the caller's buffer. */
#ifndef MRC_BENCH_MPI_STALL_H
#define MRC_BENCH_MPI_STALL_H

#include <stddef.h>
#include <stdint.h>

static inline void mrc__stall_put(char *buf, size_t cap, size_t *len, const char *s)
{
	while (*s && *len < cap - 1)
		buf[(*len)++] = *s++;
}

/* "# stalled: rank RANK" WHAT [N] "\n" (N only when n >= 0); its length.
 * cap > 24. */
static inline size_t mrc__stall_line(char *buf, size_t cap, const char *rank, const char *what,
				     int64_t n)
{
	size_t len = 0;
	char num[24];
	int k = 0;
	mrc__stall_put(buf, cap, &len, "# stalled: rank ");
	mrc__stall_put(buf, cap - 24, &len, rank);
	mrc__stall_put(buf, cap - 24, &len, what);
	if (n >= 0) {
		uint64_t v = (uint64_t)n;
		do
			num[k++] = (char)('0' + v % 10);
		while ((v /= 10) && k < 23);
		while (k)
			buf[len++] = num[--k];
	}
	buf[len++] = '\n';
	return len;
}

#endif

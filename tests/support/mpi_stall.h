/* The "# stalled" line of the MPI programs' -T bound (bench/mpi_coll.c,
 * tests/mpi_check.c), formatted in a SIGALRM handler: async-signal-safe,
 * by hand into the caller's buffer. */
#ifndef MRC_TESTS_MPI_STALL_H
#define MRC_TESTS_MPI_STALL_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

/* Before MPI_Init, so that -T bounds it too: handler armed for tmo
 * seconds (none when tmo <= 0); the rank Open MPI's launcher gives, or
 * "?". */
static inline const char *mrc__stall_arm(int tmo, void (*handler)(int))
{
	const char *rank = getenv("OMPI_COMM_WORLD_RANK");
	signal(SIGALRM, handler);
	if (tmo > 0)
		alarm((unsigned)tmo);
	return rank ? rank : "?";
}

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

/* The monotonic clock, one reading for every layer: CLOCK_MONOTONIC,
 * which every process of a host shares (traces of several processes line
 * up) and which never steps back.  A vDSO call, no system call. */
#ifndef MRC_COMMON_CLOCK_H
#define MRC_COMMON_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t mrc__mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline int64_t mrc__mono_ms(void)
{
	return (int64_t)(mrc__mono_ns() / 1000000u);
}

static inline double mrc__mono_s(void)
{
	return (double)mrc__mono_ns() / 1e9;
}

#endif

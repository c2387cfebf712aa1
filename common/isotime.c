/* ISO 8601 time stamps; see isotime.h. */
#include <stdio.h>
#include <time.h>

#include "common/isotime.h"

void mrc__iso_time(uint64_t real_ns, unsigned digits, char *buf, size_t len)
{
	time_t s = (time_t)(real_ns / 1000000000ull);
	struct tm tm;
	gmtime_r(&s, &tm);
	char b[32];
	strftime(b, sizeof(b), "%Y-%m-%dT%H:%M:%S", &tm);
	if (digits > 9)
		digits = 9;
	unsigned frac = (unsigned)(real_ns % 1000000000ull);
	for (unsigned i = digits; i < 9; i++)
		frac /= 10;
	snprintf(buf, len, "%s.%0*uZ", b, (int)digits, frac);
}

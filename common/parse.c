#include "common/parse.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The leading digits of s (at least one) into *out; *end after them. */
static int digits(const char *s, uint64_t *out, const char **end)
{
	size_t n = s ? strspn(s, "0123456789") : 0;
	if (!n)
		return -EINVAL;
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned d = (unsigned)(s[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	*out = v;
	*end = s + n;
	return 0;
}

int mrc__parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
	const char *e;
	uint64_t v;
	if (digits(s, &v, &e) || *e || v < lo || v > hi)
		return -EINVAL;
	*out = v;
	return 0;
}

int mrc__parse_size(const char *s, uint64_t *out)
{
	const char *e;
	uint64_t v, m = 1;
	int rc = digits(s, &v, &e);
	if (rc)
		return rc;
	switch (*e) {
	case 'K': case 'k': m = 1ull << 10; e++; break;
	case 'M': case 'm': m = 1ull << 20; e++; break;
	case 'G': case 'g': m = 1ull << 30; e++; break;
	default: break;
	}
	if (m > 1 && *e == 'i')
		e++;
	if (*e == 'B')
		e++;
	if (*e)
		return -EINVAL;
	if (v > UINT64_MAX / m)
		return -ERANGE;
	*out = v * m;
	return 0;
}

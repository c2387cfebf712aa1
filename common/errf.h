/* One-line error messages for parsers and builders: formats into err (when
 * given) and returns -EINVAL, so `return mrc__errf(err, len, "...", ...)`
 * both explains and fails. */
#ifndef MRC_COMMON_ERRF_H
#define MRC_COMMON_ERRF_H

#include <stddef.h>

int mrc__errf(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif

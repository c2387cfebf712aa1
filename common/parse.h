/* Numbers from the command line and the environment, checked whole: no
 * blanks, sign, trailing junk or overflow (what strtoul and atoi let
 * through), so a typo is an error rather than a 0. */
#ifndef MRC_COMMON_PARSE_H
#define MRC_COMMON_PARSE_H

#include <stdint.h>

/* Decimal digits only, lo <= value <= hi; -EINVAL otherwise. */
int mrc__parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out);
/* A byte count: decimal digits, then optionally K, M or G (powers of
 * 1024, either case), an optional "i" after it and an optional "B":
 * "4096", "64K", "1GiB".  -EINVAL for anything else, -ERANGE past 2^64. */
int mrc__parse_size(const char *s, uint64_t *out);

#endif

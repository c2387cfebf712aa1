/* UTC ISO 8601 time stamps ("2024-05-01T12:00:00.123Z") for the operator
 * interface's JSON. */
#ifndef MRC_COMMON_ISOTIME_H
#define MRC_COMMON_ISOTIME_H

#include <stddef.h>
#include <stdint.h>

/* Formats real_ns (nanoseconds since the epoch) with digits (3: ms, 6: us,
 * at most 9) of fraction into buf. */
void mrc__iso_time(uint64_t real_ns, unsigned digits, char *buf, size_t len);

#endif

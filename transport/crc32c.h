/* CRC-32C (Castagnoli), as iSCSI/SCTP/RoCE-style integrity checks use it. */
#ifndef MRC_TRANSPORT_CRC32C_H
#define MRC_TRANSPORT_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Standard CRC-32C of p[0..n) continuing from crc (pass 0 to start):
 * mrce_crc32c(mrce_crc32c(0, a, na), b, nb) == CRC-32C of a||b, and
 * mrce_crc32c(0, "123456789", 9) == 0xE3069283.  Uses the CPU's crc32
 * instruction (SSE4.2, chosen at run time) and a table otherwise. */
uint32_t mrce_crc32c(uint32_t crc, const void *p, size_t n);

/* The portable table version, exposed so tests can compare the two. */
uint32_t mrce__crc32c_sw(uint32_t crc, const void *p, size_t n);

#endif

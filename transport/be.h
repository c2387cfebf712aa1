/* Big-endian loads and stores of wire fields, for the files of transport/
 * that lay out packets (wire.c, ctrl.c, seal.c).  Through memcpy: no
 * unaligned-pointer UB, and each compiles to a single mov + bswap. */
#ifndef MRC_TRANSPORT_BE_H
#define MRC_TRANSPORT_BE_H

#include <endian.h>
#include <stdint.h>
#include <string.h>

static inline void st16(uint8_t *p, uint16_t v) { v = htobe16(v); memcpy(p, &v, 2); }
static inline void st32(uint8_t *p, uint32_t v) { v = htobe32(v); memcpy(p, &v, 4); }
static inline void st64(uint8_t *p, uint64_t v) { v = htobe64(v); memcpy(p, &v, 8); }
static inline uint16_t ld16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return be16toh(v); }
static inline uint32_t ld32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return be32toh(v); }
static inline uint64_t ld64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return be64toh(v); }

#endif

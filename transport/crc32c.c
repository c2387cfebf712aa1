/* CRC-32C (Castagnoli, reflected polynomial 0x82F63B78).
 *
 * Three implementations behind one entry point, chosen once at run time:
 *   - hw3:  SSE4.2 crc32 instruction over three interleaved streams,
 *           combined with PCLMULQDQ (the common case on x86-64);
 *   - hw1:  SSE4.2 crc32 instruction, one stream (SSE4.2 without PCLMUL);
 *   - sw:   slice-by-8 tables (anything else, and the reference for tests).
 *
 * All of them work on the raw CRC register; the public function inverts on
 * entry and exit, which is what makes chaining (passing a previous result
 * as crc) equal to the CRC of the concatenation.
 */
#include "transport/crc32c.h"

#include <endian.h>
#include <pthread.h>
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#define MRC_CRC_X86 1
#endif

#define POLY 0x82F63B78u

typedef uint32_t crc_fn(uint32_t reg, const uint8_t *p, size_t n);

static uint32_t sw_tab[8][256];

static inline uint64_t ld64le(const uint8_t *p)
{
	uint64_t w;
	memcpy(&w, p, 8); /* no alignment assumption, compiles to one load */
	return le64toh(w);
}

/* ---- portable slice-by-8 ----------------------------------------------- */

static uint32_t sw_reg(uint32_t c, const uint8_t *p, size_t n)
{
	while (n && ((uintptr_t)p & 7)) {
		c = sw_tab[0][(c ^ *p++) & 0xff] ^ (c >> 8);
		n--;
	}
	for (; n >= 8; n -= 8, p += 8) {
		uint64_t w = ld64le(p) ^ c;
		c = sw_tab[7][w & 0xff] ^ sw_tab[6][(w >> 8) & 0xff] ^
		    sw_tab[5][(w >> 16) & 0xff] ^ sw_tab[4][(w >> 24) & 0xff] ^
		    sw_tab[3][(w >> 32) & 0xff] ^ sw_tab[2][(w >> 40) & 0xff] ^
		    sw_tab[1][(w >> 48) & 0xff] ^ sw_tab[0][w >> 56];
	}
	while (n--)
		c = sw_tab[0][(c ^ *p++) & 0xff] ^ (c >> 8);
	return c;
}

/* ---- hardware ----------------------------------------------------------- */

#ifdef MRC_CRC_X86
/* Why three streams: crc32q has a latency of 3 cycles but a throughput of
 * one per cycle, so a single dependent chain runs at 8 bytes / 3 cycles.
 * Three independent chains over the three thirds of the buffer keep the
 * unit busy every cycle (~3x).  CRC is linear, so
 *     reg(A||B) = reg(A) * x^(8|B|) mod P  xor  reg_from_0(B),
 * and the "shift by |B| zero bytes" is one carry-less multiply of reg(A)
 * by a precomputed constant followed by one crc32q as the reduction:
 * clmul of two 32-bit reflected values is x*A*K as a 64-bit reflected
 * value, crc32q(0, v) multiplies by x^32 mod P, so K = x^(8L-33) mod P
 * yields A * x^(8L) mod P.  The constants for every block length that is
 * a multiple of 8 up to STREAM_MAX are tabulated once at start-up, so any
 * buffer length >= 3*STREAM_MIN gets one 3-way pass with exactly equal
 * thirds (4 KiB: 3 x 1360 bytes + a 16-byte tail) instead of leaving a
 * large single-stream remainder. */
#define STREAM_MIN 64            /* below 3x this the combine isn't worth it */
#define STREAM_MAX 4096          /* bytes per stream per pass */
static uint32_t shift_k[STREAM_MAX / 8 + 1]; /* [k]: x^(64k-33) mod P */

__attribute__((target("sse4.2")))
static uint32_t hw1_reg(uint32_t c, const uint8_t *p, size_t n)
{
	uint64_t c64 = c;
	for (; n >= 8; n -= 8, p += 8)
		c64 = _mm_crc32_u64(c64, ld64le(p));
	c = (uint32_t)c64;
	if (n & 4) {
		uint32_t w;
		memcpy(&w, p, 4);
		c = _mm_crc32_u32(c, le32toh(w));
		p += 4;
	}
	for (n &= 3; n; n--)
		c = _mm_crc32_u8(c, *p++);
	return c;
}

__attribute__((target("sse4.2,pclmul")))
static inline uint32_t hw_shift(uint32_t reg, uint32_t k)
{
	__m128i m = _mm_clmulepi64_si128(_mm_cvtsi32_si128((int)reg),
					 _mm_cvtsi32_si128((int)k), 0x00);
	return (uint32_t)_mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(m));
}

__attribute__((target("sse4.2,pclmul")))
static uint32_t hw3_reg(uint32_t c, const uint8_t *p, size_t n)
{
	while (n >= 3 * STREAM_MIN) {
		size_t l = (n / 24) * 8;
		if (l > STREAM_MAX)
			l = STREAM_MAX;
		const uint8_t *q = p + l, *r = p + 2 * l;
		uint64_t a = c, b = 0, d = 0;
		for (size_t i = 0; i < l; i += 8) {
			a = _mm_crc32_u64(a, ld64le(p + i));
			b = _mm_crc32_u64(b, ld64le(q + i));
			d = _mm_crc32_u64(d, ld64le(r + i));
		}
		uint32_t k = shift_k[l / 8];
		c = hw_shift((uint32_t)a, k) ^ (uint32_t)b;
		c = hw_shift(c, k) ^ (uint32_t)d;
		p += 3 * l;
		n -= 3 * l;
	}
	return hw1_reg(c, p, n);
}
#endif

/* ---- one-time set-up and dispatch ---------------------------------------- */

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static crc_fn *best_impl;

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int b = 0; b < 8; b++)
			c = (c >> 1) ^ (POLY & (0u - (c & 1)));
		sw_tab[0][i] = c;
	}
	for (int t = 1; t < 8; t++)
		for (int i = 0; i < 256; i++)
			sw_tab[t][i] = (sw_tab[t - 1][i] >> 8) ^
				       sw_tab[0][sw_tab[t - 1][i] & 0xff];
	best_impl = sw_reg;
#ifdef MRC_CRC_X86
	/* Reflected polynomials: bit 31 is x^0, shifting right multiplies by
	 * x.  shift_k[1] = x^31 is bit 0; each next entry is x^64 further. */
	uint32_t x = 1;
	shift_k[0] = 0;
	for (size_t k = 1; k <= STREAM_MAX / 8; k++) {
		shift_k[k] = x;
		for (int i = 0; i < 64; i++)
			x = (x >> 1) ^ (POLY & (0u - (x & 1)));
	}
	__builtin_cpu_init();
	if (__builtin_cpu_supports("sse4.2"))
		best_impl = __builtin_cpu_supports("pclmul") ? hw3_reg : hw1_reg;
#endif
}

static uint32_t resolve(uint32_t c, const uint8_t *p, size_t n);
/* Starts at the resolver; after the first call it is the chosen
 * implementation (release/acquire so the tables are seen complete). */
static crc_fn *impl = resolve;

static uint32_t resolve(uint32_t c, const uint8_t *p, size_t n)
{
	pthread_once(&init_once, crc_init);
	__atomic_store_n(&impl, best_impl, __ATOMIC_RELEASE);
	return best_impl(c, p, n);
}

uint32_t mrce_crc32c(uint32_t crc, const void *p, size_t n)
{
	crc_fn *f = __atomic_load_n(&impl, __ATOMIC_ACQUIRE);
	return ~f(~crc, p, n);
}

uint32_t mrce__crc32c_sw(uint32_t crc, const void *p, size_t n)
{
	pthread_once(&init_once, crc_init);
	return ~sw_reg(~crc, p, n);
}

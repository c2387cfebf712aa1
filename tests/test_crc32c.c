/* CRC-32C: published vectors, chaining, and the dispatched (hardware)
 * implementation against the portable table one on random buffers of every
 * small length, large lengths and misaligned starts.
 * Seed: MRC_TEST_SEED=<n> replays a run; it is printed with every failure. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "tests/support/seeded.h"
#include "transport/crc32c.h"


static void fill(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)rnd();
}


/* Check value of the catalogue and RFC 3720 (iSCSI) appendix B.4. */
static void test_vectors(void **state)
{
	(void)state;
	uint8_t b[48];

	assert_int_equal(mrce_crc32c(0, "123456789", 9), 0xE3069283u);
	assert_int_equal(mrce__crc32c_sw(0, "123456789", 9), 0xE3069283u);
	assert_int_equal(mrce_crc32c(0, "", 0), 0);
	assert_int_equal(mrce_crc32c(0x12345678u, "", 0), 0x12345678u);

	memset(b, 0, 32);
	assert_int_equal(mrce_crc32c(0, b, 32), 0x8A9136AAu);
	memset(b, 0xff, 32);
	assert_int_equal(mrce_crc32c(0, b, 32), 0x62A8AB43u);
	for (int i = 0; i < 32; i++)
		b[i] = (uint8_t)i;
	assert_int_equal(mrce_crc32c(0, b, 32), 0x46DD794Eu);
	assert_int_equal(mrce__crc32c_sw(0, b, 32), 0x46DD794Eu);
	for (int i = 0; i < 32; i++)
		b[i] = (uint8_t)(31 - i);
	assert_int_equal(mrce_crc32c(0, b, 32), 0x113FDB5Cu);
	static const uint8_t iscsi[48] = {
		0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00,
		0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18,
		0x28, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	};
	assert_int_equal(mrce_crc32c(0, iscsi, 48), 0xD9963A56u);
	assert_int_equal(mrce__crc32c_sw(0, iscsi, 48), 0xD9963A56u);
}

/* A CRC register inverted on entry/exit: running the bitwise definition
 * here keeps the test independent of both implementations' tables. */
static uint32_t crc_bitwise(uint32_t crc, const uint8_t *p, size_t n)
{
	crc = ~crc;
	while (n--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1)));
	}
	return ~crc;
}

static void test_sw_vs_bitwise(void **state)
{
	(void)state;
	uint8_t b[600];
	fill(b, sizeof b);
	for (size_t n = 0; n <= 512; n++) {
		size_t off = rnd() % 8;
		uint32_t init = (uint32_t)rnd();
		uint32_t want = crc_bitwise(init, b + off, n);
		CHECK(mrce__crc32c_sw(init, b + off, n) == want,
		      "sw != bitwise at n=%zu off=%zu", n, off);
	}
}

/* Every length 0..2048 at every start offset mod 16, random initial crc. */
static void test_hw_vs_sw_small(void **state)
{
	(void)state;
	enum { MAXN = 2048, OFFS = 16 };
	uint8_t *b = malloc(MAXN + OFFS);
	assert_non_null(b);
	fill(b, MAXN + OFFS);
	for (size_t n = 0; n <= MAXN; n++) {
		for (size_t off = 0; off < OFFS; off++) {
			uint32_t init = (n + off) % 3 ? (uint32_t)rnd() : 0;
			uint32_t hw = mrce_crc32c(init, b + off, n);
			uint32_t sw = mrce__crc32c_sw(init, b + off, n);
			CHECK(hw == sw, "n=%zu off=%zu init=%08x: hw %08x sw %08x",
			      n, off, init, hw, sw);
		}
		if (n % 64 == 0)
			fill(b, MAXN + OFFS);
	}
	free(b);
}

/* Large buffers and the lengths around the 3-way block boundaries
 * (3 x 4096 bytes per pass, minimum 3 x 64). */
static void test_hw_vs_sw_large(void **state)
{
	(void)state;
	enum { MAXN = (1 << 20) + 64 };
	uint8_t *b = malloc(MAXN + 8);
	assert_non_null(b);
	fill(b, MAXN + 8);
	static const size_t ns[] = {
		191, 192, 193, 199, 200, 4095, 4096, 4097, 9000, 9052,
		12287, 12288, 12289, 12288 + 191, 12288 + 192, 24576 + 7,
		65536, 1 << 20, MAXN,
	};
	for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
		for (size_t off = 0; off < 8; off++) {
			size_t n = ns[i];
			uint32_t init = (uint32_t)rnd();
			uint32_t hw = mrce_crc32c(init, b + off, n);
			uint32_t sw = mrce__crc32c_sw(init, b + off, n);
			CHECK(hw == sw, "n=%zu off=%zu: hw %08x sw %08x",
			      n, off, hw, sw);
		}
	}
	for (int i = 0; i < 200; i++) {
		size_t n = (size_t)(rnd() % MAXN), off = (size_t)(rnd() % 8);
		uint32_t hw = mrce_crc32c(0, b + off, n);
		uint32_t sw = mrce__crc32c_sw(0, b + off, n);
		CHECK(hw == sw, "n=%zu off=%zu: hw %08x sw %08x", n, off, hw, sw);
	}
	free(b);
}

/* crc(crc(a), b) == crc(a||b) for every split point, both paths. */
static void test_chaining(void **state)
{
	(void)state;
	enum { N = 5000 };
	uint8_t *b = malloc(N);
	assert_non_null(b);
	fill(b, N);
	uint32_t whole = mrce__crc32c_sw(0, b, N);
	for (size_t cut = 0; cut <= N; cut += (cut < 300 ? 1 : 37)) {
		uint32_t h = mrce_crc32c(mrce_crc32c(0, b, cut), b + cut, N - cut);
		uint32_t s = mrce__crc32c_sw(mrce__crc32c_sw(0, b, cut), b + cut,
					    N - cut);
		CHECK(h == whole && s == whole, "cut=%zu: hw %08x sw %08x want %08x",
		      cut, h, s, whole);
	}
	free(b);
}

/* Any single-bit error changes the CRC (the property the wire relies on). */
static void test_single_bit_errors(void **state)
{
	(void)state;
	uint8_t b[300];
	fill(b, sizeof b);
	uint32_t ref = mrce_crc32c(0, b, sizeof b);
	for (size_t bit = 0; bit < sizeof b * 8; bit++) {
		b[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		CHECK(mrce_crc32c(0, b, sizeof b) != ref, "bit %zu undetected", bit);
		b[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	}
}

int main(void)
{
	seed_init("test_crc32c");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_vectors, reseed),
		cmocka_unit_test_setup(test_sw_vs_bitwise, reseed),
		cmocka_unit_test_setup(test_hw_vs_sw_small, reseed),
		cmocka_unit_test_setup(test_hw_vs_sw_large, reseed),
		cmocka_unit_test_setup(test_chaining, reseed),
		cmocka_unit_test_setup(test_single_bit_errors, reseed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

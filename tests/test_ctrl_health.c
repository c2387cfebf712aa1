/* The HEALTH CTRL body's codec (transport/ctrl.c, docs/wire.md "HEALTH"):
 * round trips at every count, and every malformed shape refused. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "tests/support/seeded.h"

#include "transport/engine.h"

static struct mrce_ctrl_health random_msg(uint32_t n)
{
	struct mrce_ctrl_health m = { .n = n };
	for (uint32_t i = 0; i < n; i++)
		m.obs[i] = (struct mrce_ctrl_health_obs){ .dst = (uint32_t)rnd(),
			.ev = (uint16_t)rnd(), .ok = (uint8_t)(rnd() & 1), .age_us = (uint32_t)rnd() };
	return m;
}

static void round_trip(void **state)
{
	for (uint32_t n = 1; n <= MRCE_CTRL_HEALTH_MAX; n++) {
		struct mrce_ctrl_health m = random_msg(n), back;
		uint8_t b[MRCE_CTRL_HEALTH_LEN(MRCE_CTRL_HEALTH_MAX)];
		size_t len = mrce_ctrl_health_encode(b, &m);
		CHECK(len == MRCE_CTRL_HEALTH_LEN(n), "n %u: len %zu", n, len);
		CHECK(mrce_ctrl_health_decode(b, len, &back) == 0, "n %u", n);
		CHECK(back.n == n, "n %u", n);
		for (uint32_t i = 0; i < n; i++)
			CHECK(back.obs[i].dst == m.obs[i].dst && back.obs[i].ev == m.obs[i].ev &&
			      back.obs[i].ok == m.obs[i].ok && back.obs[i].age_us == m.obs[i].age_us,
			      "n %u record %u", n, i);
	}
	/* More than the maximum is capped, never overflows. */
	struct mrce_ctrl_health m = random_msg(MRCE_CTRL_HEALTH_MAX);
	m.n = 1000;
	uint8_t b[MRCE_CTRL_HEALTH_LEN(MRCE_CTRL_HEALTH_MAX)];
	assert_int_equal(mrce_ctrl_health_encode(b, &m), MRCE_CTRL_HEALTH_LEN(MRCE_CTRL_HEALTH_MAX));
}

static void malformed_refused(void **state)
{
	struct mrce_ctrl_health m = random_msg(3), out;
	uint8_t b[MRCE_CTRL_HEALTH_LEN(MRCE_CTRL_HEALTH_MAX) + 16], x[sizeof(b)];
	size_t len = mrce_ctrl_health_encode(b, &m);
	/* Every length but the right one. */
	for (size_t l = 0; l < sizeof(b); l++)
		if (l != len)
			CHECK(mrce_ctrl_health_decode(b, l, &out) == -EBADMSG, "len %zu", l);
	/* Each byte that must hold a fixed value: type, reserved, ok, n. */
	static const size_t fixed[] = { 0, 1, 2, 3, 6, 7, 8 + 6, 8 + 7, 20 + 6, 20 + 7, 32 + 7 };
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
		memcpy(x, b, len);
		x[fixed[i]] = (uint8_t)(x[fixed[i]] + 2);
		CHECK(mrce_ctrl_health_decode(x, len, &out) == -EBADMSG, "byte %zu", fixed[i]);
	}
	/* n: 0, larger than what follows, over the maximum. */
	uint16_t ns[] = { 0, 4, MRCE_CTRL_HEALTH_MAX + 1, 0xffff };
	for (size_t i = 0; i < 4; i++) {
		memcpy(x, b, len);
		x[4] = (uint8_t)(ns[i] >> 8);
		x[5] = (uint8_t)ns[i];
		CHECK(mrce_ctrl_health_decode(x, len, &out) == -EBADMSG, "n %u", ns[i]);
	}
	/* A well-formed body of one record more than the maximum (its
	 * records would not fit the struct). */
	uint8_t big[MRCE_CTRL_HEALTH_LEN(MRCE_CTRL_HEALTH_MAX + 1)];
	memset(big, 0, sizeof(big));
	big[0] = MRCE_CTRL_HEALTH;
	big[4] = (uint8_t)((MRCE_CTRL_HEALTH_MAX + 1) >> 8);
	big[5] = (uint8_t)(MRCE_CTRL_HEALTH_MAX + 1);
	assert_int_equal(mrce_ctrl_health_decode(big, sizeof(big), &out), -EBADMSG);
	big[5] = (uint8_t)MRCE_CTRL_HEALTH_MAX;
	assert_int_equal(mrce_ctrl_health_decode(big, MRCE_CTRL_HEALTH_LEN(MRCE_CTRL_HEALTH_MAX),
						 &out), 0);
	/* Another CTRL type's body is not HEALTH, nor HEALTH one of theirs. */
	struct mrce_ctrl c;
	assert_int_equal(mrce_ctrl_decode(b, len, &c), -EBADMSG);
	assert_int_equal(mrce_ctrl_decode(b, MRCE_CTRL_BODY, &c), -EBADMSG);
	uint8_t planes[MRCE_CTRL_BODY];
	mrce_ctrl_encode(planes, &(struct mrce_ctrl){ .type = MRCE_CTRL_PLANES, .arg = 1 });
	assert_int_equal(mrce_ctrl_health_decode(planes, sizeof(planes), &out), -EBADMSG);
}

int main(void)
{
	seed_init("test_ctrl_health");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(round_trip, reseed),
		cmocka_unit_test_setup(malformed_refused, reseed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

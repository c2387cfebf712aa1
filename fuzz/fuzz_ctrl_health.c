/* libFuzzer: the HEALTH CTRL body (transport/ctrl.c, docs/wire.md
 * "HEALTH").  An accepted body re-encodes to the same bytes; a refused
 * one leaves nothing behind (the decoder writes only what it accepted). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "transport/engine.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mrce_ctrl_health m;
	if (mrce_ctrl_health_decode(data, size, &m))
		return 0;
	if (m.n < 1 || m.n > MRCE_CTRL_HEALTH_MAX)
		abort();
	uint8_t again[MRCE_CTRL_HEALTH_LEN(MRCE_CTRL_HEALTH_MAX)];
	size_t n = mrce_ctrl_health_encode(again, &m);
	if (n != size || memcmp(again, data, size))
		abort();
	return 0;
}

/* libFuzzer: daemon-to-daemon CTRL datagrams (daemon/ctrl.h).  Accepted
 * datagrams re-encode to the same bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/core/ctrl.h"
#include "transport/crc32c.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mrcd_ctrl m;
	uint8_t again[MRCD_CTRL_LEN];
	if (!mrcd_ctrl_decode(data, size, &m)) {
		mrcd_ctrl_encode(again, &m);
		if (size != MRCD_CTRL_LEN || memcmp(again, data, size))
			abort();
	}
	/* Also with a valid CRC, so the field checks behind it are reached. */
	if (size == MRCD_CTRL_LEN) {
		uint8_t b[MRCD_CTRL_LEN];
		memcpy(b, data, size);
		uint32_t c = mrc_crc32c(0, b, 40);
		b[40] = (uint8_t)(c >> 24);
		b[41] = (uint8_t)(c >> 16);
		b[42] = (uint8_t)(c >> 8);
		b[43] = (uint8_t)c;
		if (!mrcd_ctrl_decode(b, size, &m)) {
			mrcd_ctrl_encode(again, &m);
			if (memcmp(again, b, size))
				abort();
		}
	}
	return 0;
}

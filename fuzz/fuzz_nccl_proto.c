/* libFuzzer: what the NCCL plugin takes from peers (nccl/proto.h): a
 * clear-to-send as it lands in a posted RECV (any length), and a listen
 * handle as NCCL carries it between ranks.  Invariants: an accepted CTS
 * names an id in range and a window inside the arena; an accepted handle
 * names one of the plugin's service ids. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nccl/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mrcn_cts c;
	if (!mrcn_cts_parse(data, (uint32_t)size, &c)) {
		if (size != sizeof(c) || c.id >= MRCN_NCTS || c.off + c.size > MRCN_ARENA ||
		    c.size > MRCN_MAX_MSG)
			abort();
	}
	uint8_t h[128] = { 0 };
	memcpy(h, data, size < sizeof(h) ? size : sizeof(h));
	struct mrcn_handle hd;
	if (!mrcn_handle_parse(h, &hd) &&
	    (hd.magic != MRCN_HANDLE_MAGIC || hd.sid < MRCN_SID_BASE ||
	     hd.sid >= MRCN_SID_BASE + MRCN_SID_SPAN))
		abort();
	return 0;
}

/* libFuzzer target for the frame datapaths' receive parser
 * (datapath/frame.c): any bytes as a received Ethernet frame.  What parses
 * lies inside the input, and rebuilding it from the parsed fields gives a
 * frame that parses to the same datagram. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "datapath/frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* An exact-size copy, so the sanitizer sees any read past the end. */
	uint8_t *f = malloc(size ? size : 1);
	if (!f)
		return 0;
	memcpy(f, data, size);
	struct mrc__dp_frame_rx rx;
	if (mrc__dp_frame_parse(f, size, &rx) == 0) {
		if (rx.payload < f + 14 + 40 + 8 || rx.len > size ||
		    rx.payload + rx.len > f + size)
			abort();
		static uint8_t g[MRC__FRAME_HDR_LEN + MRC_DP_MAX_DGRAM];
		struct mrc__dp_frame_hdr h = { .src = rx.src, .sport = rx.sport };
		memcpy(h.dmac, f, 6);
		memcpy(h.smac, f + 6, 6);
		/* the payload split in two pieces, as header + payload */
		size_t cut = rx.len / 3;
		struct mrc_dp_out o = { .dport = rx.dport ? rx.dport : rx.sport, .dst = rx.dst,
			.iovcnt = 2, .iov = { { (void *)rx.payload, cut },
					      { (void *)(rx.payload + cut), rx.len - cut } } };
		int n = mrc__dp_frame_build(g, sizeof(g), &h, &o);
		if (rx.len > MRC_DP_MAX_DGRAM) {
			if (n != -EMSGSIZE)
				abort();
		} else {
			struct mrc__dp_frame_rx r2;
			if (n != (int)(MRC__FRAME_HDR_LEN + rx.len) ||
			    mrc__dp_frame_parse(g, (size_t)n, &r2) || r2.len != rx.len ||
			    memcmp(r2.payload, rx.payload, rx.len) ||
			    memcmp(&r2.src, &rx.src, 16) || memcmp(&r2.dst, &rx.dst, 16) ||
			    r2.sport != rx.sport || r2.dport != o.dport || r2.ecn != 2)
				abort();
		}
	}
	free(f);
	return 0;
}

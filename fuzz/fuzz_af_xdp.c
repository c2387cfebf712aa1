/* libFuzzer: the af_xdp datapath's frame parser (datapath/af_xdp_frame.c),
 * which reads frames straight off the wire.  Invariants: what it accepts
 * lies inside the frame, and a frame built from what it reported parses
 * back to the same. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "datapath/af_xdp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mrc__xdp_pkt p, q;
	uint16_t port = size >= 2 ? (uint16_t)(data[0] << 8 | data[1]) : 4791;
	if (size < 2 || mrc__xdp_parse(data + 2, size - 2, port, &p))
		return 0;
	if (p.off > size - 2 || p.len > size - 2 - p.off)
		abort();
	uint8_t *f = malloc(MRC__XDP_HDR_LEN + p.len);
	if (!f)
		return 0;
	struct mrc__xdp_addrs a = { .src = p.src, .sport = p.sport };
	struct in6_addr dst;
	memcpy(&dst, data + 2 + 14 + 24, sizeof(dst));
	if (mrc__xdp_hdr_build(f, &a, &dst, port, p.len))
		abort();
	memcpy(f + MRC__XDP_HDR_LEN, data + 2 + p.off, p.len);
	if (mrc__xdp_parse(f, MRC__XDP_HDR_LEN + p.len, port, &q) || q.len != p.len ||
	    q.sport != p.sport || memcmp(&q.src, &p.src, sizeof(q.src)) ||
	    memcmp(f + q.off, data + 2 + p.off, p.len))
		abort();
	free(f);
	return 0;
}

/* libFuzzer: the pre-gated MoE dispatch's reading of the header rows its
 * peers send (coll/pregate_hdr.c).  The input: a rank count (1-8), a row
 * stride, the predicted rows per source, then the received rows laid out
 * as the main exchange lays them (per source a header row, then its
 * predicted rows), truncated wherever the input ends.  Invariants: what
 * parses agrees with the prediction (real rows at most predicted, extra
 * rows only after all predicted ones are real), and a parse never reads
 * past the buffer (ASan).  The same input read as the 2-D pre-gate's
 * gathered counts (n x n int64 from the bytes after the first two,
 * zero-filled past the input): what is accepted has each block's header
 * added and prc = the column of rank me, every count 32 bits. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "coll/pregate_hdr.h"

static void counts(uint32_t n, uint32_t me, size_t strideb, const uint8_t *data, size_t size)
{
	int64_t M[64], M0[64];
	size_t prc[8];
	memset(M, 0, sizeof(M));
	memcpy(M, data, size < (size_t)n * n * 8 ? size : (size_t)n * n * 8);
	memcpy(M0, M, sizeof(M));
	if (mrc__coll_pregate_counts(n, me, M, strideb, prc))
		return;
	for (uint32_t i = 0; i < n * n; i++)
		if (M0[i] < 0 || M0[i] >= (int64_t)UINT32_MAX || M[i] != M0[i] + 1)
			abort();
	for (uint32_t s = 0; s < n; s++)
		if (prc[s] != (size_t)M0[(size_t)s * n + me])
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	counts(1 + data[0] % 8, data[1] % (1 + data[0] % 8), 1 + data[1] % 32, data + 2, size - 2);
	uint32_t n = 1 + data[0] % 8;
	size_t strideb = 1 + data[1] % 32, prc[8], md[8], rc[8], xc[8], at = 0;
	data += 2, size -= 2;
	for (uint32_t s = 0; s < n; s++) {
		prc[s] = s < size ? data[s] % 16 : 0;
		md[s] = at;
		at += 1 + prc[s];
	}
	size_t skip = size < n ? size : n;
	data += skip, size -= skip;
	/* a copy of exactly size bytes, so a read past it is caught */
	uint8_t *b = malloc(size ? size : 1);
	if (!b)
		return 0;
	memcpy(b, data, size);
	if (!mrc__coll_pregate_hdrs(n, b, size, strideb, prc, md, rc, xc))
		for (uint32_t s = 0; s < n; s++)
			if (xc[s] > rc[s] || rc[s] - xc[s] > prc[s] ||
			    (xc[s] && rc[s] - xc[s] != prc[s]))
				abort();
	free(b);
	return 0;
}

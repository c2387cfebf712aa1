#include "coll/pregate_hdr.h"

#include <errno.h>
#include <string.h>

int mrc__coll_pregate_hdrs(uint32_t n, const uint8_t *rbuf, size_t rbuf_bytes, size_t strideb,
			   const size_t *prc, const size_t *md, size_t *rc, size_t *xc)
{
	size_t in = 0;
	if (strideb < sizeof(struct mrc__pg_hdr))
		return -EPROTO;
	for (uint32_t s = 0; s < n; s++) {
		struct mrc__pg_hdr h;
		if (md[s] >= rbuf_bytes / strideb)
			return -EPROTO;
		memcpy(&h, rbuf + md[s] * strideb, sizeof(h));
		if (h.valid > prc[s] || (h.extra && h.valid < prc[s]))
			return -EPROTO;
		/* The correction's receive buffer is in * strideb bytes. */
		in += h.extra;
		if (in > (SIZE_MAX / 2) / strideb)
			return -EPROTO;
		rc[s] = (size_t)h.valid + h.extra;
		xc[s] = h.extra;
	}
	return 0;
}

int mrc__coll_pregate_counts(uint32_t n, uint32_t me, int64_t *M, size_t strideb, size_t *prc)
{
	size_t all = 0;
	if (me >= n || !strideb)
		return -EINVAL;
	for (size_t i = 0; i < (size_t)n * n; i++) {
		/* A header row each, counts 32 bits (struct mrc__pg_hdr). */
		if (M[i] < 0 || M[i] >= (int64_t)UINT32_MAX)
			return -EPROTO;
		M[i] += 1;
		all += (size_t)M[i];
		/* Every intermediate buffer of the 2-D phases holds at most
		 * all rows: their bytes stay addressable. */
		if (all > (SIZE_MAX / 2) / strideb)
			return -EPROTO;
	}
	for (uint32_t s = 0; s < n; s++)
		prc[s] = (size_t)M[(size_t)s * n + me] - 1;
	return 0;
}

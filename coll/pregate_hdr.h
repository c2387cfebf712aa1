/* The pre-gated dispatch's header rows (coll/pregate.c): what a peer
 * says of its block in the main exchange, and their reading, kept apart
 * so that the fuzz target (fuzz/fuzz_pregate_hdr.c) links it alone. */
#ifndef MRC_COLL_PREGATE_HDR_H
#define MRC_COLL_PREGATE_HDR_H

#include <stddef.h>
#include <stdint.h>

/* First row of every block of the main exchange: of the block's
 * predicted rows, how many are real (the rest is padding), and how many
 * more follow in the correction exchange.  A row holds it: strideb >= 8
 * (one routing entry at least). */
struct mrc__pg_hdr {
	uint32_t valid, extra;
};

/* Reads the n headers: source s's at row md[s] of rbuf (rbuf_bytes
 * long, rows of strideb bytes), its block prc[s] predicted rows after
 * it.  rc[s] = the rows s really sends us, xc[s] = those of them in the
 * correction exchange.  -EPROTO when a header lies outside rbuf or
 * contradicts the counts (more real rows than predicted, extra rows with
 * padding), or the correction rows could not be addressed. */
int mrc__coll_pregate_hdrs(uint32_t n, const uint8_t *rbuf, size_t rbuf_bytes, size_t strideb,
			   const size_t *prc, const size_t *md, size_t *rc, size_t *xc);

/* The 2-D pre-gate's gathered counts: M[s * n + d] = the rows rank s
 * predicts for rank d (n x n, as every rank announced them).  Adds each
 * block's header row to M in place (the 2-D exchange's layout: 1 + the
 * prediction) and gives prc[s] = rank s's prediction for `me`.  -EPROTO
 * when a count is negative or past 32 bits, or all the rows' bytes
 * (strideb per row) would not be addressable. */
int mrc__coll_pregate_counts(uint32_t n, uint32_t me, int64_t *M, size_t strideb, size_t *prc);

#endif

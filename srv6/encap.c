/* SRv6 encapsulation of uSID lists of any length: packed into a destination
 * address plus, when one container is not enough, an SRH carrying the rest
 * (struct mrc_srv6_encap). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "srv6/usid.h"
#include "srv6/usid_internal.h"

int mrc_srv6_encode(const struct mrc_usid_block *b, const uint16_t *usids,
			 size_t n, uint8_t nexthdr, struct mrc_srv6_encap *p,
			 struct mrc_srv6_err *err)
{
	unsigned cap = mrc_usid_block_capacity(b);
	size_t k;
	int rc;

	if (!cap)
		return mrc_usid_block_check(b, err);
	if (!p || (n && !usids)) {
		mrc__srv6_set_err(err, "no input or output");
		return -EINVAL;
	}
	if (n == 0) {
		mrc__srv6_set_err(err, "empty uSID list");
		return -EINVAL;
	}
	k = (n + cap - 1) / cap;
	if (k > MRC_SRH_MAX_SEGS) {
		mrc__srv6_set_err(err, "%zu uSIDs need %zu containers, an SRH holds at most %u",
			      n, k, MRC_SRH_MAX_SEGS);
		return -E2BIG;
	}
	memset(p, 0, sizeof(*p));
	if (k == 1)
		return mrc_usid_encode(b, usids, n, &p->dst, err);
	/* Container i (in travel order) goes to segs[k - 1 - i]. */
	for (size_t i = 0; i < k; i++) {
		size_t m = n - i * cap < cap ? n - i * cap : cap;

		rc = mrc_usid_encode(b, usids + i * cap, m, &p->srh.segs[k - 1 - i], err);
		if (rc)
			return rc;
	}
	p->has_srh = true;
	p->srh.nexthdr = nexthdr;
	p->srh.nsegs = (uint8_t)k;
	p->srh.segments_left = (uint8_t)(k - 1);
	p->dst = p->srh.segs[k - 1];
	return 0;
}

/* Only the bounds: once a container has been shifted the destination no
 * longer equals segs[segments_left] (RFC 9800 4.1), so that is not checked. */
static int check_srh(const struct mrc_srh *srh, struct mrc_srv6_err *err)
{
	if (srh->nsegs == 0 || srh->nsegs > MRC_SRH_MAX_SEGS ||
	    srh->segments_left >= srh->nsegs) {
		mrc__srv6_set_err(err, "SRH: segments_left %u with %u segments",
			      srh->segments_left, srh->nsegs);
		return -EINVAL;
	}
	return 0;
}

int mrc_srv6_decode(const struct mrc_usid_block *b,
			 const struct in6_addr *dst, const struct mrc_srh *srh,
			 uint16_t *usids, size_t max, size_t *n,
			 struct mrc_srv6_err *err)
{
	size_t got, total = 0;
	int rc;

	if (!dst || !n || (max && !usids)) {
		mrc__srv6_set_err(err, "no input or output");
		return -EINVAL;
	}
	if (srh && (rc = check_srh(srh, err)))
		return rc;
	rc = mrc_usid_decode(b, dst, usids, max, &got, err);
	if (rc)
		return rc;
	total = got;
	for (int i = srh ? (int)srh->segments_left - 1 : -1; i >= 0; i--) {
		rc = mrc_usid_decode(b, &srh->segs[i], usids + total, max - total, &got, err);
		if (rc) {
			size_t l = strlen(err ? err->msg : "");

			if (err && l + 20 < sizeof(err->msg))
				snprintf(err->msg + l, sizeof(err->msg) - l, " (SRH segment %d)", i);
			return rc;
		}
		total += got;
	}
	*n = total;
	return 0;
}

int mrc_srv6_advance(const struct mrc_usid_block *b, struct in6_addr *dst,
		     struct mrc_srh *srh)
{
	int rc;

	if (!dst)
		return -EINVAL;
	if (srh && check_srh(srh, NULL))
		return -EINVAL;
	rc = mrc_usid_shift(b, dst);
	if (rc != 0)
		return rc;
	if (!srh || srh->segments_left == 0)
		return 0;
	/* RFC 8754 4.3.1.1: decrement Segments Left, copy the next segment. */
	srh->segments_left--;
	*dst = srh->segs[srh->segments_left];
	/* The new container must be well formed before a switch acts on it. */
	if (mrc_usid_active(b, dst, &(uint16_t){0}))
		return -EINVAL;
	return 1;
}

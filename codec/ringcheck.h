/* Validation of submission descriptors read from a client's ring: the one
 * place that decides what a well-formed struct mrc_sqe is (the daemon and
 * the fuzz target share it). */
#ifndef MRC_CODEC_RINGCHECK_H
#define MRC_CODEC_RINGCHECK_H

#include <stdint.h>

#include "mrc/ring.h"

/* What the checker needs to know of a region the client registered. */
struct mrc__mr_view {
	uint64_t len;
	uint32_t access;           /* MRC_MR_* */
};
/* Returns the client's region with this key, or NULL when the key is not
 * one of the client's. */
typedef const struct mrc__mr_view *(*mrc__mr_lookup_fn)(void *ctx, uint32_t key);

#define MRC__MAX_LEN (1ull << 30)

/* 0 when s (a private copy) is well-formed and its local range lies in one
 * of the client's regions with the rights the op needs; otherwise the
 * negative errno of its error completion and a reason:
 *   -EOPNOTSUPP unknown opcode     -EINVAL reserved/unused field not zero
 *   -EMSGSIZE   len above 1 GiB    -ENOKEY lkey not the client's
 *   -ERANGE     range outside the region
 *   -EPERM      region lacks the local right the op needs */
int mrc__sqe_check(const struct mrc_sqe *s, mrc__mr_lookup_fn lookup, void *ctx,
		   const char **why);

/* The completion opcode answering a submission opcode (0 if unknown). */
uint8_t mrc__sqe_cqe_op(uint8_t sqe_op);

#endif

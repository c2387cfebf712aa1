/* Submission descriptor validation (ringcheck.h). */
#include <errno.h>
#include <stddef.h>

#include "codec/ringcheck.h"
#include "mrc/mrc.h"

#define BAD(err, msg) do { *why = (msg); return (err); } while (0)

uint8_t mrc__sqe_cqe_op(uint8_t op)
{
	/* Completion ops answer submission ops one to one (mrc/ring.h pins
	 * it); 0 marks an unknown op. */
	return op >= 1 && op <= MRC_SQE_OP_MAX ? op : 0;
}

static int check_local(const struct mrc_sqe *s, uint32_t need, mrc__mr_lookup_fn lookup,
		       void *ctx, const char **why)
{
	const struct mrc__mr_view *mr = lookup(ctx, s->lkey);
	if (!mr)
		BAD(-ENOKEY, "lkey is not one of this client's regions");
	if (s->loff > mr->len || s->len > mr->len - s->loff)
		BAD(-ERANGE, "local offset + length outside the region");
	if ((mr->access & need) != need)
		BAD(-EPERM, need == MRC_MR_LOCAL_WRITE ? "region not registered LOCAL_WRITE"
						       : "region not registered LOCAL_READ");
	return 0;
}

int mrc__sqe_check(const struct mrc_sqe *s, mrc__mr_lookup_fn lookup, void *ctx,
		   const char **why)
{
	const char *dummy;
	if (!why)
		why = &dummy;
	*why = NULL;
	if (s->op == 0 || s->op > MRC_SQE_OP_MAX)
		BAD(-EOPNOTSUPP, "unknown opcode");
	if ((s->flags & ~MRC_SQE_F_FENCE) || s->rsvd0 || s->rsvd1)
		BAD(-EINVAL, "unknown flag or reserved field not zero");
	if (s->op == MRC_SQE_RECV && s->flags)
		BAD(-EINVAL, "flags set on a RECV");
	if (s->len > MRC__MAX_LEN)
		BAD(-EMSGSIZE, "length above 1 GiB");
	int has_imm = s->op == MRC_SQE_WRITE_IMM || s->op == MRC_SQE_SEND_IMM;
	if (!has_imm && s->imm)
		BAD(-EINVAL, "imm set on an op without immediate");
	if (s->op != MRC_SQE_ATOMIC_ADD && s->add)
		BAD(-EINVAL, "add set on an op other than ATOMIC_ADD");
	switch (s->op) {
	case MRC_SQE_WRITE:
	case MRC_SQE_WRITE_IMM:
		return check_local(s, MRC_MR_LOCAL_READ, lookup, ctx, why);
	case MRC_SQE_SEND:
	case MRC_SQE_SEND_IMM:
		if (s->rkey || s->roff)
			BAD(-EINVAL, "rkey/roff set on a SEND");
		return check_local(s, MRC_MR_LOCAL_READ, lookup, ctx, why);
	case MRC_SQE_RECV:
		if (s->rkey || s->roff)
			BAD(-EINVAL, "rkey/roff set on a RECV");
		return check_local(s, MRC_MR_LOCAL_WRITE, lookup, ctx, why);
	case MRC_SQE_ATOMIC_ADD:
		if (s->lkey || s->loff || s->len)
			BAD(-EINVAL, "lkey/loff/len set on an ATOMIC_ADD");
		if (s->roff & 7)
			BAD(-EINVAL, "ATOMIC_ADD target not 8-byte aligned");
		return 0;
	}
	return 0;
}

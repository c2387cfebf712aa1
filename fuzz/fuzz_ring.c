/* libFuzzer target for ring descriptor validation (codec/ringcheck.c)
 * and the consumer's view of hostile ring memory.
 *
 * Input: a byte that picks the regions' lengths and rights, then a ring
 * of 8 struct mrc_sqe slots as a client could leave them.  The consumer
 * walks the ring the way mrcd does (seq word, private copy, check) from a
 * start index taken from the input; every accepted descriptor must name a
 * local range inside one of the client's regions with the right access,
 * and a refused one must carry a reason and a known errno. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codec/ringcheck.h"
#include "mrc/mrc.h"

#define ENSURE(c) do { if (!(c)) abort(); } while (0)
#define SLOTS 8u

static struct mrc__mr_view mrs[4];

static const struct mrc__mr_view *lookup(void *ctx, uint32_t key)
{
	(void)ctx;
	return key >= 1 && key <= 4 ? &mrs[key - 1] : NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 9)
		return 0;
	uint8_t sel = data[0];
	for (int i = 0; i < 4; i++) {
		mrs[i].len = (uint64_t)((sel >> (2 * i)) & 3) << (10 + 4 * i);
		mrs[i].access = (uint32_t)((sel + i * 5) & MRC_MR_ALL);
	}
	uint64_t start;
	memcpy(&start, data + 1, 8);
	data += 9;
	size -= 9;
	struct mrc_sqe ring[SLOTS];
	memset(ring, 0, sizeof(ring));
	memcpy(ring, data, size < sizeof(ring) ? size : sizeof(ring));
	for (uint64_t i = start; i < start + SLOTS && i >= start; i++) {
		const struct mrc_sqe *slot = &ring[i & (SLOTS - 1)];
		if (slot->seq != (uint32_t)(i + 1))
			break;
		struct mrc_sqe s;
		memcpy(&s, slot, sizeof(s));
		const char *why = NULL;
		int r = mrc__sqe_check(&s, lookup, NULL, &why);
		if (r) {
			ENSURE(why != NULL);
			ENSURE(r == -EOPNOTSUPP || r == -EINVAL || r == -EMSGSIZE || r == -ENOKEY ||
			       r == -ERANGE || r == -EPERM);
			continue;
		}
		ENSURE(s.op >= 1 && s.op <= MRC_SQE_OP_MAX && !s.rsvd0 && !s.rsvd1);
		ENSURE(!(s.flags & ~MRC_SQE_F_FENCE) && !(s.op == MRC_SQE_RECV && s.flags));
		ENSURE(s.len <= MRC__MAX_LEN);
		if (s.op == MRC_SQE_ATOMIC_ADD) {
			ENSURE(!s.lkey && !s.loff && !s.len && !(s.roff & 7));
			continue;
		}
		const struct mrc__mr_view *m = lookup(NULL, s.lkey);
		ENSURE(m && s.loff <= m->len && s.len <= m->len - s.loff);
		ENSURE(m->access & (s.op == MRC_SQE_RECV ? MRC_MR_LOCAL_WRITE : MRC_MR_LOCAL_READ));
		ENSURE(mrc__sqe_cqe_op(s.op) != 0);
	}
	return 0;
}

#include "tests/support/coll_matrix.h"

#include "coll/coll_int.h"

int coll_matrix(uint32_t n, int (*one)(void *arg, const struct coll_case *k), void *arg)
{
	const size_t counts[] = { 0, 1, n + 1, 3 * 4096 + 5 };
	struct coll_case k;
	for (k.kind = 0; k.kind < MRC__C_N; k.kind++)
		for (k.ci = 0; k.ci < sizeof(counts) / sizeof(counts[0]); k.ci++)
			for (k.dt = 0; k.dt < MRC_COLL_NTYPES; k.dt++)
				for (k.op = 0; k.op < MRC_COLL_NOPS; k.op++)
					for (k.inplace = 0; k.inplace < 2; k.inplace++) {
		int reduces = k.kind == MRC__C_ALLREDUCE || k.kind == MRC__C_REDUCE_SCATTER;
		if ((!reduces && k.op) || (k.kind == MRC__C_ALLTOALL && k.inplace))
			continue;
		k.count = counts[k.ci];
		int rc = one(arg, &k);
		if (rc)
			return rc;
	}
	return 0;
}

/* Known inputs and element-by-element checks of every collective, shared
 * by the tests and mrc-coll-perf (#wrong). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/coll_int.h"
#include "common/parse.h"

const char *const mrc__coll_name[MRC__C_N] = { "all_reduce", "reduce_scatter", "all_gather",
					       "broadcast", "alltoall" };

/* Rank r's element i. */
static double val(uint32_t r, size_t i, int op)
{
	if (op == MRC_COLL_PROD)
		return (r + i) % 7 == 0 ? 2 : (r * 5 + i) % 3 == 0 ? -1 : 1;
	return (double)((r * 3 + i * 7) % 5) - 2;
}

static double fold(int op, double a, double b)
{
	switch (op) {
	case MRC_COLL_SUM: return a + b;
	case MRC_COLL_PROD: return a * b;
	case MRC_COLL_MIN: return a < b ? a : b;
	default: return a > b ? a : b;
	}
}

void mrc__coll_put(void *buf, int dtype, size_t i, double v)
{
	switch (dtype) {
	case MRC_COLL_INT32: ((int32_t *)buf)[i] = (int32_t)v; break;
	case MRC_COLL_INT64: ((int64_t *)buf)[i] = (int64_t)v; break;
	case MRC_COLL_FLOAT32: ((float *)buf)[i] = (float)v; break;
	case MRC_COLL_FLOAT64: ((double *)buf)[i] = v; break;
	case MRC_COLL_FLOAT16: ((uint16_t *)buf)[i] = mrc__coll_f2h((float)v); break;
	default: ((uint16_t *)buf)[i] = mrc__coll_f2bf((float)v); break;
	}
}

double mrc__coll_get(const void *buf, int dtype, size_t i)
{
	switch (dtype) {
	case MRC_COLL_INT32: return ((const int32_t *)buf)[i];
	case MRC_COLL_INT64: return (double)((const int64_t *)buf)[i];
	case MRC_COLL_FLOAT32: return ((const float *)buf)[i];
	case MRC_COLL_FLOAT64: return ((const double *)buf)[i];
	case MRC_COLL_FLOAT16: return mrc__coll_h2f(((const uint16_t *)buf)[i]);
	default: return mrc__coll_bf2f(((const uint16_t *)buf)[i]);
	}
}

size_t mrc__coll_in_count(int kind, uint32_t n, size_t count)
{
	return kind == MRC__C_REDUCE_SCATTER || kind == MRC__C_ALLTOALL ? n * count : count;
}

size_t mrc__coll_out_count(int kind, uint32_t n, size_t count)
{
	return kind == MRC__C_ALLGATHER || kind == MRC__C_ALLTOALL ? n * count : count;
}

void mrc__coll_place(int kind, int inplace, uint32_t me, size_t count, size_t esz, uint8_t *in,
		     uint8_t *out, uint8_t **src, uint8_t **dst)
{
	uint8_t *s = in, *d = out;
	if (inplace && kind == MRC__C_ALLGATHER)
		s = out + (size_t)me * count * esz;
	else if (inplace && kind == MRC__C_REDUCE_SCATTER)
		d = in + (size_t)me * count * esz;
	else if (inplace)
		s = out;
	*src = s;
	*dst = d;
}

void mrc__coll_fill(int kind, void *in, uint32_t n, uint32_t me, size_t count, int dtype, int op,
		    uint32_t root)
{
	size_t m = mrc__coll_in_count(kind, n, count);
	for (size_t i = 0; i < m; i++)
		mrc__coll_put(in, dtype, i, val(me, i, op));
}

/* What element i of rank me's output must be. */
static double expect(int kind, uint32_t n, uint32_t me, size_t count, int op, uint32_t root,
		     size_t i)
{
	switch (kind) {
	case MRC__C_ALLREDUCE:
	case MRC__C_REDUCE_SCATTER: {
		size_t k = kind == MRC__C_ALLREDUCE ? i : me * count + i;
		double v = val(0, k, op);
		for (uint32_t r = 1; r < n; r++)
			v = fold(op, v, val(r, k, op));
		return v;
	}
	case MRC__C_ALLGATHER: return val((uint32_t)(i / count), i % count, op);
	case MRC__C_BROADCAST: return val(root, i, op);
	default: return val((uint32_t)(i / count), me * count + i % count, op);
	}
}

size_t mrc__coll_wrong(int kind, const void *out, uint32_t n, uint32_t me, size_t count, int dtype,
		       int op, uint32_t root)
{
	size_t m = mrc__coll_out_count(kind, n, count), bad = 0;
	for (size_t i = 0; i < m; i++)
		bad += mrc__coll_get(out, dtype, i) != expect(kind, n, me, count, op, root, i);
	return bad;
}

int mrc__coll_call(struct mrc_coll *c, int kind, const void *in, void *out, size_t count,
		   int dtype, int op, uint32_t root)
{
	switch (kind) {
	case MRC__C_ALLREDUCE: return mrc_coll_allreduce(c, in, out, count, dtype, op);
	case MRC__C_REDUCE_SCATTER: return mrc_coll_reduce_scatter(c, in, out, count, dtype, op);
	case MRC__C_ALLGATHER: return mrc_coll_allgather(c, in, out, count, dtype);
	case MRC__C_BROADCAST: return mrc_coll_broadcast(c, in, out, count, dtype, root);
	default: return mrc_coll_alltoall(c, in, out, count, dtype);
	}
}

/* Every value whole and in range ("256M": K, M, G are powers of 1024),
 * said on stderr otherwise: a typo must not become a 0-byte sweep. */
int mrc__coll_sweep_opt(struct mrc__coll_sweep *s, int o, const char *arg)
{
	uint64_t v;
	int rc = 0;
	switch (o) {
	case 'b': case 'e':
		if (!(rc = mrc__parse_size(arg, &v)) && v > (1ull << 40))
			rc = -ERANGE;
		if (!rc)
			*(o == 'b' ? &s->minb : &s->maxb) = (size_t)v;
		break;
	case 'f': {
		char *end;
		double f = strtod(arg, &end);
		rc = end == arg || *end || !(f > 1 && f <= 1024) ? -EINVAL : 0;
		if (!rc)
			s->factor = f;
		break;
	}
	case 'c': case 'n': case 'w':
		if (!(rc = mrc__parse_u64(arg, o == 'n', o == 'c' ? 2 : 1000000, &v)))
			*(o == 'c' ? &s->check : o == 'n' ? &s->iters : &s->warm) = (int)v;
		break;
	default: return -1;
	}
	if (rc)
		fprintf(stderr, "-%c '%s': want %s\n", o, arg,
			o == 'b' || o == 'e' ? "a byte count up to 1T (e.g. 8, 64K, 256M)" :
			o == 'f' ? "a factor above 1 (at most 1024)" :
			o == 'c' ? "0, 1 or 2" : o == 'n' ? "1 to 1000000 runs" : "0 to 1000000 runs");
	return rc ? -2 : 0;
}

size_t mrc__coll_sweep_next(const struct mrc__coll_sweep *s, size_t size)
{
	size_t next = (size_t)((double)size * s->factor);
	return next > size ? next : size + 1;
}

void mrc__coll_perf_header(void)
{
	printf("#%12s %12s %8s %6s %6s %10s %8s %8s %7s\n", "size", "count", "type", "redop", "root",
	       "time", "algbw", "busbw", "#wrong");
	printf("#%12s %12s %8s %6s %6s %10s %8s %8s %7s\n", "(B)", "(elements)", "", "", "", "(us)",
	       "(GB/s)", "(GB/s)", "");
}

void mrc__coll_perf_row(size_t bytes, size_t count, const char *type, const char *op, int root,
			double us, double busf, long long wrong)
{
	double algbw = us > 0 ? (double)bytes / us / 1e3 : 0;
	printf(" %12zu %12zu %8s %6s %6d %10.1f %8.3f %8.3f %7lld\n", bytes, count, type, op, root, us,
	       algbw, algbw * busf, wrong);
	fflush(stdout);
}

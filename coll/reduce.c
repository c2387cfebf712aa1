/* Element-wise reductions and the host memory operations table.
 *
 * Each (type, op) pair is its own simple loop over arrays so that the
 * compiler vectorises it (this file is built with -O3; check with
 * `make build/coll/reduce.o EXTRA_CFLAGS=-fopt-info-vec`).  Integers are
 * combined as unsigned so that overflow wraps (as in NCCL) instead of
 * being undefined.  float16 and bfloat16 are widened to float, combined,
 * and rounded back to nearest even by bit arithmetic written by hand:
 * C has no portable half type, and the conversions are plain integer and
 * float operations that vectorise, where _Float16 without F16C would call
 * libgcc once per element.  min/max of floats: a < b ? a : b (NaN
 * handling as the minps/maxps instructions). */
#include <string.h>

#include "coll/coll_int.h"

static inline uint32_t f_bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return u;
}

static inline float bits_f(uint32_t u)
{
	float f;
	memcpy(&f, &u, 4);
	return f;
}

/* binary16 <-> binary32 after F. Giesen's branch-free formulation. */
static inline float h2f(uint16_t h)
{
	const uint32_t shifted_exp = 0x7c00u << 13;
	uint32_t o = (uint32_t)(h & 0x7fff) << 13;
	uint32_t exp = shifted_exp & o;
	o += (uint32_t)(127 - 15) << 23;
	uint32_t inf_nan = o + ((uint32_t)(128 - 16) << 23);
	uint32_t denorm = f_bits(bits_f(o + (1u << 23)) - bits_f(113u << 23));
	/* Selections by mask: a conditional here stops the vectoriser. */
	uint32_t m_inf = -(uint32_t)(exp == shifted_exp), m_den = -(uint32_t)(exp == 0);
	o = (inf_nan & m_inf) | (denorm & m_den) | (o & ~(m_inf | m_den));
	return bits_f(o | (uint32_t)(h & 0x8000) << 16);
}

static inline uint16_t f2h(float ff)
{
	const uint32_t f32infty = 255u << 23, f16max = (127u + 16) << 23;
	const uint32_t denorm_magic = ((127u - 15) + (23 - 10) + 1) << 23;
	uint32_t f = f_bits(ff);
	uint32_t sign = f & 0x80000000u;
	f ^= sign;
	uint32_t big = 0x7c00u | (0x0200u & -(uint32_t)(f > f32infty));
	uint32_t sub = f_bits(bits_f(f) + bits_f(denorm_magic)) - denorm_magic;
	uint32_t norm = (f + ((uint32_t)(15 - 127) << 23) + 0xfff + ((f >> 13) & 1)) >> 13;
	uint32_t m_big = -(uint32_t)(f >= f16max), m_sub = -(uint32_t)(f < (113u << 23)) & ~m_big;
	uint32_t o = (big & m_big) | (sub & m_sub) | (norm & ~(m_big | m_sub));
	return (uint16_t)(o | sign >> 16);
}

static inline float bf2f(uint16_t h)
{
	return bits_f((uint32_t)h << 16);
}

static inline uint16_t f2bf(float ff)
{
	uint32_t u = f_bits(ff);
	uint32_t nan = (u >> 16) | 0x40;
	uint32_t r = (u + 0x7fff + ((u >> 16) & 1)) >> 16;
	return (uint16_t)((u & 0x7fffffff) > 0x7f800000 ? nan : r);
}

float mrc__coll_h2f(uint16_t h) { return h2f(h); }
uint16_t mrc__coll_f2h(float f) { return f2h(f); }
float mrc__coll_bf2f(uint16_t h) { return bf2f(h); }
uint16_t mrc__coll_f2bf(float f) { return f2bf(f); }

#define OP_SUM(a, b) ((a) + (b))
#define OP_PROD(a, b) ((a) * (b))
#define OP_MIN(a, b) ((a) < (b) ? (a) : (b))
#define OP_MAX(a, b) ((a) > (b) ? (a) : (b))

/* Native types: T as stored, W the type the op is computed in. */
#define RED_NATIVE(name, T, W, OP)                                                       \
	static void name(void *dst_, const void *a_, const void *b_, size_t n)           \
	{                                                                                \
		T *dst = dst_;                                                           \
		const T *a = a_, *b = b_;                                                \
		for (size_t i = 0; i < n; i++)                                           \
			dst[i] = (T)OP((W)a[i], (W)b[i]);                                \
	}
/* Signed min/max compare as signed; sum/prod as unsigned (wraps). */
RED_NATIVE(i32_sum, int32_t, uint32_t, OP_SUM)
RED_NATIVE(i32_prod, int32_t, uint32_t, OP_PROD)
RED_NATIVE(i32_min, int32_t, int32_t, OP_MIN)
RED_NATIVE(i32_max, int32_t, int32_t, OP_MAX)
RED_NATIVE(i64_sum, int64_t, uint64_t, OP_SUM)
RED_NATIVE(i64_prod, int64_t, uint64_t, OP_PROD)
RED_NATIVE(i64_min, int64_t, int64_t, OP_MIN)
RED_NATIVE(i64_max, int64_t, int64_t, OP_MAX)
RED_NATIVE(f32_sum, float, float, OP_SUM)
RED_NATIVE(f32_prod, float, float, OP_PROD)
RED_NATIVE(f32_min, float, float, OP_MIN)
RED_NATIVE(f32_max, float, float, OP_MAX)
RED_NATIVE(f64_sum, double, double, OP_SUM)
RED_NATIVE(f64_prod, double, double, OP_PROD)
RED_NATIVE(f64_min, double, double, OP_MIN)
RED_NATIVE(f64_max, double, double, OP_MAX)

/* 16-bit floats: widen, combine, round. */
#define RED_HALF(name, TOF, FROMF, OP)                                                   \
	static void name(void *dst_, const void *a_, const void *b_, size_t n)           \
	{                                                                                \
		uint16_t *dst = dst_;                                                    \
		const uint16_t *a = a_, *b = b_;                                         \
		for (size_t i = 0; i < n; i++)                                           \
			dst[i] = FROMF(OP(TOF(a[i]), TOF(b[i])));                        \
	}
RED_HALF(f16_sum, h2f, f2h, OP_SUM)
RED_HALF(f16_prod, h2f, f2h, OP_PROD)
RED_HALF(f16_min, h2f, f2h, OP_MIN)
RED_HALF(f16_max, h2f, f2h, OP_MAX)
RED_HALF(bf16_sum, bf2f, f2bf, OP_SUM)
RED_HALF(bf16_prod, bf2f, f2bf, OP_PROD)
RED_HALF(bf16_min, bf2f, f2bf, OP_MIN)
RED_HALF(bf16_max, bf2f, f2bf, OP_MAX)

typedef void red_fn(void *, const void *, const void *, size_t);
static red_fn *const table[MRC_COLL_NTYPES][MRC_COLL_NOPS] = {
	[MRC_COLL_INT32] = { i32_sum, i32_prod, i32_min, i32_max },
	[MRC_COLL_INT64] = { i64_sum, i64_prod, i64_min, i64_max },
	[MRC_COLL_FLOAT32] = { f32_sum, f32_prod, f32_min, f32_max },
	[MRC_COLL_FLOAT64] = { f64_sum, f64_prod, f64_min, f64_max },
	[MRC_COLL_FLOAT16] = { f16_sum, f16_prod, f16_min, f16_max },
	[MRC_COLL_BFLOAT16] = { bf16_sum, bf16_prod, bf16_min, bf16_max },
};

void mrc__coll_reduce(void *dst, const void *a, const void *b, size_t count, int dtype, int op)
{
	table[dtype][op](dst, a, b, count);
}

/* The MoE combine's weighted accumulate and the final rounding: one
 * plain loop per type, vectorised like the reductions (the 16-bit
 * conversions are the branch-free ones above).  Only the types the MoE
 * calls accept (float32, float16, bfloat16). */
#define AXPY(name, T, TOF)                                                               \
	static void name(float *acc, const void *x_, float w, size_t n)                  \
	{                                                                                \
		const T *x = x_;                                                         \
		for (size_t i = 0; i < n; i++)                                           \
			acc[i] += w * TOF(x[i]);                                         \
	}
#define AS_FLOAT(v) (v)
AXPY(f32_axpy, float, AS_FLOAT)
AXPY(f16_axpy, uint16_t, h2f)
AXPY(bf16_axpy, uint16_t, bf2f)
#define FROMF(name, T, FROM)                                                             \
	static void name(void *dst_, const float *acc, size_t n)                         \
	{                                                                                \
		T *dst = dst_;                                                           \
		for (size_t i = 0; i < n; i++)                                           \
			dst[i] = FROM(acc[i]);                                           \
	}
FROMF(f16_from, uint16_t, f2h)
FROMF(bf16_from, uint16_t, f2bf)

void mrc__coll_axpy(float *acc, const void *x, float w, size_t count, int dtype)
{
	if (dtype == MRC_COLL_FLOAT16)
		f16_axpy(acc, x, w, count);
	else if (dtype == MRC_COLL_BFLOAT16)
		bf16_axpy(acc, x, w, count);
	else
		f32_axpy(acc, x, w, count);
}

void mrc__coll_from_float(void *dst, const float *acc, size_t count, int dtype)
{
	if (dtype == MRC_COLL_FLOAT16)
		f16_from(dst, acc, count);
	else if (dtype == MRC_COLL_BFLOAT16)
		bf16_from(dst, acc, count);
	else if (dst != (const void *)acc && count)
		memmove(dst, acc, count * sizeof(float));
}

static void host_copy(void *dst, const void *src, size_t bytes)
{
	if (dst != src && bytes)
		memmove(dst, src, bytes);
}

const struct mrc__coll_memops mrc__coll_host_ops = { host_copy, mrc__coll_reduce, mrc__coll_axpy,
						     mrc__coll_from_float };

size_t mrc_coll_dtype_size(int dtype)
{
	static const size_t sz[MRC_COLL_NTYPES] = { 4, 8, 4, 8, 2, 2 };
	return dtype >= 0 && dtype < MRC_COLL_NTYPES ? sz[dtype] : 0;
}

const char *mrc_coll_dtype_name(int dtype)
{
	static const char *const nm[MRC_COLL_NTYPES] = { "int32", "int64", "float", "double",
							 "half", "bfloat16" };
	return dtype >= 0 && dtype < MRC_COLL_NTYPES ? nm[dtype] : "?";
}

const char *mrc_coll_op_name(int op)
{
	static const char *const nm[MRC_COLL_NOPS] = { "sum", "prod", "min", "max" };
	return op >= 0 && op < MRC_COLL_NOPS ? nm[op] : "?";
}

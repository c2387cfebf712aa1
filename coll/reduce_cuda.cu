// The reduction kernels of libmrc-coll's device table (coll/devmem.h):
// dst[i] = a[i] op b[i] for the 6 types x 4 ops, each the same arithmetic
// as the host table (coll/reduce.c), so results are bit-identical:
// integers combined as unsigned (overflow wraps, as NCCL), float16 and
// bfloat16 widened to float, combined, rounded back to nearest even
// (CUDA's __half / __nv_bfloat16 conversions), min/max as a < b ? a : b.
// One grid-stride kernel per (type, op).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "coll/devmem.h"
#include "mrc/coll.h"

namespace {

struct Sum { template <class T> __device__ T operator()(T a, T b) const { return a + b; } };
struct Prod { template <class T> __device__ T operator()(T a, T b) const { return a * b; } };
struct Min { template <class T> __device__ T operator()(T a, T b) const { return a < b ? a : b; } };
struct Max { template <class T> __device__ T operator()(T a, T b) const { return a > b ? a : b; } };

// How a stored element is combined: integers as unsigned for sum and
// prod (wrapping), signed for min and max; halves through float.
template <class T, class Op> struct Comb {
	__device__ static T f(T a, T b) { return Op()(a, b); }
};
template <> struct Comb<int32_t, Sum> {
	__device__ static int32_t f(int32_t a, int32_t b) { return (int32_t)((uint32_t)a + (uint32_t)b); }
};
template <> struct Comb<int32_t, Prod> {
	__device__ static int32_t f(int32_t a, int32_t b) { return (int32_t)((uint32_t)a * (uint32_t)b); }
};
template <> struct Comb<int64_t, Sum> {
	__device__ static int64_t f(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
};
template <> struct Comb<int64_t, Prod> {
	__device__ static int64_t f(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }
};
template <class Op> struct Comb<__half, Op> {
	__device__ static __half f(__half a, __half b)
	{
		return __float2half_rn(Op()(__half2float(a), __half2float(b)));
	}
};
template <class Op> struct Comb<__nv_bfloat16, Op> {
	__device__ static __nv_bfloat16 f(__nv_bfloat16 a, __nv_bfloat16 b)
	{
		return __float2bfloat16_rn(Op()(__bfloat162float(a), __bfloat162float(b)));
	}
};

template <class T, class Op>
__global__ void reduce_kernel(T *dst, const T *a, const T *b, size_t n)
{
	size_t stride = (size_t)gridDim.x * blockDim.x;
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
		dst[i] = Comb<T, Op>::f(a[i], b[i]);
}

template <class T, class Op>
cudaError_t launch(void *dst, const void *a, const void *b, size_t n, cudaStream_t s)
{
	const unsigned threads = 256;
	size_t want = (n + threads - 1) / threads;
	unsigned blocks = (unsigned)(want < 4096 ? (want ? want : 1) : 4096);
	reduce_kernel<T, Op><<<blocks, threads, 0, s>>>((T *)dst, (const T *)a, (const T *)b, n);
	return cudaGetLastError();
}

template <class T>
cudaError_t by_op(int op, void *dst, const void *a, const void *b, size_t n, cudaStream_t s)
{
	switch (op) {
	case MRC_COLL_SUM: return launch<T, Sum>(dst, a, b, n, s);
	case MRC_COLL_PROD: return launch<T, Prod>(dst, a, b, n, s);
	case MRC_COLL_MIN: return launch<T, Min>(dst, a, b, n, s);
	case MRC_COLL_MAX: return launch<T, Max>(dst, a, b, n, s);
	default: return cudaErrorInvalidValue;
	}
}

} // namespace

extern "C" int mrc__coll_cuda_reduce(void *dst, const void *a, const void *b, size_t count,
				     int dtype, int op, void *stream)
{
	cudaStream_t s = (cudaStream_t)stream;
	if (!count)
		return cudaSuccess;
	switch (dtype) {
	case MRC_COLL_INT32: return by_op<int32_t>(op, dst, a, b, count, s);
	case MRC_COLL_INT64: return by_op<int64_t>(op, dst, a, b, count, s);
	case MRC_COLL_FLOAT32: return by_op<float>(op, dst, a, b, count, s);
	case MRC_COLL_FLOAT64: return by_op<double>(op, dst, a, b, count, s);
	case MRC_COLL_FLOAT16: return by_op<__half>(op, dst, a, b, count, s);
	case MRC_COLL_BFLOAT16: return by_op<__nv_bfloat16>(op, dst, a, b, count, s);
	default: return cudaErrorInvalidValue;
	}
}

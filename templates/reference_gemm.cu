// reference_gemm: the obviously correct kernel GPU checks compare micro-kernels against.
//   Y[b][m][n] = epilogue(sum_k A(b, m, k) * B(b, n, k) (+ bias[n]))
// One thread per output, accumulated in double in k order; the epilogue is evaluated in double
// and rounded once. Slow on purpose: no tiling, no shared memory, nothing to get wrong.
//
// How A and B are read (every layout an op can have):
//   A_K_CONTIGUOUS 1 (default): A(b, m, k) = a[b*stride_a + m*K + k]   dense X, batch_matmul A
//                  0:           A(b, m, k) = a[b*stride_a + k*M + m]   batch_matmul transpose_a
//   B_K_CONTIGUOUS 1 (default): B(b, n, k) = b[b*stride_b + n*K + k]   dense W, transpose_b, KRSC
//                  0:           B(b, n, k) = b[b*stride_b + k*N + n]   batch_matmul B[K,N]
//   CONV_NHWC 1: A is conv2d's implicit GEMM operand, read through the arguments' conv fields:
//     m = (n*P + p)*Q + q, k = (r*S + s)*C + c, A(m, k) = X[n, h, w, c] with
//     h = p*stride_h - pad_h + r*dilation_h, w = q*stride_w - pad_w + s*dilation_w, and 0
//     outside the input (padding).
// DTYPE: 0 float32 (default), 1 float16, 2 bfloat16 for X, W, bias and Y (16-bit values are
// exact in double; the result goes to float, then to 16 bits, rounding to nearest even).
// Launch: 256 threads as a 16 x 16 patch, grid (ceil(N/16), min(ceil(M/16), 65535), batch);
// blocks stride over M when the grid's y is clamped.
#include "dietcode_args.h"

#ifndef EPILOGUE
#define EPILOGUE 0  // 0 none, 1 bias, 2 relu, 3 bias_relu, 4 gelu (tanh form), 5 bias_gelu
#endif
#ifndef DTYPE
#define DTYPE 0
#endif
#ifndef A_K_CONTIGUOUS
#define A_K_CONTIGUOUS 1
#endif
#ifndef B_K_CONTIGUOUS
#define B_K_CONTIGUOUS 1
#endif
#ifndef CONV_NHWC
#define CONV_NHWC 0
#endif

#if DTYPE == 0
typedef float dc_ref_t;
__device__ __forceinline__ double dc_ref_load(dc_ref_t v) { return (double)v; }
__device__ __forceinline__ dc_ref_t dc_ref_store(double v) { return (float)v; }
#else
typedef unsigned short dc_ref_t;
// Integer arithmetic only, so the reference builds for every arch NVRTC supports.
__device__ __forceinline__ double dc_ref_load(dc_ref_t h) {
#if DTYPE == 1
  const unsigned sign = (unsigned)(h >> 15) << 31, exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
  if (exp == 0) return (sign ? -1.0 : 1.0) * (double)mant * 5.9604644775390625e-08;  // 2^-24
  if (exp == 31) return __uint_as_float(sign | 0x7F800000u | (mant << 13));
  return __uint_as_float(sign | ((exp + 112) << 23) | (mant << 13));
#else
  return __uint_as_float((unsigned)h << 16);
#endif
}
__device__ __forceinline__ dc_ref_t dc_ref_store(double v) {
  const unsigned f = __float_as_uint((float)v);
  const unsigned sign = (f >> 16) & 0x8000u;
  if ((f & 0x7FFFFFFFu) > 0x7F800000u) return (dc_ref_t)(sign | 0x7E00u);  // NaN
#if DTYPE == 1
  const int exp = (int)((f >> 23) & 0xFF) - 127 + 15;
  unsigned mant = (f & 0x7FFFFFu) | 0x800000u;
  if (exp >= 31) return (dc_ref_t)(sign | 0x7C00u);  // overflow: infinity
  if (exp <= 0) {                                    // a subnormal half, or zero
    if (exp < -10) return (dc_ref_t)sign;
    const int shift = 14 - exp;
    unsigned half = mant >> shift, rest = mant & ((1u << shift) - 1), tie = 1u << (shift - 1);
    if (rest > tie || (rest == tie && (half & 1))) ++half;
    return (dc_ref_t)(sign | half);
  }
  unsigned half = sign | ((unsigned)exp << 10) | ((mant >> 13) & 0x3FF), rest = mant & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1))) ++half;  // a carry bumps the exponent
  return (dc_ref_t)half;
#else
  const unsigned rounded = f + 0x7FFFu + ((f >> 16) & 1u);  // to nearest even on the top half
  return (dc_ref_t)(rounded >> 16);
#endif
}
#endif

__device__ __forceinline__ double reference_a(const DietcodeArgs& args, const dc_ref_t* a,
                                              long long m, long long k) {
#if CONV_NHWC
  const long long pq = (long long)args.conv_p * args.conv_q;
  const long long n = m / pq, p = m % pq / args.conv_q, q = m % args.conv_q;
  const long long c = k % args.conv_c, r = k / args.conv_c / args.conv_s,
                  s = k / args.conv_c % args.conv_s;
  const long long h = p * args.stride_h - args.pad_h + r * args.dilation_h;
  const long long w = q * args.stride_w - args.pad_w + s * args.dilation_w;
  if (h < 0 || h >= args.conv_h || w < 0 || w >= args.conv_w) return 0.0;
  return dc_ref_load(a[((n * args.conv_h + h) * args.conv_w + w) * args.conv_c + c]);
#elif A_K_CONTIGUOUS
  return dc_ref_load(a[m * args.k + k]);
#else
  return dc_ref_load(a[k * args.m + m]);
#endif
}

__device__ __forceinline__ double reference_b(const DietcodeArgs& args, const dc_ref_t* b,
                                              long long n, long long k) {
#if B_K_CONTIGUOUS
  return dc_ref_load(b[n * args.k + k]);
#else
  return dc_ref_load(b[k * args.n + n]);
#endif
}

extern "C" __global__ void __launch_bounds__(256) dietcode_reference_gemm(DietcodeArgs args) {
  const long long m_total = args.m, n_total = args.n, k_total = args.k;
  const long long batch = blockIdx.z;
  const dc_ref_t* x = static_cast<const dc_ref_t*>(args.a) + batch * args.stride_a;
  const dc_ref_t* w = static_cast<const dc_ref_t*>(args.b) + batch * args.stride_b;
  const dc_ref_t* bias = static_cast<const dc_ref_t*>(args.bias);
  dc_ref_t* y = static_cast<dc_ref_t*>(args.c) + batch * args.stride_c;
  const long long n = (long long)blockIdx.x * 16 + threadIdx.x % 16;
  if (n >= n_total) return;
  for (long long m = (long long)blockIdx.y * 16 + threadIdx.x / 16; m < m_total;
       m += (long long)gridDim.y * 16) {
    double sum = 0.0;
    for (long long k = 0; k < k_total; ++k)
      sum += reference_a(args, x, m, k) * reference_b(args, w, n, k);
#if EPILOGUE == 1 || EPILOGUE == 3 || EPILOGUE == 5
    sum += dc_ref_load(bias[n]);
#endif
#if EPILOGUE == 2 || EPILOGUE == 3
    sum = sum > 0.0 ? sum : 0.0;
#elif EPILOGUE == 4 || EPILOGUE == 5
    sum = 0.5 * sum * (1.0 + tanh(0.7978845608028654 * (sum + 0.044715 * sum * sum * sum)));
#endif
    y[m * n_total + n] = dc_ref_store(sum);
  }
}

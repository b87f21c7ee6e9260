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
// Launch: 256 threads as a 16 x 16 patch, grid (ceil(N/16), min(ceil(M/16), 65535), batch);
// blocks stride over M when the grid's y is clamped.
#include "dietcode_args.h"

#ifndef EPILOGUE
#define EPILOGUE 0  // 0 none, 1 bias, 2 relu, 3 bias_relu, 4 gelu (tanh form), 5 bias_gelu
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

__device__ __forceinline__ double reference_a(const DietcodeArgs& args, const float* a, long long m,
                                              long long k) {
#if CONV_NHWC
  const long long pq = (long long)args.conv_p * args.conv_q;
  const long long n = m / pq, p = m % pq / args.conv_q, q = m % args.conv_q;
  const long long c = k % args.conv_c, r = k / args.conv_c / args.conv_s,
                  s = k / args.conv_c % args.conv_s;
  const long long h = p * args.stride_h - args.pad_h + r * args.dilation_h;
  const long long w = q * args.stride_w - args.pad_w + s * args.dilation_w;
  if (h < 0 || h >= args.conv_h || w < 0 || w >= args.conv_w) return 0.0;
  return (double)a[((n * args.conv_h + h) * args.conv_w + w) * args.conv_c + c];
#elif A_K_CONTIGUOUS
  return (double)a[m * args.k + k];
#else
  return (double)a[k * args.m + m];
#endif
}

__device__ __forceinline__ double reference_b(const DietcodeArgs& args, const float* b, long long n,
                                              long long k) {
#if B_K_CONTIGUOUS
  return (double)b[n * args.k + k];
#else
  return (double)b[k * args.n + n];
#endif
}

extern "C" __global__ void __launch_bounds__(256) dietcode_reference_gemm(DietcodeArgs args) {
  const long long m_total = args.m, n_total = args.n, k_total = args.k;
  const long long batch = blockIdx.z;
  const float* a = static_cast<const float*>(args.a) + batch * args.stride_a;
  const float* b = static_cast<const float*>(args.b) + batch * args.stride_b;
  const float* bias = static_cast<const float*>(args.bias);
  float* y = static_cast<float*>(args.c) + batch * args.stride_c;
  const long long n = (long long)blockIdx.x * 16 + threadIdx.x % 16;
  if (n >= n_total) return;
  for (long long m = (long long)blockIdx.y * 16 + threadIdx.x / 16; m < m_total;
       m += (long long)gridDim.y * 16) {
    double sum = 0.0;
    for (long long k = 0; k < k_total; ++k)
      sum += reference_a(args, a, m, k) * reference_b(args, b, n, k);
#if EPILOGUE == 1 || EPILOGUE == 3 || EPILOGUE == 5
    sum += (double)bias[n];
#endif
#if EPILOGUE == 2 || EPILOGUE == 3
    sum = sum > 0.0 ? sum : 0.0;
#elif EPILOGUE == 4 || EPILOGUE == 5
    sum = 0.5 * sum * (1.0 + tanh(0.7978845608028654 * (sum + 0.044715 * sum * sum * sum)));
#endif
    y[m * n_total + n] = (float)sum;
  }
}

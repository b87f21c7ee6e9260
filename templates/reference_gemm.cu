// reference_gemm: the obviously correct kernel GPU checks compare micro-kernels against.
//   Y[b][m][n] = epilogue(sum_k X[b][m][k] * W[b][n][k] (+ bias[n]))
// One thread per output, accumulated in double in k order; the epilogue is evaluated in double
// and rounded once. Slow on purpose: no tiling, no shared memory, nothing to get wrong.
// Launch: 256 threads as a 16 x 16 patch, grid (ceil(N/16), min(ceil(M/16), 65535), batch);
// blocks stride over M when the grid's y is clamped.
#include "dietcode_args.h"

#ifndef EPILOGUE
#define EPILOGUE 0  // 0 none, 1 bias, 2 relu, 3 bias_relu, 4 gelu (tanh form), 5 bias_gelu
#endif

extern "C" __global__ void __launch_bounds__(256) dietcode_reference_gemm(DietcodeArgs args) {
  const long long m_total = args.m, n_total = args.n, k_total = args.k;
  const long long batch = blockIdx.z;
  const float* x = static_cast<const float*>(args.a) + batch * args.stride_a;
  const float* w = static_cast<const float*>(args.b) + batch * args.stride_b;
  const float* bias = static_cast<const float*>(args.bias);
  float* y = static_cast<float*>(args.c) + batch * args.stride_c;
  const long long n = (long long)blockIdx.x * 16 + threadIdx.x % 16;
  if (n >= n_total) return;
  for (long long m = (long long)blockIdx.y * 16 + threadIdx.x / 16; m < m_total;
       m += (long long)gridDim.y * 16) {
    double sum = 0.0;
    for (long long k = 0; k < k_total; ++k)
      sum += (double)x[m * k_total + k] * (double)w[n * k_total + k];
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

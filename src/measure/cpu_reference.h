// The CPU reference for every op, accumulated in double, and the check that decides whether a
// GPU result agrees with it:
//   dense         Y = epilogue(X[M,K] . W[N,K]^T (+ bias[N]))
//   batch_matmul  Y[b] = epilogue(A[b] . B[b]) in any transpose combination
//   conv2d        Y[N,P,Q,K] = epilogue(conv(X[N,H,W,C], Wt[K,R,S,C]) (+ bias[K])), NHWC
// Each is a GEMM, so each accumulates into the same DenseAccumulation (batch_matmul stacks its
// batch as rows b*M + m; conv2d's rows are output pixels (n*P + p)*Q + q, its columns filters),
// and the epilogue and the comparison are shared.
//
// The reference is split in two steps because GPU tests compare many micro-kernels and
// epilogues on prefixes of the same inputs: accumulate once (pre-activation sums and their
// magnitudes), then apply any epilogue cheaply.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "measure/conv2d_shape.h"
#include "workload/workload.h"

namespace dietcode {

// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): the tanh form of GELU every template uses.
double gelu_tanh(double x);

// Pre-activation dot products of a dense problem, row-major [M][N].
struct DenseAccumulation {
  int64_t M = 0, N = 0, K = 0;
  std::vector<double> sum;        // sum_k x[m,k] * w[n,k]
  std::vector<double> magnitude;  // sum_k |x[m,k] * w[n,k]|: scales the rounding error
};

// Accumulates in double, on `threads` host threads (0 = all cores).
DenseAccumulation dense_accumulate(const float* x, const float* w, int64_t M, int64_t N, int64_t K,
                                   int threads = 0);

// batch_matmul: A stored [batch][M][K] ([batch][K][M] with transpose_a), B stored
// [batch][K][N] ([batch][N][K] with transpose_b). The result has batch * M rows (row b*M + m)
// and K-term sums.
DenseAccumulation batch_matmul_accumulate(const float* a, const float* b, int64_t batch, int64_t M,
                                          int64_t N, int64_t K, bool transpose_a, bool transpose_b,
                                          int threads = 0);

// conv2d NHWC: x [N][H][W][C], wt [K][R][S][C]. The result has N*P*Q rows, K columns and
// R*S*C-term sums; taps that fall into the padding contribute nothing.
DenseAccumulation conv2d_accumulate(const float* x, const float* wt, const Conv2dShape& shape,
                                    int threads = 0);

// Y[m,n] for the first `rows` rows of an accumulation (rows <= acc.M): bias added when the
// epilogue has one (bias must then be non-null), activation applied in double, rounded once.
std::vector<float> dense_apply_epilogue(const DenseAccumulation& acc, const float* bias,
                                        Epilogue epilogue, int64_t rows);

// Convenience: accumulate and apply in one call.
std::vector<float> dense_reference(const float* x, const float* w, const float* bias, int64_t M,
                                   int64_t N, int64_t K, Epilogue epilogue, int threads = 0);

// Whether a result agrees with the reference. fp32 accumulation in any order is within
//   |got - want| <= rtol * (|want| + magnitude / sqrt(K))
// of the double result: the error of a K-term fp32 sum grows like sqrt(K) rounding steps on
// partial sums of size ~ magnitude / sqrt(K) for inputs of random sign, and rtol = 1e-4 leaves
// two orders of margin while a lost or doubled product (~ magnitude / K) still fails.
struct DenseComparison {
  bool ok = true;
  int64_t mismatches = 0;
  int64_t first_row = -1, first_col = -1;  // first mismatch
  float got = 0, want = 0;
  double worst_ratio = 0;  // max |got - want| / tolerance over all elements
  std::string message;     // "" when ok, else one line naming the first mismatch
};

DenseComparison compare_dense(const float* got, const std::vector<float>& want,
                              const DenseAccumulation& acc, const float* bias, int64_t rows,
                              double rtol = 1e-4);

}  // namespace dietcode

#include "bench/gemm_mapping.h"

#include <climits>
#include <stdexcept>

namespace dietcode {

ColumnMajorGemm column_major_gemm(const OpSpec& op, const GemmShape& s) {
  ColumnMajorGemm g;
  g.m = s.N, g.n = s.M, g.k = s.K, g.ldc = s.N, g.batch = s.batch;
  g.c_stride = s.M * s.N;
  switch (op.kind) {
    case OpKind::kDense:
      if (op.weight_layout == WeightLayout::kNK)  // W[N,K] row-major: K x N column-major, op T
        g.transpose_first = true, g.first_rows = s.K, g.first_cols = s.N, g.first_ld = s.K;
      else  // W[K,N] row-major: N x K column-major, used as is
        g.transpose_first = false, g.first_rows = s.N, g.first_cols = s.K, g.first_ld = s.N;
      // X[M,K] row-major is K x M column-major, used as is.
      g.transpose_second = false, g.second_rows = s.K, g.second_cols = s.M, g.second_ld = s.K;
      g.first_stride = s.N * s.K, g.second_stride = s.M * s.K;
      if (epilogue_has_bias(op.epilogue)) g.bias_length = s.N;
      return g;
    case OpKind::kBatchMatmul:
      if (op.transpose_b)  // B[b] stored [N,K]: K x N column-major, op T
        g.transpose_first = true, g.first_rows = s.K, g.first_cols = s.N, g.first_ld = s.K;
      else  // B[b] stored [K,N]: N x K column-major
        g.transpose_first = false, g.first_rows = s.N, g.first_cols = s.K, g.first_ld = s.N;
      if (op.transpose_a)  // A[b] stored [K,M]: M x K column-major, op T
        g.transpose_second = true, g.second_rows = s.M, g.second_cols = s.K, g.second_ld = s.M;
      else  // A[b] stored [M,K]: K x M column-major
        g.transpose_second = false, g.second_rows = s.K, g.second_cols = s.M, g.second_ld = s.K;
      g.first_stride = s.K * s.N, g.second_stride = s.M * s.K;
      return g;
    case OpKind::kConv2d:
      break;
  }
  throw std::invalid_argument("column_major_gemm: op " + op.name + " is not a plain GEMM");
}

bool fits_int32(const ColumnMajorGemm& g) {
  for (int64_t v : {g.m, g.n, g.k, g.first_ld, g.second_ld, g.ldc, g.batch})
    if (v > INT_MAX) return false;
  return true;
}

void host_column_major_gemm(const ColumnMajorGemm& g, const float* first, const float* second,
                            double* c) {
  for (int64_t b = 0; b < g.batch; ++b) {
    const float* a = first + b * g.first_stride;
    const float* bb = second + b * g.second_stride;
    double* cc = c + b * g.c_stride;
    for (int64_t j = 0; j < g.n; ++j)
      for (int64_t i = 0; i < g.m; ++i) {
        double sum = 0;
        for (int64_t p = 0; p < g.k; ++p) {
          // op(A)[i, p] and op(B)[p, j], column-major element (r, c) at r + c * ld.
          const double x = g.transpose_first ? a[p + i * g.first_ld] : a[i + p * g.first_ld];
          const double y = g.transpose_second ? bb[j + p * g.second_ld] : bb[p + j * g.second_ld];
          sum += x * y;
        }
        cc[i + j * g.ldc] = sum;
      }
  }
}

}  // namespace dietcode

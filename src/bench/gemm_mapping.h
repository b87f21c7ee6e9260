// How a pack op's row-major tensors become one column-major GEMM call of cuBLAS/cuBLASLt.
//
// cuBLAS computes C = op(A) op(B) with column-major matrices. A row-major matrix R[r, c] is,
// read column-major, its transpose (c rows, r columns, leading dimension c). So instead of
// Y = X W^T (row-major) the call computes Y^T = W X^T (column-major), which writes exactly the
// bytes of row-major Y with no copy:
//   dense         Y[M,N] = X[M,K] W[N,K]^T  ->  gemm(T, N, m=N, n=M, k=K, A=W lda=K, B=X ldb=K,
//                                                    C=Y ldc=N); W stored [K,N] (weight_layout
//                                                    KN): gemm(N, N, ..., A=W lda=N, ...)
//   batch_matmul  Y[b] = op(A[b]) op(B[b])  ->  gemm(op_b, op_a, m=N, n=M, k=K, A=B, B=A, C=Y
//   ldc=N)
//                 with B[b] stored [K,N] (op N, ld N) or, when transpose_b, [N,K] (op T, ld K),
//                 and A[b] stored [M,K] (op N, ld K) or, when transpose_a, [K,M] (op T, ld M).
// The same description drives cublasSgemm/cublasGemmEx (ld and op) and cuBLASLt (whose
// layouts describe the stored matrices: rows x cols before op).
#pragma once

#include <cstdint>

#include "workload/workload.h"

namespace dietcode {

struct ColumnMajorGemm {
  bool transpose_first = false;                          // op of the first operand (cuBLAS's A)
  bool transpose_second = false;                         // op of the second operand (cuBLAS's B)
  int64_t m = 0, n = 0, k = 0;                           // C is m x n, the reduction k
  int64_t first_rows = 0, first_cols = 0, first_ld = 0;  // as stored, column-major
  int64_t second_rows = 0, second_cols = 0, second_ld = 0;
  int64_t ldc = 0;
  int64_t batch = 1;
  int64_t first_stride = 0, second_stride = 0, c_stride = 0;  // elements between batch items
  int64_t bias_length = 0;  // dense with a bias epilogue: N, the rows of column-major C
};

// The mapping above for a dense or batch_matmul op at one shape. Throws std::invalid_argument
// for conv2d, which has no cuBLAS baseline.
ColumnMajorGemm column_major_gemm(const OpSpec& op, const GemmShape& shape);

// True when every size fits cuBLAS's 32-bit int parameters.
bool fits_int32(const ColumnMajorGemm& g);

// The column-major GEMM as cuBLAS defines it, on the host in double: C = op(first) op(second)
// for every batch item. For tests of the mapping against the row-major definition.
void host_column_major_gemm(const ColumnMajorGemm& g, const float* first, const float* second,
                            double* c);

}  // namespace dietcode

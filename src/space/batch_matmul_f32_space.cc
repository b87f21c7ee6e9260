// The batch_matmul_f32 template's search space: the shared fp32 SIMT GEMM space
// (simt_gemm_f32_space.h) for Y[b] = A[b] . B[b] in any transpose combination. Vector loads
// walk each operand's contiguous dimension: K for A[M,K] and B stored [N,K] (transpose_b),
// M for A stored [K,M] (transpose_a), N for B[K,N].
#include "space/simt_gemm_f32_space.h"
#include "space/templates.h"

namespace dietcode {

namespace {

std::vector<int64_t> vector_pitches(const OpSpec& op) {
  return {constant_dimension(op, op.transpose_a ? "M" : "K"),
          constant_dimension(op, op.transpose_b ? "K" : "N")};
}

}  // namespace

const TemplateSpace& batch_matmul_f32_space() {
  static const TemplateSpace space = make_simt_gemm_f32_space({
      "batch_matmul_f32",
      [](const OpSpec& op) {
        return op.kind == OpKind::kBatchMatmul && op.dtype == DType::kFloat32;
      },
      "VEC divides the constant pitches vector loads walk: K of a K-contiguous operand, M of "
      "A stored [K,M], N of B stored [K,N] (else code generation falls back to VEC = 1)",
      vector_pitches,
  });
  return space;
}

}  // namespace dietcode

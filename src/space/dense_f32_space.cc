// The dense_f32 template's search space: fp32 SIMT GEMM micro-kernels for dense layers, the
// shared SIMT GEMM space (simt_gemm_f32_space.h) with dense's layout: X and W are both
// K-contiguous, so vector loads walk K.
#include "space/simt_gemm_f32_space.h"
#include "space/templates.h"

namespace dietcode {

const TemplateSpace& dense_f32_space() {
  static const TemplateSpace space = make_simt_gemm_f32_space({
      "dense_f32",
      // W stored [K,N] (weight_layout KN) is the CPU templates' alone for now.
      [](const OpSpec& op) {
        return op.kind == OpKind::kDense && op.dtype == DType::kFloat32 && op.b_k_contiguous();
      },
      "VEC divides K when K is a constant (else code generation falls back to VEC = 1)",
      [](const OpSpec& op) { return std::vector<int64_t>{constant_dimension(op, "K")}; },
  });
  return space;
}

}  // namespace dietcode

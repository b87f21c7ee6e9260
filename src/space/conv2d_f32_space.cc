// The conv2d_f32 template's search space: the shared fp32 SIMT GEMM space
// (simt_gemm_f32_space.h) for NHWC convolutions as implicit GEMMs. The input gather loads VEC
// adjacent channels at a time, so VEC must divide C (and then R*S*C, the weights' pitch). The
// gather keeps a 64-bit address and a window origin (h, w) per A row a thread loads.
#include "space/simt_gemm_f32_space.h"
#include "space/templates.h"

namespace dietcode {

const TemplateSpace& conv2d_f32_space() {
  static const TemplateSpace space = make_simt_gemm_f32_space({
      "conv2d_f32",
      [](const OpSpec& op) { return op.kind == OpKind::kConv2d && op.dtype == DType::kFloat32; },
      "VEC divides C when C is a constant (else code generation falls back to VEC = 1)",
      [](const OpSpec& op) { return std::vector<int64_t>{constant_dim(op, "C")}; },
      4,
  });
  return space;
}

}  // namespace dietcode

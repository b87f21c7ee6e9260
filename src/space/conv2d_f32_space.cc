// The conv2d_f32 template's search space: the shared fp32 SIMT GEMM space
// (simt_gemm_f32_space.h) for NHWC convolutions as implicit GEMMs. The input gather loads VEC
// adjacent channels at a time, so VEC must divide C (and then R*S*C, the weights' pitch). The
// gather keeps a pixel index and a window origin (h, w) per A row a thread loads, and its pixel
// indices are 32-bit.
#include <cstdint>

#include "space/simt_gemm_f32_space.h"
#include "space/templates.h"
#include "workload/op_layout.h"

namespace dietcode {

namespace {

// An upper bound on the input pixels N*H*W of the op's largest instance, from the largest
// implicit GEMM (M = N*P*Q, K = R*S*C). Exact up to rounding when H, W, R and S are constants;
// otherwise H <= P*stride + dilation*(R-1) per axis, with R <= K when R varies too.
int64_t input_pixels_bound(const SpaceContext& c) {
  const OpSpec& op = c.op;
  const int64_t h = constant_dimension(op, "H"), w = constant_dimension(op, "W");
  const int64_t r = constant_dimension(op, "R"), s = constant_dimension(op, "S");
  int64_t p = 0, q = 0;
  if (h > 0 && w > 0 && r > 0 && s > 0 &&
      conv_output_extent(h, op.pad[0], op.dilation[0], r, op.stride[0], &p) &&
      conv_output_extent(w, op.pad[1], op.dilation[1], s, op.stride[1], &q))
    return (c.largest.M + p * q - 1) / (p * q) * h * w;
  const double per_row = double(op.stride[0] + op.dilation[0] * ((r > 0 ? r : c.largest.K) - 1)) *
                         double(op.stride[1] + op.dilation[1] * ((s > 0 ? s : c.largest.K) - 1));
  const double bound = double(c.largest.M) * per_row;
  return bound >= 9e18 ? INT64_MAX : int64_t(bound);
}

}  // namespace

const TemplateSpace& conv2d_f32_space() {
  static const TemplateSpace space = make_simt_gemm_f32_space({
      "conv2d_f32",
      [](const OpSpec& op) { return op.kind == OpKind::kConv2d && op.dtype == DType::kFloat32; },
      "VEC divides C when C is a constant (else code generation falls back to VEC = 1)",
      [](const OpSpec& op) { return std::vector<int64_t>{constant_dimension(op, "C")}; },
      3,
      {{"input pixels N*H*W < 2^31 (the gather's pixel indices are 32-bit)",
        [](const MicroKernel&, const SpaceContext& c) {
          return input_pixels_bound(c) < (int64_t(1) << 31);
        },
        {"WARPS_M"}}},  // reads no tunable: decided as soon as enumeration starts
  });
  return space;
}

}  // namespace dietcode

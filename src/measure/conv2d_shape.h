// One concrete conv2d problem (NHWC input, KRSC weights, NHWK output): every extent and
// attribute the CPU reference, the GPU measurer's operands and the kernel arguments need,
// where a GemmShape (M = N*P*Q, N = K, K = R*S*C) has lost them.
#pragma once

#include <cstdint>
#include <vector>

#include "workload/workload.h"

namespace dietcode {

struct Conv2dShape {
  int64_t n = 1, h = 1, w = 1, c = 1, k = 1, r = 1, s = 1;  // input N,H,W,C; filters K,R,S
  int64_t p = 1, q = 1;                                     // output extents
  int stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dilation_h = 1, dilation_w = 1;

  // The implicit GEMM: M = N*P*Q, N = K, K = R*S*C.
  GemmShape gemm() const { return {1, n * p * q, k, r * s * c}; }
  bool operator==(const Conv2dShape& o) const;
};

// The conv2d op at one assignment of its variables (parallel to op.vars). Throws UserError
// when the output is empty (see evaluate_dims), std::invalid_argument for another op kind.
Conv2dShape conv2d_shape(const OpSpec& op, const std::vector<int64_t>& values);

// The same from explicit extents and attributes (tests, hand-written problems); p and q are
// computed. Throws std::invalid_argument when the output would be empty.
Conv2dShape make_conv2d_shape(int64_t n, int64_t h, int64_t w, int64_t c, int64_t k, int64_t r,
                              int64_t s, int stride = 1, int pad = 0, int dilation = 1);

}  // namespace dietcode

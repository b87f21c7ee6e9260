// What each operator kind looks like as tensors: its dimension names, its kernel arguments
// with their shapes, and the conv2d output geometry. The parser, the instance expansion and
// the printers all read these tables, so an operator is described in exactly one place.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "workload/workload.h"

namespace dietcode {

// The dimensions a workload file gives for an op kind, in the order they are checked and
// printed: dense M,N,K; batch_matmul B,M,N,K; conv2d N,H,W,C,K,R,S.
const std::vector<std::string>& dim_names(OpKind kind);

// One kernel argument: its name and its shape as dimension names. conv2d's output uses the
// derived P and Q (see conv_output_extent).
struct TensorLayout {
  std::string name;
  std::vector<std::string> dims;
};

// Arguments in ABI order (SPEC §3): dense X, W, [bias], Y; batch_matmul A, B, Y;
// conv2d X, Wt, [bias], Y. The bias is present when the epilogue adds one; dense's W is [N,K]
// or, with weight_layout KN, [K,N].
std::vector<TensorLayout> tensor_layouts(const OpSpec& op);

// Output extent of a convolution along one axis:
//   (in + 2*pad - dilation*(filter-1) - 1) / stride + 1.
// False when the padded input is smaller than the dilated filter (no output) or on overflow;
// C's truncating division would otherwise turn a negative numerator into an extent of 1.
bool conv_output_extent(int64_t in, int64_t pad, int64_t dilation, int64_t filter, int64_t stride,
                        int64_t* out);

}  // namespace dietcode

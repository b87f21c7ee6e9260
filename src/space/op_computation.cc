#include "space/op_computation.h"

#include <fmt/format.h>

namespace dietcode {

std::string op_computation_text(const OpSpec& op) {
  std::string out = fmt::format("{} {}", to_string(op.dtype), to_string(op.kind));
  if (op.kind == OpKind::kDense)
    return out + (op.weight_layout == WeightLayout::kKN ? " with W stored [K,N]" : "");
  if (op.kind != OpKind::kBatchMatmul) return out;
  return out + fmt::format(" with A stored {} and B stored {}",
                           op.transpose_a ? "[K,M] (transpose_a)" : "[M,K]",
                           op.transpose_b ? "[N,K] (transpose_b)" : "[K,N]");
}

}  // namespace dietcode

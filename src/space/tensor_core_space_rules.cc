#include "space/tensor_core_space_rules.h"

namespace dietcode {

Tunable split_k_tunable() {
  return {"SPLITK", {1, 2, 3, 4, 6, 8, 12, 16}, 1, "K slices summed by a deterministic reduction"};
}

Constraint split_k_slice_constraint() {
  return {"SPLITK == 1 or largest K / SPLITK >= BK (every slice holds a full K tile)",
          [](const MicroKernel& mk, const SpaceContext& c) {
            const int split = mk.get("SPLITK");
            return split == 1 || c.largest.K / split >= mk.get("BK");
          },
          {"BK", "SPLITK"}};
}

bool supports_16bit_k_contiguous(const OpSpec& op) {
  if (op.dtype != DType::kFloat16 && op.dtype != DType::kBFloat16) return false;
  if (op.kind == OpKind::kDense) return op.b_k_contiguous();
  return op.kind == OpKind::kBatchMatmul && !op.transpose_a && op.transpose_b;
}

}  // namespace dietcode

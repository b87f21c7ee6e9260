#include "workload/op_layout.h"

#include <stdexcept>

#include "workload/checked_math.h"

namespace dietcode {

const std::vector<std::string>& dim_names(OpKind kind) {
  static const std::vector<std::string> dense = {"M", "N", "K"};
  static const std::vector<std::string> batch_matmul = {"B", "M", "N", "K"};
  static const std::vector<std::string> conv2d = {"N", "H", "W", "C", "K", "R", "S"};
  switch (kind) {
    case OpKind::kDense:
      return dense;
    case OpKind::kBatchMatmul:
      return batch_matmul;
    case OpKind::kConv2d:
      return conv2d;
  }
  throw std::logic_error("dim_names: unknown op kind");
}

std::vector<TensorLayout> tensor_layouts(const OpSpec& op) {
  std::vector<TensorLayout> tensors;
  bool bias = epilogue_has_bias(op.epilogue);
  switch (op.kind) {
    case OpKind::kDense:
      tensors = {{"X", {"M", "K"}},
                 {"W", op.weight_layout == WeightLayout::kKN ? std::vector<std::string>{"K", "N"}
                                                             : std::vector<std::string>{"N", "K"}}};
      if (bias) tensors.push_back({"bias", {"N"}});
      tensors.push_back({"Y", {"M", "N"}});
      break;
    case OpKind::kBatchMatmul:
      // Transposes change the order of the extents, not the element counts listed here.
      tensors = {{"A", {"B", "M", "K"}}, {"B", {"B", "K", "N"}}, {"Y", {"B", "M", "N"}}};
      break;
    case OpKind::kConv2d:
      tensors = {{"X", {"N", "H", "W", "C"}}, {"Wt", {"K", "R", "S", "C"}}};
      if (bias) tensors.push_back({"bias", {"K"}});
      tensors.push_back({"Y", {"N", "P", "Q", "K"}});
      break;
  }
  return tensors;
}

bool conv_output_extent(int64_t in, int64_t pad, int64_t dilation, int64_t filter, int64_t stride,
                        int64_t* out) {
  int64_t padded, span;
  if (stride < 1 || !checked_mul(pad, 2, &padded) || !checked_add(in, padded, &padded) ||
      !checked_sub(filter, 1, &span) || !checked_mul(dilation, span, &span) ||
      !checked_add(span, 1, &span))
    return false;
  if (padded < span) return false;
  *out = (padded - span) / stride + 1;
  return true;
}

std::vector<std::string> OpSpec::arg_names() const {
  std::vector<std::string> names;
  for (const auto& tensor : tensor_layouts(*this)) names.push_back(tensor.name);
  return names;
}

bool OpSpec::b_k_contiguous() const {
  switch (kind) {
    case OpKind::kDense:
      return weight_layout == WeightLayout::kNK;
    case OpKind::kBatchMatmul:
      return transpose_b;
    case OpKind::kConv2d:
      return true;
  }
  return true;
}

}  // namespace dietcode

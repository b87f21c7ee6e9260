// Names of the workload's enumerations as they appear in workload files, manifests and logs.
// Keeping them in one table per enum means the parser and the printers can never disagree.
#include "workload/enums.h"

#include <stdexcept>

namespace dietcode {

const std::vector<std::pair<OpKind, const char*>>& op_kind_names() {
  static const std::vector<std::pair<OpKind, const char*>> names = {
      {OpKind::kDense, "dense"},
      {OpKind::kBatchMatmul, "batch_matmul"},
      {OpKind::kConv2d, "conv2d"},
  };
  return names;
}

const std::vector<std::pair<DType, const char*>>& dtype_names() {
  static const std::vector<std::pair<DType, const char*>> names = {
      {DType::kFloat32, "float32"},
      {DType::kFloat16, "float16"},
      {DType::kBFloat16, "bfloat16"},
  };
  return names;
}

const std::vector<std::pair<Epilogue, const char*>>& epilogue_names() {
  static const std::vector<std::pair<Epilogue, const char*>> names = {
      {Epilogue::kNone, "none"}, {Epilogue::kBias, "bias"},
      {Epilogue::kRelu, "relu"}, {Epilogue::kBiasRelu, "bias_relu"},
      {Epilogue::kGelu, "gelu"}, {Epilogue::kBiasGelu, "bias_gelu"},
  };
  return names;
}

const std::vector<std::pair<WeightLayout, const char*>>& weight_layout_names() {
  static const std::vector<std::pair<WeightLayout, const char*>> names = {
      {WeightLayout::kNK, "NK"}, {WeightLayout::kKN, "KN"}};
  return names;
}

namespace {
template <typename Enum>
const char* lookup(const std::vector<std::pair<Enum, const char*>>& names, Enum value) {
  for (const auto& [e, name] : names)
    if (e == value) return name;
  throw std::logic_error("enum value without a name");
}
}  // namespace

const char* to_string(OpKind kind) { return lookup(op_kind_names(), kind); }
const char* to_string(WeightLayout layout) { return lookup(weight_layout_names(), layout); }
const char* to_string(DType dtype) { return lookup(dtype_names(), dtype); }
const char* to_string(Epilogue epilogue) { return lookup(epilogue_names(), epilogue); }

int dtype_bytes(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return 4;
    case DType::kFloat16:
    case DType::kBFloat16:
      return 2;
  }
  throw std::logic_error("dtype_bytes: unknown dtype");
}

bool epilogue_has_bias(Epilogue epilogue) {
  return epilogue == Epilogue::kBias || epilogue == Epilogue::kBiasRelu ||
         epilogue == Epilogue::kBiasGelu;
}

}  // namespace dietcode

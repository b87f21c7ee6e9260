#include "workload/describe.h"

#include <algorithm>

#include "workload/op_layout.h"

namespace dietcode {

std::string describe_values(const ShapeVar& var) {
  const auto& v = var.values;
  if (v.size() >= 3) {
    int64_t step = v[1] - v[0];
    bool arithmetic = true;
    for (size_t i = 1; i < v.size(); ++i) arithmetic = arithmetic && v[i] - v[i - 1] == step;
    if (arithmetic)
      return std::to_string(v.front()) + ".." + std::to_string(v.back()) +
             (step == 1 ? "" : " step " + std::to_string(step));
  }
  // Irregular lists print whole when short, else their ends and the count.
  const size_t kShown = 8;
  std::string out = "{";
  for (size_t i = 0; i < v.size(); ++i) {
    if (v.size() > kShown && i == kShown - 2) {
      out += ", ..., " + std::to_string(v.back()) + "} (" + std::to_string(v.size()) + " values)";
      return out;
    }
    out += (i == 0 ? "" : ", ") + std::to_string(v[i]);
  }
  return out + "}";
}

std::string describe_weights(const ShapeVar& var) {
  for (double w : var.weights)
    if (w != var.weights.front()) return "weighted";
  return "uniform";
}

std::string describe_dims(const OpSpec& op) {
  std::string out;
  for (const auto& name : dim_names(op.kind)) {
    // "T + 1" becomes "T+1": spaces inside an expression would blur the pairs.
    std::string expr = op.dims.at(name).to_string();
    expr.erase(std::remove(expr.begin(), expr.end(), ' '), expr.end());
    out += (out.empty() ? "" : " ") + name + "=" + expr;
  }
  if (op.kind == OpKind::kDense && op.weight_layout != WeightLayout::kNK)
    out += std::string(" weight_layout=") + to_string(op.weight_layout);
  if (op.kind == OpKind::kBatchMatmul) {
    if (op.transpose_a) out += " transpose_a";
    if (op.transpose_b) out += " transpose_b";
  }
  if (op.kind == OpKind::kConv2d) {
    auto pair = [](const char* key, const int v[2], int fallback) -> std::string {
      if (v[0] == fallback && v[1] == fallback) return "";
      return std::string(" ") + key + "=" +
             (v[0] == v[1] ? std::to_string(v[0])
                           : "[" + std::to_string(v[0]) + "," + std::to_string(v[1]) + "]");
    };
    out += pair("stride", op.stride, 1) + pair("pad", op.pad, 0) + pair("dilation", op.dilation, 1);
  }
  return out;
}

}  // namespace dietcode

#include "import/graph.h"

#include <algorithm>
#include <cstring>

namespace dietcode::onnx_import {

namespace {

const std::vector<const onnx::NodeProto*> kNoConsumers;
const ValueFacts kNoFacts;

int64_t element_count(const onnx::TensorProto& t) {
  int64_t n = 1;
  for (int64_t d : t.dims()) n *= d;
  return n;
}

template <typename T>
std::optional<std::vector<T>> raw_values(const onnx::TensorProto& t) {
  const std::string& raw = t.raw_data();
  if (raw.size() != size_t(element_count(t)) * sizeof(T)) return std::nullopt;
  std::vector<T> out(raw.size() / sizeof(T));
  std::memcpy(out.data(), raw.data(), raw.size());  // ONNX stores raw data little-endian
  return out;
}

}  // namespace

Graph::Graph(const onnx::GraphProto& graph) : graph_(graph) {
  for (const onnx::TensorProto& t : graph.initializer()) initializers_[t.name()] = &t;
  for (const onnx::NodeProto& node : graph.node()) {
    for (const std::string& out : node.output())
      if (!out.empty()) producer_[out] = &node;
    for (const std::string& in : node.input())
      if (!in.empty()) {
        auto& list = consumers_[in];
        if (std::find(list.begin(), list.end(), &node) == list.end()) list.push_back(&node);
      }
  }
  for (const auto& out : graph.output()) outputs_.push_back(out.name());
}

const onnx::NodeProto* Graph::producer(const std::string& value) const {
  auto it = producer_.find(value);
  return it == producer_.end() ? nullptr : it->second;
}

const std::vector<const onnx::NodeProto*>& Graph::consumers(const std::string& value) const {
  auto it = consumers_.find(value);
  return it == consumers_.end() ? kNoConsumers : it->second;
}

const onnx::TensorProto* Graph::initializer(const std::string& value) const {
  auto it = initializers_.find(value);
  return it == initializers_.end() ? nullptr : it->second;
}

bool Graph::is_graph_output(const std::string& value) const {
  return std::find(outputs_.begin(), outputs_.end(), value) != outputs_.end();
}

const ValueFacts& Graph::facts(const std::string& value) const {
  auto it = facts_.find(value);
  return it == facts_.end() ? kNoFacts : it->second;
}

std::optional<std::vector<SymDim>> Graph::full_shape(const std::string& value) const {
  const ValueFacts& f = facts(value);
  if (!f.shape) return std::nullopt;
  std::vector<SymDim> dims;
  for (const auto& d : *f.shape) {
    if (!d) return std::nullopt;
    dims.push_back(*d);
  }
  return dims;
}

std::optional<double> Graph::scalar(const std::string& value) const {
  const ValueFacts& f = facts(value);
  if (f.floats && f.floats->size() == 1) return f.floats->front();
  if (f.ints && f.ints->size() == 1 && f.ints->front().is_constant())
    return double(f.ints->front().constant());
  return std::nullopt;
}

std::optional<std::vector<int64_t>> tensor_ints(const onnx::TensorProto& t) {
  if (t.data_location() == onnx::TensorProto::EXTERNAL) return std::nullopt;
  switch (t.data_type()) {
    case onnx::TensorProto::INT64:
      if (t.has_raw_data()) return raw_values<int64_t>(t);
      return std::vector<int64_t>(t.int64_data().begin(), t.int64_data().end());
    case onnx::TensorProto::INT32: {
      if (t.has_raw_data()) {
        auto v = raw_values<int32_t>(t);
        if (!v) return std::nullopt;
        return std::vector<int64_t>(v->begin(), v->end());
      }
      return std::vector<int64_t>(t.int32_data().begin(), t.int32_data().end());
    }
    default:
      return std::nullopt;
  }
}

std::optional<std::vector<double>> tensor_floats(const onnx::TensorProto& t) {
  if (t.data_location() == onnx::TensorProto::EXTERNAL) return std::nullopt;
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT: {
      if (t.has_raw_data()) {
        auto v = raw_values<float>(t);
        if (!v) return std::nullopt;
        return std::vector<double>(v->begin(), v->end());
      }
      return std::vector<double>(t.float_data().begin(), t.float_data().end());
    }
    case onnx::TensorProto::DOUBLE:
      if (t.has_raw_data()) return raw_values<double>(t);
      return std::vector<double>(t.double_data().begin(), t.double_data().end());
    default: {
      auto ints = tensor_ints(t);
      if (!ints) return std::nullopt;
      return std::vector<double>(ints->begin(), ints->end());
    }
  }
}

namespace {
const onnx::AttributeProto* find_attr(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}
}  // namespace

int64_t attr_int(const onnx::NodeProto& node, const std::string& name, int64_t fallback) {
  const auto* a = find_attr(node, name);
  return a && a->has_i() ? a->i() : fallback;
}

float attr_float(const onnx::NodeProto& node, const std::string& name, float fallback) {
  const auto* a = find_attr(node, name);
  return a && a->has_f() ? a->f() : fallback;
}

std::vector<int64_t> attr_ints(const onnx::NodeProto& node, const std::string& name) {
  const auto* a = find_attr(node, name);
  if (!a) return {};
  return {a->ints().begin(), a->ints().end()};
}

std::string attr_string(const onnx::NodeProto& node, const std::string& name) {
  const auto* a = find_attr(node, name);
  return a && a->has_s() ? a->s() : "";
}

const onnx::TensorProto* attr_tensor(const onnx::NodeProto& node, const std::string& name) {
  const auto* a = find_attr(node, name);
  return a && a->has_t() ? &a->t() : nullptr;
}

}  // namespace dietcode::onnx_import

// Graph: an index over an ONNX graph for the importer — who produces and who consumes each
// value, which values are constants (initializers, Constant nodes and what is computed from
// them alone) with their contents when small, and each value's symbolic shape.
//
// Shapes come from propagate_shapes (shape_propagation.cc), which runs the graph's shape
// arithmetic symbolically: a dynamic-axes export computes its Reshape targets at run time
// (Shape -> Gather -> Unsqueeze -> Concat), and only by following that does a reshape to
// [batch*seq, 768] get "batch*seq" rows. Where a rule is missing, ONNX's inferred shape
// (value_info) is used, with its dim_params as symbols.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "import/onnx_proto.h"
#include "import/sym_dim.h"

namespace dietcode::onnx_import {

// A shape of known rank whose dimensions may be unknown.
using SymShape = std::vector<std::optional<SymDim>>;

struct ValueFacts {
  std::optional<SymShape> shape;
  int32_t elem_type = 0;  // onnx::TensorProto::DataType, 0 when unknown
  bool constant = false;  // computed from initializers and Constant nodes only
  // Contents of a small integer tensor (shape arithmetic), as symbolic values.
  std::optional<std::vector<SymDim>> ints;
  // Contents of a small float constant (at most 16 elements), for matching patterns.
  std::optional<std::vector<double>> floats;
};

class Graph {
 public:
  explicit Graph(const onnx::GraphProto& graph);

  const onnx::GraphProto& proto() const { return graph_; }
  const onnx::NodeProto* producer(const std::string& value) const;
  const std::vector<const onnx::NodeProto*>& consumers(const std::string& value) const;
  const onnx::TensorProto* initializer(const std::string& value) const;
  bool is_graph_output(const std::string& value) const;

  const ValueFacts& facts(const std::string& value) const;
  ValueFacts& mutable_facts(const std::string& value) { return facts_[value]; }

  // The value's shape when its rank and every dimension are known.
  std::optional<std::vector<SymDim>> full_shape(const std::string& value) const;
  // The single float a constant holds (a scalar, or a tensor of one element).
  std::optional<double> scalar(const std::string& value) const;

 private:
  const onnx::GraphProto& graph_;
  std::map<std::string, const onnx::NodeProto*> producer_;
  std::map<std::string, std::vector<const onnx::NodeProto*>> consumers_;
  std::map<std::string, const onnx::TensorProto*> initializers_;
  std::map<std::string, ValueFacts> facts_;
  std::vector<std::string> outputs_;
};

// The contents of a tensor constant, when it holds integers / floats stored in the model
// (raw_data or the typed fields); nothing for external data or other types.
std::optional<std::vector<int64_t>> tensor_ints(const onnx::TensorProto& t);
std::optional<std::vector<double>> tensor_floats(const onnx::TensorProto& t);

// The attribute's value, or `fallback` when the node has none by that name.
int64_t attr_int(const onnx::NodeProto& node, const std::string& name, int64_t fallback);
float attr_float(const onnx::NodeProto& node, const std::string& name, float fallback);
std::vector<int64_t> attr_ints(const onnx::NodeProto& node, const std::string& name);
std::string attr_string(const onnx::NodeProto& node, const std::string& name);
const onnx::TensorProto* attr_tensor(const onnx::NodeProto& node, const std::string& name);

// Fills every value's facts: initializers and graph inputs first (dim_params become symbols),
// then each node in order (ONNX graphs are topologically sorted).
void propagate_shapes(Graph& graph);

}  // namespace dietcode::onnx_import

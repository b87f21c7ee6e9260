// OnnxBuilder: ONNX models made in code for the importer's tests and for the example model
// (examples/onnx/make_tiny_bert.cc), through the protobuf API of the ONNX C++ library.
//
//   OnnxBuilder b;                                        // opset 14
//   std::string x = b.input("x", {"batch", "seq", 64});   // dim_params and sizes
//   std::string w = b.weight("w", {64, 256});             // a float initializer
//   std::string y = b.node("MatMul", {x, w});
//   b.output(y);
//   b.save("model.onnx");
//
// The export helpers build the subgraphs torch.onnx.export writes for dynamic axes: a Reshape
// whose target is computed from Shape -> Gather -> Unsqueeze -> Concat, and GELU as Erf or tanh.
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <variant>
#include <vector>

#ifndef ONNX_NAMESPACE
#define ONNX_NAMESPACE onnx
#endif
#include <onnx/onnx_pb.h>

namespace dietcode::onnx_test {

using Dim = std::variant<int64_t, std::string>;

struct Attr {
  std::string name;
  std::variant<int64_t, float, std::vector<int64_t>, std::string> value;
};

class OnnxBuilder {
 public:
  explicit OnnxBuilder(int64_t opset = 14, uint32_t seed = 1) : rng_(seed) {
    model_.set_ir_version(8);
    model_.set_producer_name("dietcode-tests");
    auto* op = model_.add_opset_import();
    op->set_domain("");
    op->set_version(opset);
    model_.mutable_graph()->set_name("g");
  }

  onnx::ModelProto& model() { return model_; }
  onnx::GraphProto& graph() { return *model_.mutable_graph(); }

  std::string input(const std::string& name, const std::vector<Dim>& dims,
                    int32_t elem = onnx::TensorProto::FLOAT) {
    auto* v = graph().add_input();
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(elem);
    auto* shape = t->mutable_shape();
    for (const Dim& d : dims) {
      auto* dim = shape->add_dim();
      if (std::holds_alternative<int64_t>(d)) dim->set_dim_value(std::get<int64_t>(d));
      else dim->set_dim_param(std::get<std::string>(d));
    }
    return name;
  }

  void output(const std::string& name) { graph().add_output()->set_name(name); }

  // A float initializer with random values in [-0.1, 0.1] (raw little-endian data).
  std::string weight(const std::string& name, const std::vector<int64_t>& dims,
                     int32_t elem = onnx::TensorProto::FLOAT) {
    auto* t = graph().add_initializer();
    t->set_name(name);
    t->set_data_type(elem);
    int64_t n = 1;
    for (int64_t d : dims) t->add_dims(d), n *= d;
    std::uniform_real_distribution<float> u(-0.1f, 0.1f);
    if (elem == onnx::TensorProto::FLOAT) {
      std::string raw(size_t(n) * 4, '\0');
      for (int64_t i = 0; i < n; ++i) {
        float v = u(rng_);
        std::memcpy(&raw[size_t(i) * 4], &v, 4);
      }
      t->set_raw_data(raw);
    } else {  // 16-bit types: zeros are enough for shapes
      t->set_raw_data(std::string(size_t(n) * 2, '\0'));
    }
    return name;
  }

  // A float scalar constant (an initializer of rank 0).
  std::string scalar(float value) {
    const std::string name = "const_" + std::to_string(counter_++);
    auto* t = graph().add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_float_data(value);
    return name;
  }

  // An int64 vector constant (shapes, axes, indices), as a Constant node like exporters write.
  std::string ints(const std::vector<int64_t>& values, bool scalar_shape = false) {
    const std::string name = "ints_" + std::to_string(counter_++);
    auto* n = graph().add_node();
    n->set_op_type("Constant");
    n->add_output(name);
    auto* a = n->add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    auto* t = a->mutable_t();
    t->set_data_type(onnx::TensorProto::INT64);
    if (!scalar_shape) t->add_dims(int64_t(values.size()));
    for (int64_t v : values) t->add_int64_data(v);
    return name;
  }

  // Adds a node; returns its (first) output's name.
  std::string node(const std::string& op, const std::vector<std::string>& inputs,
                   const std::vector<Attr>& attrs = {}, const std::string& name = "",
                   int outputs = 1) {
    auto* n = graph().add_node();
    n->set_op_type(op);
    n->set_name(name.empty() ? "/" + op + "_" + std::to_string(counter_) : name);
    for (const std::string& i : inputs) n->add_input(i);
    std::string first;
    for (int o = 0; o < outputs; ++o) {
      const std::string out = (name.empty() ? op : name) + "_out" + std::to_string(counter_++);
      n->add_output(out);
      if (o == 0) first = out;
    }
    for (const Attr& at : attrs) {
      auto* a = n->add_attribute();
      a->set_name(at.name);
      if (auto* i = std::get_if<int64_t>(&at.value)) {
        a->set_type(onnx::AttributeProto::INT);
        a->set_i(*i);
      } else if (auto* f = std::get_if<float>(&at.value)) {
        a->set_type(onnx::AttributeProto::FLOAT);
        a->set_f(*f);
      } else if (auto* v = std::get_if<std::vector<int64_t>>(&at.value)) {
        a->set_type(onnx::AttributeProto::INTS);
        for (int64_t x : *v) a->add_ints(x);
      } else {
        a->set_type(onnx::AttributeProto::STRING);
        a->set_s(std::get<std::string>(at.value));
      }
    }
    return first;
  }

  // torch.onnx.export's dynamic reshape: the target shape gathered from `shape_of` at run time
  // (dims given as an index into shape_of's shape, or a constant), e.g. {0, 1, 12, 64} as
  // {Dim index 0, Dim index 1, 12, 64} with `from_input` = {true, true, false, false}.
  std::string dynamic_reshape(const std::string& x, const std::string& shape_of,
                              const std::vector<int64_t>& parts,
                              const std::vector<bool>& from_input) {
    const std::string shape = node("Shape", {shape_of});
    std::vector<std::string> pieces;
    for (size_t i = 0; i < parts.size(); ++i) {
      if (from_input[i]) {
        const std::string g = node("Gather", {shape, ints({parts[i]}, true)}, {{"axis", int64_t(0)}});
        pieces.push_back(node("Unsqueeze", {g, ints({0})}));
      } else {
        pieces.push_back(ints({parts[i]}));
      }
    }
    const std::string target = node("Concat", pieces, {{"axis", int64_t(0)}});
    return node("Reshape", {x, target});
  }

  // GELU as PyTorch exports nn.GELU(): x * 0.5 * (1 + erf(x / sqrt(2))), here as
  // Mul(Mul(x, 1 + erf), 0.5).
  std::string gelu_erf(const std::string& x, const std::string& prefix = "") {
    const std::string d = node("Div", {x, scalar(1.4142135f)}, {}, prefix + "/Div");
    const std::string e = node("Erf", {d}, {}, prefix + "/Erf");
    const std::string a = node("Add", {e, scalar(1.0f)}, {}, prefix + "/Add_1");
    const std::string m = node("Mul", {x, a}, {}, prefix + "/Mul");
    return node("Mul", {m, scalar(0.5f)}, {}, prefix + "/Mul_1");
  }

  // GELU as PyTorch exports nn.GELU(approximate="tanh"):
  // 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))), here as Mul(Mul(x, 0.5), 1 + tanh).
  std::string gelu_tanh(const std::string& x, const std::string& prefix = "") {
    const std::string p = node("Pow", {x, scalar(3.0f)}, {}, prefix + "/Pow");
    const std::string s = node("Mul", {p, scalar(0.044715f)}, {}, prefix + "/Mul_2");
    const std::string sum = node("Add", {x, s}, {}, prefix + "/Add_2");
    const std::string k = node("Mul", {sum, scalar(0.7978845608f)}, {}, prefix + "/Mul_3");
    const std::string t = node("Tanh", {k}, {}, prefix + "/Tanh");
    const std::string a = node("Add", {t, scalar(1.0f)}, {}, prefix + "/Add_3");
    const std::string h = node("Mul", {x, scalar(0.5f)}, {}, prefix + "/Mul_4");
    return node("Mul", {h, a}, {}, prefix + "/Mul_5");
  }

  std::string bytes() const {
    std::string out;
    model_.SerializeToString(&out);
    return out;
  }

  void save(const std::string& path) const {
    std::ofstream(path, std::ios::binary) << bytes();
  }

 private:
  onnx::ModelProto model_;
  std::mt19937 rng_;
  int counter_ = 0;
};

}  // namespace dietcode::onnx_test

// propagate_shapes (graph.h): symbolic shapes and small constant contents, node by node.
//
// Each rule computes what it can and leaves the rest unknown; nothing is guessed. The rules
// cover what transformer and CNN exports are made of: the shape arithmetic of dynamic
// reshapes (Shape, Gather, Unsqueeze, Squeeze, Concat, Slice, Cast, the four arithmetic ops),
// Reshape, Transpose, MatMul, Gemm, Conv and pooling, broadcasting elementwise ops and the
// shape-keeping ones. Anything else takes ONNX's inferred shape.
#include <algorithm>
#include <functional>
#include <set>

#include "import/graph.h"

namespace dietcode::onnx_import {

namespace {

using onnx::NodeProto;

constexpr size_t kMaxTrackedElements = 64;  // contents kept for tensors up to this size

SymShape known(const std::vector<SymDim>& dims) { return SymShape(dims.begin(), dims.end()); }

// ONNX's own shape for a value (graph inputs, outputs and value_info), dim_params as symbols.
std::optional<SymShape> declared_shape(const onnx::TypeProto& type) {
  if (!type.has_tensor_type() || !type.tensor_type().has_shape()) return std::nullopt;
  SymShape shape;
  for (const auto& d : type.tensor_type().shape().dim()) {
    if (d.has_dim_value() && d.dim_value() > 0)
      shape.push_back(SymDim(d.dim_value()));
    else if (d.has_dim_param() && !d.dim_param().empty())
      shape.push_back(SymDim::symbol(d.dim_param()));
    else
      shape.push_back(std::nullopt);
  }
  return shape;
}

int64_t normalized_axis(int64_t axis, size_t rank) {
  return axis < 0 ? axis + int64_t(rank) : axis;
}

// numpy broadcasting of known-rank shapes; a dimension is unknown unless the rule is certain.
std::optional<SymShape> broadcast(const std::vector<const SymShape*>& shapes) {
  size_t rank = 0;
  for (const SymShape* s : shapes) {
    if (!s) return std::nullopt;
    rank = std::max(rank, s->size());
  }
  SymShape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    std::optional<SymDim> dim = SymDim(1);
    bool unknown = false;
    for (const SymShape* s : shapes) {
      if (i + s->size() < rank) continue;  // this operand has no such leading axis
      const auto& d = (*s)[i + s->size() - rank];
      if (!d) {
        unknown = true;
        continue;
      }
      if (*d == SymDim(1)) continue;
      if (*dim == SymDim(1)) dim = d;
    }
    out[i] = unknown && *dim == SymDim(1) ? std::nullopt : dim;
  }
  return out;
}

class Propagator {
 public:
  explicit Propagator(Graph& g) : g_(g) {}

  void run() {
    for (const onnx::TensorProto& t : g_.proto().initializer()) set_constant_tensor(t.name(), t);
    for (const auto& in : g_.proto().input()) {
      if (g_.initializer(in.name())) continue;  // an initializer listed as an input too
      ValueFacts& f = g_.mutable_facts(in.name());
      f.shape = declared_shape(in.type());
      f.elem_type = in.type().tensor_type().elem_type();
    }
    for (const auto& vi : g_.proto().value_info()) inferred_[vi.name()] = &vi.type();
    for (const auto& vi : g_.proto().output()) inferred_[vi.name()] = &vi.type();
    for (const NodeProto& node : g_.proto().node()) visit(node);
  }

 private:
  Graph& g_;
  std::map<std::string, const onnx::TypeProto*> inferred_;

  const ValueFacts& in(const NodeProto& n, int i) const {
    static const ValueFacts none;
    return i < n.input_size() && !n.input(i).empty() ? g_.facts(n.input(i)) : none;
  }
  ValueFacts& out(const NodeProto& n, int i = 0) { return g_.mutable_facts(n.output(i)); }

  void set_constant_tensor(const std::string& name, const onnx::TensorProto& t) {
    ValueFacts& f = g_.mutable_facts(name);
    std::vector<SymDim> dims(t.dims().begin(), t.dims().end());
    f.shape = known(dims);
    f.elem_type = t.data_type();
    f.constant = true;
    int64_t count = 1;
    for (int64_t d : t.dims()) count *= d;
    if (count <= int64_t(kMaxTrackedElements)) {
      if (auto ints = tensor_ints(t)) f.ints = std::vector<SymDim>(ints->begin(), ints->end());
      if (count <= 16)
        if (auto floats = tensor_floats(t)) f.floats = floats;
    }
  }

  void visit(const NodeProto& n) {
    if (n.output_size() == 0) return;
    bool all_constant = n.input_size() > 0;
    for (int i = 0; i < n.input_size(); ++i)
      if (!n.input(i).empty() && !g_.facts(n.input(i)).constant) all_constant = false;

    apply_rule(n);

    for (int i = 0; i < n.output_size(); ++i) {
      ValueFacts& f = out(n, i);
      if (n.op_type() != "Shape" && n.op_type() != "Size") f.constant = f.constant || all_constant;
      // Fall back to (or fill unknown dimensions from) ONNX's inference.
      auto it = inferred_.find(n.output(i));
      if (it != inferred_.end()) {
        auto declared = declared_shape(*it->second);
        if (!f.shape) {
          f.shape = declared;
        } else if (declared && declared->size() == f.shape->size()) {
          for (size_t d = 0; d < f.shape->size(); ++d)
            if (!(*f.shape)[d] && (*declared)[d] && (*declared)[d]->is_constant())
              (*f.shape)[d] = (*declared)[d];
        }
        if (!f.elem_type) f.elem_type = it->second->tensor_type().elem_type();
      }
    }
  }

  // Output 0 takes input i's element type when it has none of its own.
  void same_type(const NodeProto& n, int i = 0) {
    if (!out(n).elem_type) out(n).elem_type = in(n, i).elem_type;
  }

  void apply_rule(const NodeProto& n) {
    const std::string& op = n.op_type();
    if (op == "Constant") return constant(n);
    if (op == "Shape") return shape_of(n);
    if (op == "Gather") return gather(n);
    if (op == "Unsqueeze") return unsqueeze(n);
    if (op == "Squeeze") return squeeze(n);
    if (op == "Concat") return concat(n);
    if (op == "Slice") return slice(n);
    if (op == "Reshape") return reshape(n);
    if (op == "Flatten") return flatten(n);
    if (op == "Transpose") return transpose(n);
    if (op == "MatMul") return matmul(n);
    if (op == "Gemm") return gemm(n);
    if (op == "Conv") return conv(n);
    if (op == "MaxPool" || op == "AveragePool") return pool(n);
    if (op == "GlobalAveragePool" || op == "GlobalMaxPool") return global_pool(n);
    if (op == "Expand") return expand(n);
    if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div") return arithmetic(n);
    static const std::set<std::string> kBroadcasting = {
        "Pow", "Equal", "Less", "Greater", "Where", "And", "Or", "Max", "Min", "Mod"};
    if (kBroadcasting.count(op)) return elementwise(n);
    static const std::set<std::string> kShapeKeeping = {
        "Relu", "Gelu", "Erf", "Tanh", "Sigmoid", "Exp", "Log", "Sqrt", "Neg", "Abs",
        "Reciprocal", "Softmax", "LogSoftmax", "LayerNormalization", "Dropout", "Identity",
        "Cast", "BatchNormalization", "LeakyRelu", "HardSigmoid", "HardSwish", "Clip",
        "Not", "Floor", "Ceil", "Round", "FastGelu", "Sign"};
    if (kShapeKeeping.count(op)) return shape_keeping(n);
    if (op == "ReduceMean" || op == "ReduceSum" || op == "ReduceMax") return reduce(n);
  }

  void constant(const NodeProto& n) {
    if (const onnx::TensorProto* t = attr_tensor(n, "value")) {
      set_constant_tensor(n.output(0), *t);
      return;
    }
    ValueFacts& f = out(n);
    f.constant = true;
    for (const auto& a : n.attribute()) {
      if (a.name() == "value_int") {
        f.shape = SymShape{};
        f.ints = std::vector<SymDim>{SymDim(a.i())};
        f.floats = std::vector<double>{double(a.i())};
        f.elem_type = onnx::TensorProto::INT64;
      } else if (a.name() == "value_ints") {
        f.shape = SymShape{SymDim(a.ints_size())};
        f.ints = std::vector<SymDim>(a.ints().begin(), a.ints().end());
        f.elem_type = onnx::TensorProto::INT64;
      } else if (a.name() == "value_float") {
        f.shape = SymShape{};
        f.floats = std::vector<double>{a.f()};
        f.elem_type = onnx::TensorProto::FLOAT;
      }
    }
  }

  void shape_of(const NodeProto& n) {
    const ValueFacts& x = in(n, 0);
    ValueFacts& f = out(n);
    f.elem_type = onnx::TensorProto::INT64;
    if (!x.shape) return;
    const int64_t rank = int64_t(x.shape->size());
    int64_t start = normalized_axis(attr_int(n, "start", 0), rank);
    int64_t end = normalized_axis(attr_int(n, "end", rank), rank);
    start = std::clamp<int64_t>(start, 0, rank);
    end = std::clamp<int64_t>(end, start, rank);
    f.shape = SymShape{SymDim(end - start)};
    std::vector<SymDim> values;
    for (int64_t i = start; i < end; ++i) {
      if (!(*x.shape)[i]) return;
      values.push_back(*(*x.shape)[i]);
    }
    f.ints = values;
  }

  void gather(const NodeProto& n) {
    const ValueFacts& data = in(n, 0);
    const ValueFacts& idx = in(n, 1);
    ValueFacts& f = out(n);
    same_type(n);
    if (!data.shape || !idx.shape) return;
    const int64_t axis = normalized_axis(attr_int(n, "axis", 0), data.shape->size());
    if (axis < 0 || axis >= int64_t(data.shape->size())) return;
    SymShape shape(data.shape->begin(), data.shape->begin() + axis);
    shape.insert(shape.end(), idx.shape->begin(), idx.shape->end());
    shape.insert(shape.end(), data.shape->begin() + axis + 1, data.shape->end());
    f.shape = shape;
    // Picking from a shape vector: Shape -> Gather(indices constant).
    if (data.ints && idx.ints && axis == 0 && data.shape->size() == 1) {
      std::vector<SymDim> picked;
      for (const SymDim& i : *idx.ints) {
        if (!i.is_constant()) return;
        int64_t k = i.constant();
        if (k < 0) k += int64_t(data.ints->size());
        if (k < 0 || k >= int64_t(data.ints->size())) return;
        picked.push_back((*data.ints)[k]);
      }
      f.ints = picked;
    }
  }

  // Axes from the attribute (opset < 13) or the second input (opset >= 13).
  std::optional<std::vector<int64_t>> axes_of(const NodeProto& n, int input) const {
    std::vector<int64_t> axes = attr_ints(n, "axes");
    if (!axes.empty()) return axes;
    const ValueFacts& a = in(n, input);
    if (input < n.input_size() && !n.input(input).empty()) {
      if (!a.ints) return std::nullopt;
      for (const SymDim& d : *a.ints) {
        if (!d.is_constant()) return std::nullopt;
        axes.push_back(d.constant());
      }
    }
    return axes;
  }

  void unsqueeze(const NodeProto& n) {
    const ValueFacts& x = in(n, 0);
    ValueFacts& f = out(n);
    same_type(n);
    f.ints = x.ints;
    f.floats = x.floats;
    auto axes = axes_of(n, 1);
    if (!x.shape || !axes) return;
    const int64_t rank = int64_t(x.shape->size() + axes->size());
    std::vector<bool> inserted(size_t(rank), false);
    for (int64_t a : *axes) {
      a = normalized_axis(a, size_t(rank));
      if (a < 0 || a >= rank) return;
      inserted[size_t(a)] = true;
    }
    SymShape shape;
    size_t next = 0;
    for (int64_t i = 0; i < rank; ++i) {
      if (inserted[size_t(i)]) {
        shape.push_back(SymDim(1));
      } else {
        if (next >= x.shape->size()) return;
        shape.push_back((*x.shape)[next++]);
      }
    }
    f.shape = shape;
  }

  void squeeze(const NodeProto& n) {
    const ValueFacts& x = in(n, 0);
    ValueFacts& f = out(n);
    same_type(n);
    f.ints = x.ints;
    f.floats = x.floats;
    auto axes = axes_of(n, 1);
    if (!x.shape || !axes) return;
    std::set<int64_t> drop;
    for (int64_t a : *axes) drop.insert(normalized_axis(a, x.shape->size()));
    SymShape shape;
    for (size_t i = 0; i < x.shape->size(); ++i) {
      const auto& d = (*x.shape)[i];
      const bool squeezed = axes->empty() ? (d && *d == SymDim(1)) : drop.count(int64_t(i)) > 0;
      if (!squeezed) shape.push_back(d);
    }
    f.shape = shape;
  }

  void concat(const NodeProto& n) {
    ValueFacts& f = out(n);
    same_type(n);
    std::vector<const ValueFacts*> parts;
    for (int i = 0; i < n.input_size(); ++i) parts.push_back(&in(n, i));
    // Contents of shape vectors, concatenated.
    std::vector<SymDim> ints;
    bool have_ints = true;
    for (const ValueFacts* p : parts) {
      if (!p->ints) {
        have_ints = false;
        break;
      }
      ints.insert(ints.end(), p->ints->begin(), p->ints->end());
    }
    if (have_ints) f.ints = ints;
    if (parts.empty() || !parts[0]->shape) return;
    const size_t rank = parts[0]->shape->size();
    const int64_t axis = normalized_axis(attr_int(n, "axis", 0), rank);
    if (axis < 0 || axis >= int64_t(rank)) return;
    SymShape shape = *parts[0]->shape;
    std::optional<SymDim> total = SymDim(0);
    for (const ValueFacts* p : parts) {
      if (!p->shape || p->shape->size() != rank) return;
      const auto& d = (*p->shape)[size_t(axis)];
      total = total && d ? std::optional<SymDim>(*total + *d) : std::nullopt;
    }
    shape[size_t(axis)] = total;
    f.shape = shape;
  }

  void slice(const NodeProto& n) {
    const ValueFacts& x = in(n, 0);
    ValueFacts& f = out(n);
    same_type(n);
    // Only slices of shape vectors with constant bounds (the shape arithmetic of exports).
    if (!x.ints || !x.shape || x.shape->size() != 1) return;
    auto constant_ints = [&](int i) -> std::optional<std::vector<int64_t>> {
      const ValueFacts& v = in(n, i);
      if (i >= n.input_size() || n.input(i).empty()) return std::nullopt;
      if (!v.ints) return std::nullopt;
      std::vector<int64_t> out_values;
      for (const SymDim& d : *v.ints) {
        if (!d.is_constant()) return std::nullopt;
        out_values.push_back(d.constant());
      }
      return out_values;
    };
    std::vector<int64_t> starts = attr_ints(n, "starts"), ends = attr_ints(n, "ends");
    if (starts.empty()) {
      auto s = constant_ints(1), e = constant_ints(2);
      if (!s || !e) return;
      starts = *s, ends = *e;
    }
    if (starts.size() != 1 || ends.size() != 1) return;
    auto steps = constant_ints(4);
    if (steps && (steps->size() != 1 || (*steps)[0] != 1)) return;
    const int64_t size = int64_t(x.ints->size());
    auto clampi = [&](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + size : v, 0, size); };
    const int64_t b = clampi(starts[0]), e = clampi(ends[0]);
    std::vector<SymDim> values(x.ints->begin() + b, x.ints->begin() + std::max(b, e));
    f.ints = values;
    f.shape = SymShape{SymDim(int64_t(values.size()))};
  }

  void reshape(const NodeProto& n) {
    const ValueFacts& x = in(n, 0);
    const ValueFacts& target = in(n, 1);
    ValueFacts& f = out(n);
    same_type(n);
    f.ints = x.ints;
    if (!target.ints) return;
    const bool allow_zero = attr_int(n, "allowzero", 0) != 0;
    SymShape shape;
    int infer = -1;
    for (size_t i = 0; i < target.ints->size(); ++i) {
      const SymDim& d = (*target.ints)[i];
      if (d == SymDim(-1)) {
        infer = int(i);
        shape.push_back(std::nullopt);
      } else if (d == SymDim(0) && !allow_zero) {
        if (!x.shape || i >= x.shape->size()) return;
        shape.push_back((*x.shape)[i]);
      } else {
        shape.push_back(d);
      }
    }
    if (infer >= 0 && x.shape) {
      std::vector<SymDim> input_dims;
      bool input_known = true;
      for (const auto& d : *x.shape) {
        if (!d) input_known = false;
        else input_dims.push_back(*d);
      }
      SymDim rest(1);
      bool rest_known = true;
      for (size_t i = 0; i < shape.size(); ++i) {
        if (int(i) == infer) continue;
        if (!shape[i]) rest_known = false;
        else rest = rest * *shape[i];
      }
      if (input_known && rest_known)
        if (auto q = product(input_dims).divide(rest)) shape[size_t(infer)] = *q;
    }
    f.shape = shape;
  }

  void flatten(const NodeProto& n) {
    const ValueFacts& x = in(n, 0);
    ValueFacts& f = out(n);
    same_type(n);
    if (!x.shape) return;
    const int64_t axis = normalized_axis(attr_int(n, "axis", 1), x.shape->size());
    std::optional<SymDim> outer = SymDim(1), inner = SymDim(1);
    for (size_t i = 0; i < x.shape->size(); ++i) {
      std::optional<SymDim>& acc = int64_t(i) < axis ? outer : inner;
      const auto& d = (*x.shape)[i];
      acc = acc && d ? std::optional<SymDim>(*acc * *d) : std::nullopt;
    }
    f.shape = SymShape{outer, inner};
  }

  void transpose(const NodeProto& n) {
    const ValueFacts& x = in(n, 0);
    ValueFacts& f = out(n);
    same_type(n);
    if (!x.shape) return;
    std::vector<int64_t> perm = attr_ints(n, "perm");
    if (perm.empty())
      for (int64_t i = int64_t(x.shape->size()) - 1; i >= 0; --i) perm.push_back(i);
    if (perm.size() != x.shape->size()) return;
    SymShape shape;
    for (int64_t p : perm) {
      if (p < 0 || p >= int64_t(x.shape->size())) return;
      shape.push_back((*x.shape)[size_t(p)]);
    }
    f.shape = shape;
  }

  void matmul(const NodeProto& n) {
    const ValueFacts& a = in(n, 0);
    const ValueFacts& b = in(n, 1);
    ValueFacts& f = out(n);
    same_type(n);
    if (!a.shape || !b.shape || a.shape->empty() || b.shape->empty()) return;
    SymShape sa = *a.shape, sb = *b.shape;
    const bool a_vec = sa.size() == 1, b_vec = sb.size() == 1;
    if (a_vec) sa.insert(sa.begin(), SymDim(1));
    if (b_vec) sb.push_back(SymDim(1));
    SymShape batch_a(sa.begin(), sa.end() - 2), batch_b(sb.begin(), sb.end() - 2);
    auto batch = broadcast({&batch_a, &batch_b});
    if (!batch) return;
    SymShape shape = *batch;
    if (!a_vec) shape.push_back(sa[sa.size() - 2]);
    if (!b_vec) shape.push_back(sb.back());
    f.shape = shape;
  }

  void gemm(const NodeProto& n) {
    const ValueFacts& a = in(n, 0);
    const ValueFacts& b = in(n, 1);
    ValueFacts& f = out(n);
    same_type(n);
    if (!a.shape || !b.shape || a.shape->size() != 2 || b.shape->size() != 2) return;
    const bool ta = attr_int(n, "transA", 0), tb = attr_int(n, "transB", 0);
    f.shape = SymShape{(*a.shape)[ta ? 1 : 0], (*b.shape)[tb ? 0 : 1]};
  }

  // Output extent of a convolution or pooling window along one spatial axis.
  static std::optional<SymDim> window_extent(const std::optional<SymDim>& in_dim, int64_t kernel,
                                             int64_t stride, int64_t pad_total, int64_t dilation) {
    if (!in_dim || stride <= 0) return std::nullopt;
    if (in_dim->is_constant()) {
      const int64_t span = dilation * (kernel - 1) + 1;
      return SymDim((in_dim->constant() + pad_total - span) / stride + 1);
    }
    // A symbolic extent only when the window keeps it exact (stride 1, "same" padding).
    if (stride == 1 && pad_total == dilation * (kernel - 1)) return in_dim;
    return std::nullopt;
  }

  void conv(const NodeProto& n) {
    const ValueFacts& x = in(n, 0);
    const ValueFacts& w = in(n, 1);
    ValueFacts& f = out(n);
    same_type(n);
    if (!x.shape || !w.shape || x.shape->size() < 3 || w.shape->size() != x.shape->size()) return;
    const size_t spatial = x.shape->size() - 2;
    std::vector<int64_t> kernel = attr_ints(n, "kernel_shape");
    if (kernel.empty())
      for (size_t i = 0; i < spatial; ++i) {
        const auto& d = (*w.shape)[2 + i];
        if (!d || !d->is_constant()) return;
        kernel.push_back(d->constant());
      }
    SymShape shape = {(*x.shape)[0], (*w.shape)[0]};
    if (!spatial_dims(n, *x.shape, kernel, &shape)) return;
    f.shape = shape;
  }

  void pool(const NodeProto& n) {
    const ValueFacts& x = in(n, 0);
    ValueFacts& f = out(n);
    same_type(n);
    if (!x.shape || x.shape->size() < 3 || attr_int(n, "ceil_mode", 0)) return;
    SymShape shape = {(*x.shape)[0], (*x.shape)[1]};
    if (!spatial_dims(n, *x.shape, attr_ints(n, "kernel_shape"), &shape)) return;
    f.shape = shape;
  }

  bool spatial_dims(const NodeProto& n, const SymShape& x, const std::vector<int64_t>& kernel,
                    SymShape* shape) {
    const size_t spatial = x.size() - 2;
    if (kernel.size() != spatial) return false;
    const std::string auto_pad = attr_string(n, "auto_pad");
    if (!auto_pad.empty() && auto_pad != "NOTSET") return false;
    std::vector<int64_t> strides = attr_ints(n, "strides"), pads = attr_ints(n, "pads"),
                         dilations = attr_ints(n, "dilations");
    strides.resize(spatial, 1);
    dilations.resize(spatial, 1);
    pads.resize(2 * spatial, 0);
    for (size_t i = 0; i < spatial; ++i)
      shape->push_back(
          window_extent(x[2 + i], kernel[i], strides[i], pads[i] + pads[i + spatial], dilations[i]));
    return true;
  }

  void global_pool(const NodeProto& n) {
    const ValueFacts& x = in(n, 0);
    same_type(n);
    if (!x.shape || x.shape->size() < 3) return;
    SymShape shape = {(*x.shape)[0], (*x.shape)[1]};
    shape.resize(x.shape->size(), SymDim(1));
    out(n).shape = shape;
  }

  void expand(const NodeProto& n) {
    const ValueFacts& x = in(n, 0);
    const ValueFacts& target = in(n, 1);
    same_type(n);
    if (!x.shape || !target.ints) return;
    SymShape t = known(*target.ints);
    out(n).shape = broadcast({&*x.shape, &t});
  }

  void arithmetic(const NodeProto& n) {
    elementwise(n);
    // Shape arithmetic: seq * 12, hidden / heads, and the like, element by element.
    const ValueFacts& a = in(n, 0);
    const ValueFacts& b = in(n, 1);
    if (!a.ints || !b.ints) return;
    const size_t count = std::max(a.ints->size(), b.ints->size());
    if ((a.ints->size() != count && a.ints->size() != 1) ||
        (b.ints->size() != count && b.ints->size() != 1))
      return;
    std::vector<SymDim> values;
    const std::string& op = n.op_type();
    for (size_t i = 0; i < count; ++i) {
      const SymDim& x = (*a.ints)[a.ints->size() == 1 ? 0 : i];
      const SymDim& y = (*b.ints)[b.ints->size() == 1 ? 0 : i];
      if (op == "Add") values.push_back(x + y);
      else if (op == "Sub") values.push_back(x - y);
      else if (op == "Mul") values.push_back(x * y);
      else if (auto q = x.divide(y)) values.push_back(*q);  // integer division when exact
      else return;
    }
    out(n).ints = values;
  }

  void elementwise(const NodeProto& n) {
    same_type(n);
    std::vector<const SymShape*> shapes;
    for (int i = 0; i < n.input_size(); ++i) {
      const ValueFacts& v = in(n, i);
      shapes.push_back(v.shape ? &*v.shape : nullptr);
    }
    if (n.op_type() == "Where" && !shapes.empty()) {
      // The condition decides nothing about the element type: take the values'.
      if (n.input_size() > 1) out(n).elem_type = in(n, 1).elem_type;
    }
    out(n).shape = broadcast(shapes);
  }

  void shape_keeping(const NodeProto& n) {
    const ValueFacts& x = in(n, 0);
    ValueFacts& f = out(n);
    f.shape = x.shape;
    if (n.op_type() == "Cast") {
      f.elem_type = int32_t(attr_int(n, "to", 0));
      f.ints = x.ints;
    } else {
      same_type(n);
      if (n.op_type() == "Identity") f.ints = x.ints, f.floats = x.floats;
    }
  }

  void reduce(const NodeProto& n) {
    const ValueFacts& x = in(n, 0);
    same_type(n);
    auto axes = axes_of(n, 1);
    if (!x.shape || !axes) return;
    const bool keep = attr_int(n, "keepdims", 1) != 0;
    std::set<int64_t> reduced;
    for (int64_t a : *axes) reduced.insert(normalized_axis(a, x.shape->size()));
    SymShape shape;
    for (size_t i = 0; i < x.shape->size(); ++i) {
      const bool r = axes->empty() || reduced.count(int64_t(i));
      if (!r) shape.push_back((*x.shape)[i]);
      else if (keep) shape.push_back(SymDim(1));
    }
    out(n).shape = shape;
  }
};

}  // namespace

void propagate_shapes(Graph& graph) { Propagator(graph).run(); }

}  // namespace dietcode::onnx_import

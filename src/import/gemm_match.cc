// match_operators (imported_op.h): MatMul, Gemm and Conv nodes onto dense, batch_matmul and
// conv2d, with symbolic dimensions and their epilogues folded in.
//
//   MatMul(X, W), W constant [K,N]     dense: M = every leading dimension of X multiplied,
//                                      weight_layout KN, or NK when the graph transposes an
//                                      [N,K] initializer itself
//   MatMul(A, B), both computed         batch_matmul over the (equal) leading dimensions; a
//                                      Transpose that only swaps B's (or A's) last two axes
//                                      becomes transpose_b (transpose_a)
//   Gemm(X, W, c), W constant          dense; transB=1 stores W [N,K] (NK), transB=0 [K,N]; a vector c
//                                      with beta = 1 is the bias
//   Conv(X, W, b), 2-D, group 1        conv2d; ONNX is NCHW with OIHW weights, dietcode NHWC
//                                      with KRSC weights: the op's note says so
#include <algorithm>
#include <set>

#include "import/imported_op.h"

namespace dietcode::onnx_import {

namespace {

using onnx::NodeProto;

std::optional<DType> dtype_of(int32_t elem_type) {
  switch (elem_type) {
    case onnx::TensorProto::FLOAT:
      return DType::kFloat32;
    case onnx::TensorProto::FLOAT16:
      return DType::kFloat16;
    case onnx::TensorProto::BFLOAT16:
      return DType::kBFloat16;
    default:
      return std::nullopt;
  }
}

std::string shape_text(const std::vector<SymDim>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + dims[i].to_string();
  return s + "]";
}

std::string node_label(const NodeProto& n) {
  return n.name().empty() ? n.output(0) : n.name();
}

class Matcher {
 public:
  explicit Matcher(const Graph& g) : g_(g) {}

  MatchResult run() {
    std::set<const NodeProto*> folded;
    for (const NodeProto& n : g_.proto().node()) {
      const std::string& type = n.op_type();
      if (type != "MatMul" && type != "Gemm" && type != "Conv") continue;
      std::string reason;
      std::optional<ImportedOp> op;
      if (type == "MatMul") op = matmul(n, &reason);
      else if (type == "Gemm") op = gemm(n, &reason);
      else op = conv(n, &reason);
      if (!op) {
        result_.gemms_not_covered.push_back({node_label(n), type, reason, node_flops(n)});
        continue;
      }
      op->node_name = node_label(n);
      op->op_type = type;
      const bool bias_arg = op->kind != OpKind::kBatchMatmul &&
                            !epilogue_has_bias(op->epilogue);  // conv with a bias input has one
      const std::optional<SymDim> extent =
          op->kind == OpKind::kConv2d ? std::optional<SymDim>() : op->dims.at("N");
      FoldedEpilogue e = fold_epilogue(g_, n.output(0), bias_arg, extent);
      if (e.epilogue != Epilogue::kNone) {
        op->epilogue = combine(op->epilogue, e.epilogue);
        op->folded = e.folded;
        folded.insert(e.nodes.begin(), e.nodes.end());
      }
      result_.ops.push_back(*op);
    }
    for (const NodeProto& n : g_.proto().node()) {
      const std::string& type = n.op_type();
      if (type == "MatMul" || type == "Gemm" || type == "Conv" || folded.count(&n)) continue;
      // Constants and the arithmetic on shape vectors (Shape, Gather, Concat, ... whose every
      // output is a small integer tensor) are bookkeeping, not work: counted as one group.
      bool bookkeeping = type == "Constant";
      if (!bookkeeping && n.output_size() > 0) {
        bookkeeping = true;
        for (const std::string& out : n.output())
          if (!g_.facts(out).ints) bookkeeping = false;
      }
      ++result_.other_op_types[bookkeeping ? "(constants and shape arithmetic)" : type];
    }
    return result_;
  }

  // 2 x multiply-adds of any MatMul, Gemm or Conv whose shapes are known.
  std::optional<SymDim> node_flops(const NodeProto& n) const {
    auto out = g_.full_shape(n.output(0));
    if (!out || n.input_size() < 2) return std::nullopt;
    auto a = g_.full_shape(n.input(0)), b = g_.full_shape(n.input(1));
    if (!a || !b || a->empty() || b->empty()) return std::nullopt;
    SymDim k;
    if (n.op_type() == "MatMul") {
      k = a->back();
    } else if (n.op_type() == "Gemm") {
      if (a->size() != 2) return std::nullopt;
      k = (*a)[attr_int(n, "transA", 0) ? 0 : 1];
    } else {  // Conv: every output element reads C/group x R x S inputs
      if (b->size() < 3) return std::nullopt;
      k = product(std::vector<SymDim>(b->begin() + 1, b->end()));
    }
    return SymDim(2) * product(*out) * k;
  }

 private:
  const Graph& g_;
  MatchResult result_;

  static Epilogue combine(Epilogue own, Epilogue folded) {
    if (own == Epilogue::kBias) {
      if (folded == Epilogue::kRelu) return Epilogue::kBiasRelu;
      if (folded == Epilogue::kGelu) return Epilogue::kBiasGelu;
    }
    return folded == Epilogue::kNone ? own : folded;
  }

  std::optional<DType> dtype(const NodeProto& n, std::string* reason) const {
    auto t = dtype_of(g_.facts(n.output(0)).elem_type);
    if (!t) {
      const int32_t e = g_.facts(n.output(0)).elem_type;
      *reason = e ? "element type " + std::to_string(e) +
                        " is not float32, float16 or bfloat16"
                  : "its element type is unknown";
    }
    return t;
  }

  // A constant weight: an initializer (or Constant), possibly through a Transpose of one.
  struct Weight {
    std::string name;
    bool transposed_by_graph = false;  // the graph applies Transpose(perm [1,0]) to it
  };
  std::optional<Weight> constant_weight(const std::string& value) const {
    if (!g_.facts(value).constant) return std::nullopt;
    const NodeProto* p = g_.producer(value);
    if (p && p->op_type() == "Transpose") {
      std::vector<int64_t> perm = attr_ints(*p, "perm");
      if ((perm.empty() || perm == std::vector<int64_t>{1, 0}) && g_.facts(p->input(0)).constant)
        return Weight{p->input(0), true};
    }
    return Weight{value, false};
  }

  std::optional<ImportedOp> matmul(const NodeProto& n, std::string* reason) {
    auto t = dtype(n, reason);
    if (!t) return std::nullopt;
    auto a = g_.full_shape(n.input(0)), b = g_.full_shape(n.input(1));
    if (!a || !b) {
      *reason = "the shapes of its inputs are not known";
      return std::nullopt;
    }
    if (a->size() < 2 || b->size() < 2) {
      *reason = "a matrix-vector product (an input of rank 1)";
      return std::nullopt;
    }
    ImportedOp op;
    op.dtype = *t;
    if (auto w = constant_weight(n.input(1)); w && b->size() == 2) {
      op.kind = OpKind::kDense;
      const SymDim K = a->back(), N = (*b)[1];
      const SymDim M = product(std::vector<SymDim>(a->begin(), a->end() - 1));
      op.dims = {{"M", M}, {"N", N}, {"K", K}};
      op.weight_layout = w->transposed_by_graph ? WeightLayout::kNK : WeightLayout::kKN;
      op.weight_initializer = w->name;
      if (a->size() > 2) op.note = "X is the input viewed as [M,K]";
      op.flops = SymDim(2) * M * N * K;
      return op;
    }
    if (g_.facts(n.input(1)).constant) {
      *reason = "a constant right operand of rank " + std::to_string(b->size()) +
                " (only a 2-D weight maps onto dense)";
      return std::nullopt;
    }
    // Two computed operands: a batch of products over equal leading dimensions.
    if (a->size() != b->size()) {
      *reason = "operands of different rank (broadcast batch dimensions)";
      return std::nullopt;
    }
    std::string a_src = n.input(0), b_src = n.input(1);
    std::vector<SymDim> sa = *a, sb = *b;
    op.transpose_a = swaps_last_two(&a_src, &sa);
    op.transpose_b = swaps_last_two(&b_src, &sb);
    const size_t r = sa.size();
    for (size_t i = 0; i + 2 < r; ++i)
      if (sa[i] != sb[i]) {
        *reason = "leading (batch) dimensions differ: " + shape_text(*a) + " x " + shape_text(*b);
        return std::nullopt;
      }
    const SymDim M = op.transpose_a ? sa[r - 1] : sa[r - 2];
    const SymDim K = op.transpose_a ? sa[r - 2] : sa[r - 1];
    const SymDim N = op.transpose_b ? sb[r - 2] : sb[r - 1];
    const SymDim B = product(std::vector<SymDim>(sa.begin(), sa.end() - 2));
    op.kind = OpKind::kBatchMatmul;
    op.dims = {{"B", B}, {"M", M}, {"N", N}, {"K", K}};
    op.flops = SymDim(2) * B * M * N * K;
    if (r > 3) op.note = "A, B and Y are viewed with their leading dimensions as one batch";
    return op;
  }

  // When `value` is Transpose(src) swapping only the last two axes and read by nothing else,
  // points at src instead (its shape in `dims`) and says so.
  bool swaps_last_two(std::string* value, std::vector<SymDim>* dims) const {
    const NodeProto* p = g_.producer(*value);
    if (!p || p->op_type() != "Transpose" || g_.consumers(*value).size() != 1 ||
        g_.is_graph_output(*value))
      return false;
    const std::vector<int64_t> perm = attr_ints(*p, "perm");
    const size_t r = dims->size();
    if (perm.size() != r || r < 2) return false;
    for (size_t i = 0; i + 2 < r; ++i)
      if (perm[i] != int64_t(i)) return false;
    if (perm[r - 2] != int64_t(r - 1) || perm[r - 1] != int64_t(r - 2)) return false;
    auto src = g_.full_shape(p->input(0));
    if (!src) return false;
    *value = p->input(0);
    *dims = *src;
    return true;
  }

  std::optional<ImportedOp> gemm(const NodeProto& n, std::string* reason) {
    auto t = dtype(n, reason);
    if (!t) return std::nullopt;
    auto a = g_.full_shape(n.input(0)), b = g_.full_shape(n.input(1));
    if (!a || !b || a->size() != 2 || b->size() != 2) {
      *reason = "the shapes of its inputs are not known";
      return std::nullopt;
    }
    if (attr_int(n, "transA", 0)) {
      *reason = "transA = 1 (dense reads X as [M,K])";
      return std::nullopt;
    }
    if (attr_float(n, "alpha", 1.0f) != 1.0f) {
      *reason = "alpha is not 1";
      return std::nullopt;
    }
    auto w = constant_weight(n.input(1));
    if (!w) {
      *reason = "its B operand is not a constant weight";
      return std::nullopt;
    }
    const bool tb = attr_int(n, "transB", 0) != 0;
    ImportedOp op;
    op.kind = OpKind::kDense;
    op.dtype = *t;
    const SymDim M = (*a)[0], K = (*a)[1], N = tb ? (*b)[0] : (*b)[1];
    op.dims = {{"M", M}, {"N", N}, {"K", K}};
    const bool stored_nk = tb != w->transposed_by_graph;
    op.weight_layout = stored_nk ? WeightLayout::kNK : WeightLayout::kKN;
    op.weight_initializer = w->name;
    if (n.input_size() > 2 && !n.input(2).empty()) {
      auto c = g_.full_shape(n.input(2));
      const bool vector = c && !c->empty() && c->back() == N &&
                          std::all_of(c->begin(), c->end() - 1,
                                      [](const SymDim& d) { return d == SymDim(1); });
      if (!vector || !g_.facts(n.input(2)).constant || attr_float(n, "beta", 1.0f) != 1.0f) {
        *reason = "its C operand is not a constant bias vector with beta = 1";
        return std::nullopt;
      }
      op.epilogue = Epilogue::kBias;
    }
    op.flops = SymDim(2) * M * N * K;
    return op;
  }

  std::optional<ImportedOp> conv(const NodeProto& n, std::string* reason) {
    auto t = dtype(n, reason);
    if (!t) return std::nullopt;
    auto x = g_.full_shape(n.input(0)), w = g_.full_shape(n.input(1));
    auto y = g_.full_shape(n.output(0));
    if (!x || !w || !y) {
      *reason = "the shapes of its input, weights or output are not known";
      return std::nullopt;
    }
    if (x->size() != 4) {
      *reason = "a " + std::to_string(int(x->size()) - 2) + "-D convolution (only 2-D maps)";
      return std::nullopt;
    }
    if (attr_int(n, "group", 1) != 1) {
      *reason = "a grouped convolution (group " + std::to_string(attr_int(n, "group", 1)) + ")";
      return std::nullopt;
    }
    if (!g_.facts(n.input(1)).constant) {
      *reason = "its weights are not constant";
      return std::nullopt;
    }
    const std::string auto_pad = attr_string(n, "auto_pad");
    if (!auto_pad.empty() && auto_pad != "NOTSET") {
      *reason = "auto_pad " + auto_pad + " (explicit pads only)";
      return std::nullopt;
    }
    std::vector<int64_t> pads = attr_ints(n, "pads"), strides = attr_ints(n, "strides"),
                         dilations = attr_ints(n, "dilations");
    pads.resize(4, 0);
    strides.resize(2, 1);
    dilations.resize(2, 1);
    if (pads[0] != pads[2] || pads[1] != pads[3]) {
      *reason = "asymmetric padding";
      return std::nullopt;
    }
    ImportedOp op;
    op.kind = OpKind::kConv2d;
    op.dtype = *t;
    op.dims = {{"N", (*x)[0]}, {"C", (*x)[1]}, {"H", (*x)[2]}, {"W", (*x)[3]},
               {"K", (*w)[0]}, {"R", (*w)[2]}, {"S", (*w)[3]}};
    for (int i = 0; i < 2; ++i) {
      op.stride[i] = int(strides[size_t(i)]);
      op.pad[i] = int(pads[size_t(i)]);
      op.dilation[i] = int(dilations[size_t(i)]);
    }
    if (n.input_size() > 2 && !n.input(2).empty()) op.epilogue = Epilogue::kBias;
    op.note =
        "ONNX Conv is NCHW with OIHW weights; this conv2d is NHWC with KRSC weights: pass X and "
        "Y channels-last and the weights transposed to KRSC once at load";
    op.flops = SymDim(2) * product(*y) * (*w)[1] * (*w)[2] * (*w)[3];
    return op;
  }
};

}  // namespace

MatchResult match_operators(const Graph& graph) { return Matcher(graph).run(); }

}  // namespace dietcode::onnx_import

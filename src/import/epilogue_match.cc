// fold_epilogue (imported_op.h): the followers of a GEMM's output that dietcode's epilogue
// computes in the kernel's store: a bias Add, then Relu or GELU. GELU comes as an ONNX or
// onnxruntime Gelu node, or spelled out the way PyTorch exports it:
//   Erf form   0.5 * x * (1 + erf(x / sqrt(2)))                        nn.GELU()
//   tanh form  0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))   nn.GELU("tanh")
// with the three-way product in any association. A follower folds only when everything it
// reads and writes stays inside the pattern: an intermediate another node (or the graph's
// output) also reads would have to be computed anyway.
#include <cmath>
#include <set>

#include "import/imported_op.h"

namespace dietcode::onnx_import {

namespace {

using onnx::NodeProto;

bool near(std::optional<double> v, double want) {
  return v && std::fabs(*v - want) <= 1e-3 * std::fabs(want);
}

class Folder {
 public:
  explicit Folder(const Graph& g) : g_(g) {}

  // The single node reading `value`, when exactly one does and it is not a graph output.
  const NodeProto* sole_consumer(const std::string& value) const {
    const auto& c = g_.consumers(value);
    if (c.size() != 1 || g_.is_graph_output(value)) return nullptr;
    return c[0];
  }

  // The input of binary `node` that is not `value` (nullptr if both or neither are).
  const std::string* other_input(const NodeProto& node, const std::string& value) const {
    if (node.input_size() != 2) return nullptr;
    if (node.input(0) == value && node.input(1) != value) return &node.input(1);
    if (node.input(1) == value && node.input(0) != value) return &node.input(0);
    return nullptr;
  }

  // Add(value, c) with c a constant vector of `extent` elements along the last axis.
  const NodeProto* bias_add(const std::string& value, const std::optional<SymDim>& extent) const {
    const NodeProto* add = sole_consumer(value);
    if (!add || add->op_type() != "Add") return nullptr;
    const std::string* c = other_input(*add, value);
    if (!c || !g_.facts(*c).constant || !extent) return nullptr;
    auto shape = g_.full_shape(*c);
    if (!shape || shape->empty() || shape->back() != *extent) return nullptr;
    for (size_t i = 0; i + 1 < shape->size(); ++i)
      if ((*shape)[i] != SymDim(1)) return nullptr;
    // The sum must keep the GEMM's shape (the bias broadcasts into it, not the other way).
    if (g_.facts(value).shape && g_.facts(add->output(0)).shape &&
        g_.facts(value).shape->size() != g_.facts(add->output(0)).shape->size())
      return nullptr;
    return add;
  }

  // The GELU that reads `x`, if one does; fills `nodes` and returns the node whose output is
  // GELU(x).
  const NodeProto* gelu(const std::string& x, std::vector<const NodeProto*>* nodes,
                        std::string* form) const {
    const auto& readers = g_.consumers(x);
    if (g_.is_graph_output(x) || readers.empty()) return nullptr;
    if (readers.size() == 1) {
      const NodeProto* n = readers[0];
      if (n->op_type() == "Gelu" || n->op_type() == "FastGelu") {
        *nodes = {n};
        *form = n->op_type();
        return n;
      }
    }
    for (const NodeProto* first : readers) {
      std::vector<const NodeProto*> pattern;
      const NodeProto* inner = nullptr;  // the Erf or Tanh
      if ((inner = erf_branch(x, first, &pattern)))
        *form = "GELU (Erf)";
      else if ((inner = tanh_branch(x, first, &pattern)))
        *form = "GELU (tanh)";
      else
        continue;
      // a = 1 + inner
      const NodeProto* one_plus = sole_consumer(inner->output(0));
      if (!one_plus || one_plus->op_type() != "Add") continue;
      const std::string* one = other_input(*one_plus, inner->output(0));
      if (!one || !near(g_.scalar(*one), 1.0)) continue;
      pattern.push_back(one_plus);
      const NodeProto* last = half_x_times(x, one_plus->output(0), &pattern);
      if (!last) continue;
      if (!self_contained(x, pattern, last)) continue;
      *nodes = pattern;
      return last;
    }
    return nullptr;
  }

 private:
  const Graph& g_;

  // x / sqrt(2) or x * (1/sqrt(2)), then Erf.
  const NodeProto* erf_branch(const std::string& x, const NodeProto* first,
                              std::vector<const NodeProto*>* pattern) const {
    const std::string* c = other_input(*first, x);
    if (!c || (first->op_type() == "Div" && first->input(0) != x)) return nullptr;
    const bool scaled = (first->op_type() == "Div" && near(g_.scalar(*c), std::sqrt(2.0))) ||
                        (first->op_type() == "Mul" && near(g_.scalar(*c), 1.0 / std::sqrt(2.0)));
    if (!scaled) return nullptr;
    const NodeProto* erf = sole_consumer(first->output(0));
    if (!erf || erf->op_type() != "Erf") return nullptr;
    *pattern = {first, erf};
    return erf;
  }

  // x^3 (Pow(x, 3), or x*x*x in either association) starting at `first`; returns the cube's
  // node and adds the pattern's nodes.
  const NodeProto* cube(const std::string& x, const NodeProto* first,
                        std::vector<const NodeProto*>* pattern) const {
    if (first->op_type() == "Pow" && first->input_size() == 2 && first->input(0) == x &&
        near(g_.scalar(first->input(1)), 3.0)) {
      pattern->push_back(first);
      return first;
    }
    if (first->op_type() != "Mul") return nullptr;
    if (first->input_size() == 2 && first->input(0) == x && first->input(1) == x) {  // x*x
      const NodeProto* second = sole_consumer(first->output(0));
      const std::string* other = second ? other_input(*second, first->output(0)) : nullptr;
      if (!second || second->op_type() != "Mul" || !other || *other != x) return nullptr;
      pattern->insert(pattern->end(), {first, second});
      return second;
    }
    return nullptr;
  }

  // sqrt(2/pi) * (x + 0.044715 * x^3), then Tanh.
  const NodeProto* tanh_branch(const std::string& x, const NodeProto* first,
                               std::vector<const NodeProto*>* pattern) const {
    std::vector<const NodeProto*> p;
    const NodeProto* x3 = cube(x, first, &p);
    if (!x3) return nullptr;
    const NodeProto* scaled = sole_consumer(x3->output(0));
    const std::string* c = scaled ? other_input(*scaled, x3->output(0)) : nullptr;
    if (!scaled || scaled->op_type() != "Mul" || !c || !near(g_.scalar(*c), 0.044715))
      return nullptr;
    const NodeProto* sum = sole_consumer(scaled->output(0));
    const std::string* sx = sum ? other_input(*sum, scaled->output(0)) : nullptr;
    if (!sum || sum->op_type() != "Add" || !sx || *sx != x) return nullptr;
    const NodeProto* times = sole_consumer(sum->output(0));
    const std::string* k = times ? other_input(*times, sum->output(0)) : nullptr;
    if (!times || times->op_type() != "Mul" || !k || !near(g_.scalar(*k), std::sqrt(2.0 / M_PI)))
      return nullptr;
    const NodeProto* th = sole_consumer(times->output(0));
    if (!th || th->op_type() != "Tanh") return nullptr;
    p.insert(p.end(), {scaled, sum, times, th});
    *pattern = p;
    return th;
  }

  // 0.5 * x * a in any association, where `a` = 1 + erf(...) or 1 + tanh(...); returns the
  // node computing the product.
  const NodeProto* half_x_times(const std::string& x, const std::string& a,
                                std::vector<const NodeProto*>* pattern) const {
    const NodeProto* m1 = sole_consumer(a);
    if (!m1 || m1->op_type() != "Mul") return nullptr;
    const std::string* other = other_input(*m1, a);
    if (!other) return nullptr;
    if (*other == x || near(g_.scalar(*other), 0.5)) {  // (x * a) * 0.5 or (a * 0.5) * x
      const NodeProto* m2 = sole_consumer(m1->output(0));
      const std::string* rest = m2 ? other_input(*m2, m1->output(0)) : nullptr;
      if (!m2 || m2->op_type() != "Mul" || !rest) return nullptr;
      const bool ok = *other == x ? near(g_.scalar(*rest), 0.5) : *rest == x;
      if (!ok) return nullptr;
      pattern->insert(pattern->end(), {m1, m2});
      return m2;
    }
    // (x * 0.5) * a
    const NodeProto* half = g_.producer(*other);
    if (!half || half->op_type() != "Mul") return nullptr;
    const std::string* h = other_input(*half, x);
    if (!h || !near(g_.scalar(*h), 0.5) || g_.consumers(*other).size() != 1) return nullptr;
    pattern->insert(pattern->end(), {half, m1});
    return m1;
  }

  // Every reader of x and of each pattern node's output (but the last's) is in the pattern.
  bool self_contained(const std::string& x, const std::vector<const NodeProto*>& pattern,
                      const NodeProto* last) const {
    std::set<const NodeProto*> inside(pattern.begin(), pattern.end());
    auto all_inside = [&](const std::string& value) {
      if (g_.is_graph_output(value)) return false;
      for (const NodeProto* c : g_.consumers(value))
        if (!inside.count(c)) return false;
      return true;
    };
    if (!all_inside(x)) return false;
    for (const NodeProto* n : pattern)
      if (n != last && !all_inside(n->output(0))) return false;
    return true;
  }
};

}  // namespace

FoldedEpilogue fold_epilogue(const Graph& graph, const std::string& value, bool allow_bias,
                             const std::optional<SymDim>& bias_extent) {
  Folder f(graph);
  FoldedEpilogue out;
  std::string current = value;
  bool bias = false;
  if (allow_bias)
    if (const NodeProto* add = f.bias_add(current, bias_extent)) {
      bias = true;
      out.nodes.push_back(add);
      out.folded.push_back("Add (bias)");
      current = add->output(0);
    }
  Epilogue act = Epilogue::kNone;
  if (const NodeProto* relu = f.sole_consumer(current); relu && relu->op_type() == "Relu") {
    act = Epilogue::kRelu;
    out.nodes.push_back(relu);
    out.folded.push_back("Relu");
  } else {
    std::vector<const NodeProto*> nodes;
    std::string form;
    if (f.gelu(current, &nodes, &form)) {
      act = Epilogue::kGelu;
      out.nodes.insert(out.nodes.end(), nodes.begin(), nodes.end());
      out.folded.push_back(form);
    }
  }
  if (bias)
    out.epilogue = act == Epilogue::kRelu   ? Epilogue::kBiasRelu
                   : act == Epilogue::kGelu ? Epilogue::kBiasGelu
                                            : Epilogue::kBias;
  else
    out.epilogue = act;
  return out;
}

}  // namespace dietcode::onnx_import

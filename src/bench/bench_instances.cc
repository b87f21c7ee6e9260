// The shape instances bench runs for each op: the tuned values or those of --shapes, their
// weights, dimensions and tensor sizes; and the --ops selection.
#include <algorithm>
#include <cctype>

#include "bench/bench_pack.h"
#include "common/error.h"
#include "workload/names.h"
#include "workload/op_layout.h"

namespace dietcode {

namespace {

// A range of a million values is already past any model; it bounds a typo's cost.
constexpr int64_t kMaxValues = 1'000'000;

std::string join(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : ", ") + w;
  return out;
}

}  // namespace

ShapeOverride parse_shape_override(const std::string& text) {
  auto fail = [&](const std::string& what) -> ShapeOverride {
    throw UserError("--shapes " + quote(text) + ": " + what);
  };
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    return fail("expected VAR=FIRST:LAST[:STEP] or VAR=V1,V2,... (e.g. T=1:128 or T=1,2,4)");
  ShapeOverride out;
  out.var = text.substr(0, eq);
  const std::string spec = text.substr(eq + 1);
  auto number = [&](const std::string& s) -> int64_t {
    if (s.empty() || s.size() > 18 || !std::all_of(s.begin(), s.end(), [](char c) {
          return std::isdigit(static_cast<unsigned char>(c));
        }))
      fail(quote(s) + " is not a positive integer");
    const int64_t v = std::stoll(s);
    if (v < 1) fail("shape values must be at least 1, got " + s);
    return v;
  };
  std::vector<std::string> parts;
  const char separator = spec.find(':') != std::string::npos ? ':' : ',';
  size_t start = 0;
  for (;;) {
    const size_t end = spec.find(separator, start);
    parts.push_back(spec.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  if (separator == ':') {
    if (parts.size() > 3) return fail("expected FIRST:LAST or FIRST:LAST:STEP");
    const int64_t first = number(parts[0]), last = number(parts[1]);
    const int64_t step = parts.size() == 3 ? number(parts[2]) : 1;
    if (last < first) return fail("the range ends before it starts");
    if ((last - first) / step >= kMaxValues)
      return fail("more than " + std::to_string(kMaxValues) + " values");
    for (int64_t v = first; v <= last; v += step) out.values.push_back(v);
  } else {
    for (const std::string& p : parts) out.values.push_back(number(p));
    std::sort(out.values.begin(), out.values.end());
    out.values.erase(std::unique(out.values.begin(), out.values.end()), out.values.end());
  }
  return out;
}

std::vector<const BenchOp*> select_ops(const BenchPack& pack,
                                       const std::vector<std::string>& names) {
  std::vector<const BenchOp*> out;
  std::vector<std::string> all;
  for (const BenchOp& op : pack.ops) all.push_back(op.spec.name);
  for (const std::string& name : names)
    if (std::find(all.begin(), all.end(), name) == all.end())
      throw UserError("--ops: the pack has no op " + quote(name) + did_you_mean(name, all) +
                      " (it has " + join(all) + ")");
  for (const BenchOp& op : pack.ops)
    if (names.empty() || std::find(names.begin(), names.end(), op.spec.name) != names.end())
      out.push_back(&op);
  return out;
}

std::vector<BenchInstance> bench_instances(const BenchPack& pack, const BenchOp& op,
                                           const std::vector<ShapeOverride>& overrides) {
  for (const ShapeOverride& o : overrides)
    if (!pack.find_var(o.var)) {
      std::vector<std::string> names;
      for (const ShapeVar& v : pack.vars) names.push_back(v.name);
      throw UserError("--shapes: the pack has no shape variable " + quote(o.var) +
                      did_you_mean(o.var, names) + " (it has " + join(names) + ")");
    }
  // Per variable of the op: the values to run and each one's weight.
  std::vector<std::vector<int64_t>> values;
  std::vector<std::vector<double>> weights;
  for (const std::string& name : op.spec.vars) {
    const ShapeVar& var = *pack.find_var(name);
    // --shapes given several times for one variable: the union of its values.
    std::vector<int64_t> chosen;
    for (const ShapeOverride& o : overrides)
      if (o.var == name) chosen.insert(chosen.end(), o.values.begin(), o.values.end());
    std::sort(chosen.begin(), chosen.end());
    chosen.erase(std::unique(chosen.begin(), chosen.end()), chosen.end());
    if (chosen.empty()) chosen = var.values;
    std::vector<double> w;
    for (int64_t v : chosen) {
      auto it = std::find(var.values.begin(), var.values.end(), v);
      w.push_back(it != var.values.end() ? var.weights[size_t(it - var.values.begin())]
                                         : 1.0 / double(var.values.size()));
    }
    values.push_back(std::move(chosen));
    weights.push_back(std::move(w));
  }

  std::vector<BenchInstance> out;
  std::vector<size_t> position(values.size(), 0);
  for (;;) {
    BenchInstance inst;
    double weight = op.spec.weight;
    for (size_t i = 0; i < values.size(); ++i) {
      inst.values.push_back(values[i][position[i]]);
      weight *= weights[i][position[i]];
      inst.shape += (i ? " " : "") + op.spec.vars[i] + "=" + std::to_string(inst.values.back());
    }
    if (inst.shape.empty()) inst.shape = "static";  // an op with no shape variable
    auto listed = op.instance_weights.find(inst.values);
    inst.weight = listed != op.instance_weights.end() ? listed->second : weight;
    inst.dims = evaluate_dims(op.spec, inst.values);
    inst.gemm = gemm_shape(op.spec, inst.values);
    out.push_back(std::move(inst));
    if (out.size() > size_t(kMaxValues))
      throw UserError("op " + op.spec.name + ": more than " + std::to_string(kMaxValues) +
                      " shape instances; narrow them with --shapes");
    size_t i = position.size();  // odometer, last variable fastest
    while (i > 0 && ++position[i - 1] == values[i - 1].size()) position[--i] = 0;
    if (i == 0) break;
  }
  return out;
}

std::vector<int64_t> argument_elements(const BenchOp& op,
                                       const std::map<std::string, int64_t>& dims) {
  std::vector<int64_t> out;
  for (const TensorLayout& t : tensor_layouts(op.spec)) {
    int64_t n = 1;
    for (const std::string& d : t.dims) n *= dims.at(d);
    out.push_back(n);
  }
  return out;
}

}  // namespace dietcode

#include "import/workload_builder.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <set>

#include "common/error.h"
#include "workload/names.h"
#include "workload/op_layout.h"

namespace dietcode::onnx_import {

namespace {

using nlohmann::ordered_json;

// A shape variable's name for a symbolic dimension: the dim_param when it is a usable C
// identifier, else the same with every other character made '_'.
std::string var_name(const std::string& symbol) {
  std::string name = c_identifier(symbol, "d_");
  if (is_c_keyword(name)) name += "_";
  return name;
}

// "encoder_layer_0_attention_self_query" from "/encoder/layer.0/attention/self/query/MatMul".
std::string op_name_from(const std::string& node_name, const std::string& op_type, int ordinal) {
  std::vector<std::string> parts;
  std::string cur;
  for (char c : node_name) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      cur += c;
    } else if (!cur.empty()) {
      parts.push_back(cur);
      cur.clear();
    }
  }
  if (!cur.empty()) parts.push_back(cur);
  // The node's own type at the end says nothing ("MatMul", "MatMul_12", "Gemm_3").
  for (bool again = true; again && !parts.empty();) {
    again = false;
    const std::string& last = parts.back();
    const bool digits = std::all_of(last.begin(), last.end(), ::isdigit);
    if (last.rfind(op_type, 0) == 0 ||
        (digits && parts.size() > 1 && parts[parts.size() - 2].rfind(op_type, 0) == 0)) {
      parts.pop_back();
      again = true;
    }
  }
  if (!parts.empty() && (parts[0] == "onnx" || parts[0] == "model")) parts.erase(parts.begin());
  if (parts.empty()) {
    std::string lower = op_type;
    for (char& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
    return lower + "_" + std::to_string(ordinal);
  }
  // Long paths keep their first two and last three parts.
  if (parts.size() > 6) parts.erase(parts.begin() + 2, parts.end() - 3);
  std::string name;
  for (const std::string& p : parts) name += (name.empty() ? "" : "_") + p;
  if (std::isdigit(static_cast<unsigned char>(name[0]))) name = "op_" + name;
  return name;
}

ordered_json dim_json(const SymDim& d, const std::map<std::string, std::string>& renames) {
  if (d.is_constant()) return d.constant();
  return d.renamed(renames).to_string();
}

// Settles how a dense op takes its weight (options.weight_passing) and says so first in its
// note, naming the initializer, so the user knows what to pass.
void settle_weight_layout(ImportedOp& op, WeightPassing passing) {
  if (op.kind != OpKind::kDense || op.weight_initializer.empty()) return;
  const std::string initializer = "initializer '" + op.weight_initializer + "'";
  std::string text;
  if (op.weight_layout == WeightLayout::kNK) {
    text = "W is " + initializer + " as stored ([N,K])";
  } else if (passing == WeightPassing::kAsStored) {
    text = "W is " + initializer + " as stored ([K,N], weight_layout KN)";
  } else {
    op.weight_layout = WeightLayout::kNK;
    text = "W is the transpose of " + initializer +
           " ([K,N] in the model; pass it as [N,K], transposed once at load)";
  }
  op.note = op.note.empty() ? text : text + "; " + op.note;
}

ordered_json pair_json(const int v[2]) {
  if (v[0] == v[1]) return v[0];
  return ordered_json::array({v[0], v[1]});
}

// The op as the workload file writes it, without name, weight and note (the merge key).
ordered_json op_body(const ImportedOp& op, const std::map<std::string, std::string>& renames) {
  ordered_json o;
  o["op"] = to_string(op.kind);
  o["dtype"] = to_string(op.dtype);
  if (op.kind == OpKind::kConv2d) o["layout"] = "NHWC";
  for (const std::string& d : dim_names(op.kind)) o[d] = dim_json(op.dims.at(d), renames);
  if (op.kind == OpKind::kDense && op.weight_layout != WeightLayout::kNK)
    o["weight_layout"] = to_string(op.weight_layout);
  if (op.kind == OpKind::kBatchMatmul) {
    if (op.transpose_a) o["transpose_a"] = true;
    if (op.transpose_b) o["transpose_b"] = true;
  }
  if (op.kind == OpKind::kConv2d) {
    o["stride"] = pair_json(op.stride);
    o["pad"] = pair_json(op.pad);
    o["dilation"] = pair_json(op.dilation);
  }
  if (op.epilogue != Epilogue::kNone) o["epilogue"] = to_string(op.epilogue);
  return o;
}

int64_t parse_int(const std::string& text, const std::string& flag) {
  size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size())
    throw UserError(flag + ": '" + text + "' is not an integer");
  return v;
}

}  // namespace

DynamicRange parse_dynamic(const std::string& text) {
  const std::string flag = "--dynamic " + text;
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw UserError(flag + ": expected NAME=MIN:MAX[:STEP] or NAME=V1,V2,...");
  DynamicRange r;
  r.name = text.substr(0, eq);
  const std::string spec = text.substr(eq + 1);
  if (spec.find(':') != std::string::npos) {
    std::vector<std::string> parts;
    size_t start = 0;
    for (size_t i = 0; i <= spec.size(); ++i)
      if (i == spec.size() || spec[i] == ':') {
        parts.push_back(spec.substr(start, i - start));
        start = i + 1;
      }
    if (parts.size() < 2 || parts.size() > 3)
      throw UserError(flag + ": expected NAME=MIN:MAX[:STEP]");
    r.min = parse_int(parts[0], flag);
    r.max = parse_int(parts[1], flag);
    if (parts.size() == 3) r.step = parse_int(parts[2], flag);
    if (r.min < 1) throw UserError(flag + ": MIN must be at least 1");
    if (r.max < r.min) throw UserError(flag + ": MAX is below MIN");
    if (r.step < 1) throw UserError(flag + ": STEP must be at least 1");
  } else {
    size_t start = 0;
    for (size_t i = 0; i <= spec.size(); ++i)
      if (i == spec.size() || spec[i] == ',') {
        const int64_t v = parse_int(spec.substr(start, i - start), flag);
        if (v < 1) throw UserError(flag + ": values must be at least 1");
        r.values.push_back(v);
        start = i + 1;
      }
    std::sort(r.values.begin(), r.values.end());
    r.values.erase(std::unique(r.values.begin(), r.values.end()), r.values.end());
    r.min = r.values.front();
    r.max = r.values.back();
  }
  return r;
}

ImportReport build_workload(const MatchResult& found, const BuildOptions& options,
                            const std::string& model_path) {
  ImportReport report;
  report.other_op_types = found.other_op_types;
  report.not_covered = found.gemms_not_covered;

  std::map<std::string, const DynamicRange*> ranges;
  for (const DynamicRange& r : options.dynamic) ranges[r.name] = &r;

  // Ops whose dimensions a workload can write (a term multiplies at most two variables).
  std::vector<ImportedOp> ops;
  std::set<std::string> used_symbols;
  for (const ImportedOp& op : found.ops) {
    std::string bad;
    for (const auto& [dim, value] : op.dims)
      if (value.degree() > 2) bad = dim + " = " + value.to_string();
    if (!bad.empty()) {
      report.not_covered.push_back({op.node_name, op.op_type,
                                    "dimension " + bad +
                                        " multiplies three or more shape variables; a workload "
                                        "term multiplies at most two",
                                    op.flops});
      continue;
    }
    for (const auto& [dim, value] : op.dims)
      for (const std::string& s : value.symbols()) used_symbols.insert(s);
    ops.push_back(op);
    settle_weight_layout(ops.back(), options.weight_passing);
  }
  if (ops.empty()) {
    std::string why = found.gemms_not_covered.empty()
                          ? "the model has no MatMul, Gemm or Conv"
                          : std::to_string(report.not_covered.size()) +
                                " MatMul/Gemm/Conv node(s), none of which maps (the first, " +
                                report.not_covered[0].node_name + ": " +
                                report.not_covered[0].reason + ")";
    throw UserError(model_path + ": no operator dietcode compiles: " + why);
  }

  // Every symbol an op uses needs a range; every range must name a symbol.
  std::vector<std::string> missing;
  for (const std::string& s : used_symbols)
    if (!ranges.count(s)) missing.push_back(s);
  if (!missing.empty()) {
    std::string names, flags;
    for (const std::string& s : missing) {
      names += (names.empty() ? "'" : ", '") + s + "'";
      flags += " --dynamic " + s + "=MIN:MAX";
    }
    throw UserError(model_path + ": symbolic dimension" + (missing.size() > 1 ? "s " : " ") +
                    names + (missing.size() > 1 ? " have" : " has") + " no range; add" + flags);
  }
  for (const DynamicRange& r : options.dynamic)
    if (!used_symbols.count(r.name)) {
      std::string known;
      for (const std::string& s : used_symbols) known += (known.empty() ? "" : ", ") + s;
      throw UserError("--dynamic " + r.name + ": no operator dietcode compiles uses a symbolic "
                      "dimension '" + r.name + "'" +
                      (known.empty() ? " (they have none)" : " (they use: " + known + ")"));
    }
  for (const auto& [name, w] : options.weights)
    if (!ranges.count(name))
      throw UserError("--weights " + name + ": there is no --dynamic " + name);

  std::map<std::string, std::string> renames;
  std::set<std::string> var_names;
  for (const std::string& s : used_symbols) {
    std::string v = var_name(s);
    while (var_names.count(v)) v += "_";
    var_names.insert(v);
    renames[s] = v;
    report.maxima[s] = ranges.at(s)->max;
  }

  // Merge identical ops (the same body); the first node names the op.
  std::vector<std::pair<ordered_json, size_t>> bodies;  // body -> index into report.ops
  std::set<std::string> names;
  int ordinal = 0;
  for (const ImportedOp& op : ops) {
    ++ordinal;
    ordered_json body = op_body(op, renames);
    auto it = std::find_if(bodies.begin(), bodies.end(),
                           [&](const auto& b) { return b.first == body; });
    if (it != bodies.end()) {
      report.ops[it->second].nodes.push_back(op.node_name);
      continue;
    }
    std::string name = op_name_from(op.node_name, op.op_type, ordinal), unique = name;
    for (int k = 2; names.count(unique); ++k) unique = name + "_" + std::to_string(k);
    names.insert(unique);
    bodies.emplace_back(body, report.ops.size());
    report.ops.push_back({unique, op, {op.node_name}});
  }

  // The file.
  ordered_json w;
  w["name"] = options.name;
  ordered_json vars = ordered_json::object();
  for (const std::string& s : used_symbols) {
    const DynamicRange& r = *ranges.at(s);
    ordered_json v;
    if (!r.values.empty()) {
      v["values"] = r.values;
    } else {
      v["min"] = r.min;
      v["max"] = r.max;
      if (r.step != 1) v["step"] = r.step;
    }
    auto weights = options.weights.find(s);
    if (weights != options.weights.end()) v["weights"] = weights->second;
    vars[renames.at(s)] = v;
  }
  w["shape_vars"] = vars;
  w["ops"] = ordered_json::array();
  for (const MergedOp& m : report.ops) {
    ordered_json o;
    o["name"] = m.name;
    const ordered_json body = op_body(m.op, renames);
    for (const auto& [key, value] : body.items()) o[key] = value;
    o["weight"] = int64_t(m.nodes.size());
    std::string note = m.op.note;
    if (m.nodes.size() > 1)
      note += std::string(note.empty() ? "" : "; ") + "runs " + std::to_string(m.nodes.size()) +
              " times in the model (" + m.nodes.front() + ", ...)";
    if (!note.empty()) o["note"] = note;
    w["ops"].push_back(o);
  }
  report.workload = w;

  // FLOPs at the ranges' maxima.
  for (const MergedOp& m : report.ops)
    report.covered_flops += double(m.op.flops.evaluate(report.maxima)) * double(m.nodes.size());
  report.total_flops = report.covered_flops;
  for (const NotCovered& n : report.not_covered) {
    bool known = bool(n.flops);
    if (known)
      for (const std::string& s : n.flops->symbols())
        if (!report.maxima.count(s)) known = false;
    if (known)
      report.total_flops += double(n.flops->evaluate(report.maxima));
    else
      ++report.unknown_flop_nodes;
  }
  return report;
}

namespace {

std::string at_maxima(const ImportReport& r) {
  std::string s;
  for (const auto& [sym, max] : r.maxima) s += (s.empty() ? "" : ", ") + sym + "=" + std::to_string(max);
  return s.empty() ? "" : " at " + s;
}

std::string percent(double part, double whole) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", whole > 0 ? 100.0 * part / whole : 0.0);
  return buf;
}

std::string dims_text(const ordered_json& op) {
  std::string s;
  for (const std::string& d : dim_names(op["op"] == "dense"          ? OpKind::kDense
                                        : op["op"] == "batch_matmul" ? OpKind::kBatchMatmul
                                                                     : OpKind::kConv2d)) {
    const auto& v = op[d];
    s += (s.empty() ? "" : " ") + d + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
  }
  if (op.contains("weight_layout")) s += " weight_layout=" + op["weight_layout"].get<std::string>();
  return s;
}

}  // namespace

std::string summary_text(const ImportReport& r) {
  size_t nodes = 0;
  for (const MergedOp& m : r.ops) nodes += m.nodes.size();
  std::string out = "ops found: " + std::to_string(nodes) + " node(s) -> " +
                    std::to_string(r.ops.size()) + " workload op(s) after merging identical ones\n";
  for (size_t i = 0; i < r.ops.size(); ++i) {
    const ordered_json& o = r.workload["ops"][i];
    std::string epi = o.contains("epilogue") ? " " + o["epilogue"].get<std::string>() : "";
    std::string folded;
    for (const std::string& f : r.ops[i].op.folded) folded += (folded.empty() ? "" : " + ") + f;
    out += "  " + r.ops[i].name + ": " + o["op"].get<std::string>() + " " + dims_text(o) + epi +
           " x" + std::to_string(r.ops[i].nodes.size()) +
           (folded.empty() ? "" : "  (folded: " + folded + ")") + "\n";
  }
  for (size_t i = 0; i < r.ops.size(); ++i)
    if (!r.ops[i].op.note.empty()) out += "  note, " + r.ops[i].name + ": " + r.ops[i].op.note + "\n";
  out += "coverage: " + percent(r.covered_flops, r.total_flops) +
         " of the model's matrix-product and convolution FLOPs" + at_maxima(r);
  if (r.unknown_flop_nodes)
    out += " (" + std::to_string(r.unknown_flop_nodes) + " node(s) of unknown size not counted)";
  out += "\n";
  if (!r.not_covered.empty()) {
    out += "not covered: " + std::to_string(r.not_covered.size()) + " node(s)\n";
    for (const NotCovered& n : r.not_covered)
      out += "  " + n.op_type + " " + n.node_name + ": " + n.reason + "\n";
  }
  if (!r.other_op_types.empty()) {
    out += "other operators (left to the framework):";
    for (const auto& [type, count] : r.other_op_types)
      out += " " + type + (count > 1 ? " x" + std::to_string(count) : "");
    out += "\n";
  }
  return out;
}

ordered_json summary_json(const ImportReport& r) {
  ordered_json j;
  j["ops"] = ordered_json::array();
  for (size_t i = 0; i < r.ops.size(); ++i) {
    ordered_json o = r.workload["ops"][i];
    o["nodes"] = r.ops[i].nodes;
    o["folded"] = r.ops[i].op.folded;
    o["flops_at_max"] = double(r.ops[i].op.flops.evaluate(r.maxima)) * double(r.ops[i].nodes.size());
    j["ops"].push_back(o);
  }
  j["not_covered"] = ordered_json::array();
  for (const NotCovered& n : r.not_covered)
    j["not_covered"].push_back({{"node", n.node_name}, {"op_type", n.op_type}, {"reason", n.reason}});
  j["other_operators"] = r.other_op_types;
  j["maxima"] = r.maxima;
  j["covered_flops"] = r.covered_flops;
  j["total_flops"] = r.total_flops;
  j["coverage"] = r.total_flops > 0 ? r.covered_flops / r.total_flops : 0.0;
  j["nodes_of_unknown_size"] = r.unknown_flop_nodes;
  j["workload"] = r.workload;
  return j;
}

}  // namespace dietcode::onnx_import

#include "bench/bench_pack.h"

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "workload/enums.h"
#include "workload/json_fields.h"
#include "workload/names.h"
#include "workload/op_layout.h"

namespace dietcode {

namespace {

// A range of a million values is already past any model; it bounds a typo's cost.
constexpr int64_t kMaxValues = 1'000'000;

template <typename Enum>
Enum parse_enum(const JsonFields& fields, const ordered_json& value, const JsonPath& path,
                const std::vector<std::pair<Enum, const char*>>& names, const char* what) {
  const std::string text = fields.get_string(value, path);
  std::vector<std::string> known;
  for (const auto& [e, name] : names) {
    if (text == name) return e;
    known.push_back(name);
  }
  fields.fail(path, std::string("unknown ") + what + " " + quote(text) + did_you_mean(text, known));
}

ShapeVar parse_var(const JsonFields& fields, const std::string& name, const ordered_json& value,
                   const JsonPath& path) {
  fields.expect_object(value, path);
  ShapeVar var;
  var.name = name;
  if (const ordered_json* values = JsonFields::find(value, "values")) {
    if (!values->is_array() || values->empty())
      fields.fail(path.key("values"), "expected a non-empty array of positive integers");
    for (size_t i = 0; i < values->size(); ++i)
      var.values.push_back(fields.get_int((*values)[i], path.key("values").index(i), 1, INT64_MAX));
    std::sort(var.values.begin(), var.values.end());
    var.values.erase(std::unique(var.values.begin(), var.values.end()), var.values.end());
  } else {
    const int64_t lo =
        fields.get_int(fields.require(value, path, "min"), path.key("min"), 1, INT64_MAX);
    const int64_t hi =
        fields.get_int(fields.require(value, path, "max"), path.key("max"), lo, INT64_MAX);
    if (hi - lo >= kMaxValues)
      fields.fail(path, "a range of more than " + std::to_string(kMaxValues) + " values");
    for (int64_t v = lo; v <= hi; ++v) var.values.push_back(v);
  }
  var.weights.assign(var.values.size(), 1.0 / double(var.values.size()));
  return var;
}

std::vector<ShapeVar> parse_vars(const JsonFields& fields, const ordered_json& root) {
  const JsonPath path = JsonPath().key("shape_vars");
  const ordered_json& list = fields.require(root, JsonPath(), "shape_vars");
  std::vector<ShapeVar> vars;
  if (list.is_array()) {  // the pack generator's form: [{"name": "T", "min": 1, "max": 128}]
    for (size_t i = 0; i < list.size(); ++i) {
      const JsonPath at = path.index(i);
      fields.expect_object(list[i], at);
      const std::string name =
          fields.get_string(fields.require(list[i], at, "name"), at.key("name"));
      vars.push_back(parse_var(fields, name, list[i], at));
    }
  } else if (list.is_object()) {  // the workload's form: {"T": {"min": 1, "max": 128}}
    for (const auto& item : list.items())
      vars.push_back(parse_var(fields, item.key(), item.value(), path.key(item.key())));
  } else {
    fields.fail(path, "expected an array or an object, got " + describe_json(list));
  }
  return vars;
}

std::vector<std::string> string_list(const JsonFields& fields, const ordered_json& value,
                                     const JsonPath& path) {
  if (!value.is_array())
    fields.fail(path, "expected an array of strings, got " + describe_json(value));
  std::vector<std::string> out;
  for (size_t i = 0; i < value.size(); ++i)
    out.push_back(fields.get_string(value[i], path.index(i)));
  return out;
}

std::string join(const std::vector<std::string>& words, const char* separator = ", ") {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : separator) + w;
  return out;
}

void parse_pair(const JsonFields& fields, const ordered_json& op, const JsonPath& path,
                const char* key, int min, int out[2]) {
  const ordered_json* value = JsonFields::find(op, key);
  if (!value) return;
  if (!value->is_array() || value->size() != 2)
    fields.fail(path.key(key), "expected [h, w], got " + describe_json(*value));
  for (size_t i = 0; i < 2; ++i)
    out[i] = int(fields.get_int((*value)[i], path.key(key).index(i), min, 1 << 16));
}

// The manifest's own description of an op's dimensions.
void parse_dims(const JsonFields& fields, const ordered_json& dims, const JsonPath& path,
                OpSpec& spec) {
  fields.expect_object(dims, path);
  for (const std::string& name : dim_names(spec.kind)) {
    const ordered_json& value = fields.require(dims, path, name);
    Expr expr;
    if (value.is_number_integer()) {
      expr = Expr::constant(fields.get_int(value, path.key(name), 1, INT64_MAX));
    } else {
      const std::string text = fields.get_string(value, path.key(name));
      try {
        expr = Expr::parse(text);
      } catch (const UserError& e) {  // Expr's messages carry no location; add it
        fields.fail(path.key(name), e.what());
      }
    }
    for (const std::string& var : expr.variables())
      if (std::find(spec.vars.begin(), spec.vars.end(), var) == spec.vars.end())
        fields.fail(path.key(name), "uses " + quote(var) + ", which is not among the op's vars [" +
                                        join(spec.vars) + "]");
    spec.dims[name] = expr;
  }
}

void parse_instance_weights(const JsonFields& fields, const ordered_json& op, const JsonPath& path,
                            BenchOp& out) {
  const ordered_json* table = JsonFields::find(op, "instances");
  if (!table || !table->is_object()) return;
  const ordered_json* values = JsonFields::find(*table, "values");
  const ordered_json* weights = JsonFields::find(*table, "weight");
  if (!values || !weights) return;
  const JsonPath at = path.key("instances");
  if (!values->is_array() || !weights->is_array() || values->size() != weights->size())
    fields.fail(at, "\"values\" and \"weight\" must be arrays of the same length");
  for (size_t i = 0; i < values->size(); ++i) {
    const ordered_json& v = (*values)[i];
    if (!v.is_array() || v.size() != out.spec.vars.size())
      fields.fail(at.key("values").index(i),
                  "expected " + std::to_string(out.spec.vars.size()) + " shape values");
    std::vector<int64_t> key;
    for (size_t j = 0; j < v.size(); ++j)
      key.push_back(fields.get_int(v[j], at.key("values").index(i).index(j), 1, INT64_MAX));
    out.instance_weights[key] =
        fields.get_number((*weights)[i], at.key("weight").index(i), 0, false, 1e300);
  }
}

BenchOp parse_op(const JsonFields& fields, const ordered_json& value, const JsonPath& path,
                 const std::vector<ShapeVar>& vars) {
  fields.expect_object(value, path);
  BenchOp op;
  OpSpec& spec = op.spec;
  spec.name = fields.get_string(fields.require(value, path, "name"), path.key("name"));
  spec.kind = parse_enum(fields, fields.require(value, path, "op"), path.key("op"), op_kind_names(),
                         "op kind");
  spec.dtype = parse_enum(fields, fields.require(value, path, "dtype"), path.key("dtype"),
                          dtype_names(), "dtype");
  if (const ordered_json* e = JsonFields::find(value, "epilogue"))
    spec.epilogue = parse_enum(fields, *e, path.key("epilogue"), epilogue_names(), "epilogue");
  if (const ordered_json* w = JsonFields::find(value, "weight"))
    spec.weight = fields.get_number(*w, path.key("weight"), 0, true, 1e6);
  if (const ordered_json* t = JsonFields::find(value, "transpose_a"))
    spec.transpose_a = fields.get_bool(*t, path.key("transpose_a"));
  if (const ordered_json* t = JsonFields::find(value, "transpose_b"))
    spec.transpose_b = fields.get_bool(*t, path.key("transpose_b"));
  parse_pair(fields, value, path, "stride", 1, spec.stride);
  parse_pair(fields, value, path, "pad", 0, spec.pad);
  parse_pair(fields, value, path, "dilation", 1, spec.dilation);

  op.args = string_list(fields, fields.require(value, path, "args"), path.key("args"));
  const std::vector<std::string> expected = spec.arg_names();
  if (op.args != expected)
    fields.fail(path.key("args"), "expected [" + join(expected) + "] for a " +
                                      to_string(spec.kind) + " op with epilogue " +
                                      to_string(spec.epilogue) + ", got [" + join(op.args) + "]");

  spec.vars = string_list(fields, fields.require(value, path, "vars"), path.key("vars"));
  for (size_t i = 0; i < spec.vars.size(); ++i)
    if (std::none_of(vars.begin(), vars.end(),
                     [&](const ShapeVar& v) { return v.name == spec.vars[i]; }))
      fields.fail(path.key("vars").index(i),
                  "names " + quote(spec.vars[i]) + ", which is not in shape_vars");
  if (const ordered_json* dims = JsonFields::find(value, "dims"))
    parse_dims(fields, *dims, path.key("dims"), spec);
  parse_instance_weights(fields, value, path, op);
  return op;
}

// With a workload, its op replaces the manifest's description, which it must match.
void take_from_workload(const JsonFields& fields, const JsonPath& path, const Workload& workload,
                        BenchOp& op) {
  const OpSpec* w = workload.find_op(op.spec.name);
  if (!w)
    throw UserError(workload.source + ": has no op " + quote(op.spec.name) + ", which " +
                    fields.source() + " lists at " + path.str());
  auto differ = [&](const char* key, const std::string& pack, const std::string& theirs) {
    fields.fail(path.key(key), "the pack says " + pack + " but " + workload.source + " says " +
                                   theirs + "; bench the pack with the workload it was built from");
  };
  if (w->kind != op.spec.kind) differ("op", to_string(op.spec.kind), to_string(w->kind));
  if (w->dtype != op.spec.dtype) differ("dtype", to_string(op.spec.dtype), to_string(w->dtype));
  if (w->epilogue != op.spec.epilogue)
    differ("epilogue", to_string(op.spec.epilogue), to_string(w->epilogue));
  if (w->vars != op.spec.vars)
    differ("vars", "[" + join(op.spec.vars) + "]", "[" + join(w->vars) + "]");
  // The pack's static dimensions are compiled into its kernels: other sizes would make it
  // read and write past the buffers bench allocates.
  for (const auto& [name, expr] : op.spec.dims) {
    const auto theirs = w->dims.find(name);
    const std::string text = theirs == w->dims.end() ? "nothing" : theirs->second.to_string();
    if (expr.to_string() != text)
      fields.fail(path.key("dims").key(name),
                  "the pack says " + expr.to_string() + " but " + workload.source + " says " +
                      text + "; bench the pack with the workload it was built from");
  }
  auto pair_text = [](const int v[2]) {
    return "[" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + "]";
  };
  auto flag_text = [](bool transposed) { return transposed ? "true" : "false"; };
  if (w->transpose_a != op.spec.transpose_a)
    differ("transpose_a", flag_text(op.spec.transpose_a), flag_text(w->transpose_a));
  if (w->transpose_b != op.spec.transpose_b)
    differ("transpose_b", flag_text(op.spec.transpose_b), flag_text(w->transpose_b));
  if (op.spec.kind == OpKind::kConv2d) {
    if (pair_text(w->stride) != pair_text(op.spec.stride))
      differ("stride", pair_text(op.spec.stride), pair_text(w->stride));
    if (pair_text(w->pad) != pair_text(op.spec.pad))
      differ("pad", pair_text(op.spec.pad), pair_text(w->pad));
    if (pair_text(w->dilation) != pair_text(op.spec.dilation))
      differ("dilation", pair_text(op.spec.dilation), pair_text(w->dilation));
  }
  op.spec = *w;
}

}  // namespace

const ShapeVar* BenchPack::find_var(const std::string& var_name) const {
  for (const ShapeVar& v : vars)
    if (v.name == var_name) return &v;
  return nullptr;
}

BenchPack parse_bench_pack(const std::string& manifest_text, const std::string& file,
                           const Workload* workload) {
  const JsonFields fields(file + ": manifest");
  ordered_json root;
  try {
    root = ordered_json::parse(manifest_text);
  } catch (const nlohmann::json::parse_error& e) {
    throw UserError(file + ": manifest is not valid JSON: " + e.what());
  }
  fields.expect_object(root, JsonPath());
  BenchPack pack;
  pack.file = file;
  pack.name = fields.get_string(fields.require(root, JsonPath(), "name"), JsonPath().key("name"));
  if (const ordered_json* archs = JsonFields::find(root, "archs"))
    pack.archs = string_list(fields, *archs, JsonPath().key("archs"));
  pack.vars = parse_vars(fields, root);

  const ordered_json& ops = fields.require(root, JsonPath(), "ops");
  if (!ops.is_array() || ops.empty())
    fields.fail(JsonPath().key("ops"), "expected a non-empty array of ops");
  for (size_t i = 0; i < ops.size(); ++i) {
    const JsonPath path = JsonPath().key("ops").index(i);
    BenchOp op = parse_op(fields, ops[i], path, pack.vars);
    if (workload) {
      take_from_workload(fields, path, *workload, op);
    } else if (op.spec.dims.empty()) {
      fields.fail(path,
                  "has no \"dims\", so bench cannot tell its tensor sizes; pass "
                  "--workload WORKLOAD.json, the workload the pack was built from");
    }
    pack.ops.push_back(std::move(op));
  }
  pack.dims_from = workload ? workload->source : "the pack's manifest";

  // The workload's distribution over each variable's values, where it has one.
  if (workload)
    for (ShapeVar& var : pack.vars)
      if (const ShapeVar* w = workload->find_var(var.name))
        for (size_t i = 0; i < var.values.size(); ++i) {
          auto it = std::find(w->values.begin(), w->values.end(), var.values[i]);
          if (it != w->values.end()) var.weights[i] = w->weights[size_t(it - w->values.begin())];
        }
  return pack;
}

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
  for (const TensorLayout& t : tensor_layouts(op.spec.kind, op.spec.epilogue)) {
    int64_t n = 1;
    for (const std::string& d : t.dims) n *= dims.at(d);
    out.push_back(n);
  }
  return out;
}

}  // namespace dietcode

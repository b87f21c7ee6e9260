#include "bench/bench_pack.h"

#include <algorithm>
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
  // Absent in packs built before dense had a weight layout: those all took W as [N,K].
  if (const ordered_json* t = JsonFields::find(value, "weight_layout"))
    spec.weight_layout =
        parse_enum(fields, *t, path.key("weight_layout"), weight_layout_names(), "weight layout");
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
  if (w->weight_layout != op.spec.weight_layout)
    differ("weight_layout", to_string(op.spec.weight_layout), to_string(w->weight_layout));
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
  if (const ordered_json* target = JsonFields::find(root, "target")) {
    pack.target = fields.get_string(*target, JsonPath().key("target"));
    if (pack.target != "cuda" && pack.target != "cpu")
      fields.fail(JsonPath().key("target"),
                  "expected \"cuda\" or \"cpu\", got \"" + pack.target + "\"");
  }
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

}  // namespace dietcode

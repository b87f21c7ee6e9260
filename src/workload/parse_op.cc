// ops[i]: one operator, its dimensions and its kind-specific options.
#include <algorithm>

#include "common/error.h"
#include "workload/enums.h"
#include "workload/names.h"
#include "workload/op_layout.h"
#include "workload/parse_internal.h"

namespace dietcode {

namespace {

// "note": free text for people (dietcode import says there how the model's tensors map onto
// the op's arguments); the pipeline keeps it and reads nothing from it.
const std::vector<std::string> kCommonKeys = {"name", "op", "dtype", "epilogue", "weight", "note"};

std::vector<std::string> kind_keys(OpKind kind) {
  std::vector<std::string> keys = dim_names(kind);
  if (kind == OpKind::kDense) keys.push_back("weight_layout");
  if (kind == OpKind::kBatchMatmul) keys.insert(keys.end(), {"transpose_a", "transpose_b"});
  if (kind == OpKind::kConv2d) keys.insert(keys.end(), {"layout", "stride", "pad", "dilation"});
  return keys;
}

// Every key any op may have, so a typo is caught (and a suggestion made) before the op's
// kind is known, and a key of another kind gets its own message.
std::vector<std::string> all_op_keys() {
  std::vector<std::string> keys = kCommonKeys;
  for (const auto& [kind, name] : op_kind_names())
    for (const auto& key : kind_keys(kind))
      if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
  return keys;
}

template <typename Enum>
Enum parse_enum(const JsonFields& fields, const ordered_json& value, const JsonPath& path,
                const std::vector<std::pair<Enum, const char*>>& names, const std::string& what) {
  std::string text = fields.get_string(value, path);
  std::vector<std::string> spellings;
  for (const auto& [e, name] : names) {
    if (text == name) return e;
    spellings.push_back(name);
  }
  fields.fail(path, "unknown " + what + " " + quote(text) + did_you_mean(text, spellings) +
                        "; expected " + join_alternatives(spellings));
}

Expr parse_dim(const JsonFields& fields, const ordered_json& value, const JsonPath& path,
               const std::vector<ShapeVar>& vars) {
  const std::string expected = "expected a positive integer or an expression of shape variables";
  if (value.is_number_unsigned() || value.is_number_integer()) {
    // Non-negative integers parse as unsigned; negative ones as signed.
    bool below_one =
        value.is_number_unsigned() ? value.get<uint64_t>() == 0 : value.get<int64_t>() < 1;
    if (below_one) fields.fail(path, expected + ", got " + value.dump());
    return Expr::constant(fields.get_int(value, path, 1, INT64_MAX));
  }
  if (!value.is_string()) fields.fail(path, expected + ", got " + describe_json(value));
  Expr expr;
  try {
    expr = Expr::parse(value.get<std::string>());
  } catch (const UserError& e) {
    fields.fail(path, e.what());
  }
  std::vector<std::string> declared;
  for (const auto& var : vars) declared.push_back(var.name);
  for (const auto& name : expr.variables()) {
    if (std::find(declared.begin(), declared.end(), name) != declared.end()) continue;
    std::string hint = did_you_mean(name, declared);
    if (hint.empty())
      hint = declared.empty() ? " (no shape variables are declared)"
                              : " (declared: " + join_alternatives(declared, "and") + ")";
    fields.fail(path, "unknown shape variable " + quote(name) + hint);
  }
  return expr;
}

// stride, pad, dilation: one integer for both axes or [h, w].
void parse_pair(const JsonFields& fields, const ordered_json& op, const JsonPath& parent,
                const std::string& key, int64_t min, int out[2]) {
  const ordered_json* value = JsonFields::find(op, key);
  if (!value) return;
  JsonPath path = parent.key(key);
  if (value->is_array()) {
    if (value->size() != 2)
      fields.fail(path, "expected a list [h, w] of two integers, got " +
                            std::to_string(value->size()) +
                            (value->size() == 1 ? " element" : " elements"));
    for (size_t i = 0; i < 2; ++i)
      out[i] = static_cast<int>(fields.get_int((*value)[i], path.index(i), min, kMaxConvParam));
    return;
  }
  if (!value->is_number_integer() && !value->is_number_unsigned())
    fields.fail(path, "expected an integer or a list [h, w], got " + describe_json(*value));
  out[0] = out[1] = static_cast<int>(fields.get_int(*value, path, min, kMaxConvParam));
}

}  // namespace

OpSpec parse_op(const JsonFields& fields, const ordered_json& value, const JsonPath& path,
                const std::vector<ShapeVar>& vars) {
  fields.expect_object(value, path);
  fields.reject_unknown_keys(value, path, all_op_keys());
  OpSpec op;
  op.name = check_name(fields, fields.require(value, path, "name"), path.key("name"), "op name");
  op.kind =
      parse_enum(fields, fields.require(value, path, "op"), path.key("op"), op_kind_names(), "op");
  std::vector<std::string> allowed = kCommonKeys;
  for (const auto& key : kind_keys(op.kind)) allowed.push_back(key);
  for (const auto& item : value.items())
    if (std::find(allowed.begin(), allowed.end(), item.key()) == allowed.end())
      fields.fail(
          path, "key " + quote(item.key()) + " does not apply to a " + to_string(op.kind) + " op");

  if (const ordered_json* v = JsonFields::find(value, "dtype"))
    op.dtype = parse_enum(fields, *v, path.key("dtype"), dtype_names(), "dtype");
  if (const ordered_json* v = JsonFields::find(value, "epilogue"))
    op.epilogue = parse_enum(fields, *v, path.key("epilogue"), epilogue_names(), "epilogue");
  if (op.kind == OpKind::kBatchMatmul && epilogue_has_bias(op.epilogue))
    fields.fail(path.key("epilogue"),
                "a batch_matmul op has no bias argument; use none, relu or gelu");
  if (const ordered_json* v = JsonFields::find(value, "weight"))
    op.weight = fields.get_number(*v, path.key("weight"), 0, true, kMaxOpWeight);
  if (const ordered_json* v = JsonFields::find(value, "note")) op.note = fields.get_string(*v, path.key("note"));

  for (const auto& dim : dim_names(op.kind))
    op.dims[dim] = parse_dim(fields, fields.require(value, path, dim), path.key(dim), vars);

  if (op.kind == OpKind::kDense)
    if (const ordered_json* v = JsonFields::find(value, "weight_layout"))
      op.weight_layout =
          parse_enum(fields, *v, path.key("weight_layout"), weight_layout_names(), "weight layout");
  if (op.kind == OpKind::kBatchMatmul) {
    if (const ordered_json* v = JsonFields::find(value, "transpose_a"))
      op.transpose_a = fields.get_bool(*v, path.key("transpose_a"));
    if (const ordered_json* v = JsonFields::find(value, "transpose_b"))
      op.transpose_b = fields.get_bool(*v, path.key("transpose_b"));
  }
  if (op.kind == OpKind::kConv2d) {
    const ordered_json* layout = JsonFields::find(value, "layout");
    // Required rather than defaulted: frameworks default to NCHW, and silently reading an
    // NCHW model as NHWC would compute the wrong thing.
    if (!layout) fields.fail(path, "missing key \"layout\" (only \"NHWC\" is supported)");
    std::string text = fields.get_string(*layout, path.key("layout"));
    if (text != "NHWC")
      fields.fail(path.key("layout"), "only \"NHWC\" is supported, got " + quote(text));
    parse_pair(fields, value, path, "stride", 1, op.stride);
    parse_pair(fields, value, path, "pad", 0, op.pad);
    parse_pair(fields, value, path, "dilation", 1, op.dilation);
  }

  for (const auto& var : vars) {
    bool used = false;
    for (const auto& [dim, expr] : op.dims) {
      auto names = expr.variables();
      used = used || std::find(names.begin(), names.end(), var.name) != names.end();
    }
    if (used) op.vars.push_back(var.name);
  }
  // The pack's typed wrapper takes the tensors and the shape variables as parameters.
  for (const auto& arg : op.arg_names())
    if (std::find(op.vars.begin(), op.vars.end(), arg) != op.vars.end())
      fields.fail(path, "shape variable " + quote(arg) + " has the same name as the op's " +
                            "argument " + arg + "; rename the variable");
  return op;
}

}  // namespace dietcode

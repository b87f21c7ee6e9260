// The workload file (SPEC §3) from text to a checked Workload. The order of checks is the
// order of the file — name, shape_vars, then each op with all its instances — so the first
// error reported is the first one a reader would meet.
#include <algorithm>

#include "common/error.h"
#include "workload/json_reader.h"
#include "workload/names.h"
#include "workload/parse_internal.h"

namespace dietcode {

std::string check_name(const JsonFields& fields, const ordered_json& value, const JsonPath& path,
                       const std::string& what) {
  std::string name = fields.get_string(value, path);
  if (!is_identifier(name) || name.size() > kMaxNameLength)
    fields.fail(path, quote(name) + " is not a valid " + what + ": use up to " +
                          std::to_string(kMaxNameLength) +
                          " letters, digits and '_', not starting with a digit");
  return name;
}

Workload parse_workload(const std::string& text, const std::string& source_name) {
  if (std::all_of(text.begin(), text.end(),
                  [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }))
    throw UserError(source_name + ": empty file (expected a JSON object)");
  ordered_json doc = parse_json_strict(text, source_name);
  JsonFields fields(source_name);
  const JsonPath root;
  if (!doc.is_object())
    fields.fail(root, "expected a JSON object at the top level, got " + describe_json(doc));
  fields.reject_unknown_keys(doc, root, {"name", "shape_vars", "ops"});

  Workload workload;
  workload.source = source_name;
  workload.name =
      check_name(fields, fields.require(doc, root, "name"), root.key("name"), "workload name");

  // Optional: a workload of static shapes has no variables and one instance per op.
  if (const ordered_json* vars = JsonFields::find(doc, "shape_vars")) {
    JsonPath path = root.key("shape_vars");
    fields.expect_object(*vars, path);
    for (const auto& item : vars->items())
      workload.vars.push_back(parse_shape_var(fields, item.key(), item.value(), path));
  }

  const ordered_json& ops = fields.require(doc, root, "ops");
  JsonPath ops_path = root.key("ops");
  if (!ops.is_array()) fields.fail(ops_path, "expected a list of ops, got " + describe_json(ops));
  if (ops.empty()) fields.fail(ops_path, "expected at least one op");
  for (size_t i = 0; i < ops.size(); ++i) {
    JsonPath path = ops_path.index(i);
    OpSpec op = parse_op(fields, ops[i], path, workload.vars);
    for (size_t j = 0; j < workload.ops.size(); ++j)
      if (workload.ops[j].name == op.name)
        fields.fail(path.key("name"),
                    quote(op.name) + " is already the name of ops[" + std::to_string(j) + "]");
    check_op_instances(fields, path, op, workload.vars);
    workload.ops.push_back(std::move(op));
  }
  return workload;
}

Workload load_workload(const std::string& path) {
  return parse_workload(read_text_file(path, kMaxWorkloadBytes), path);
}

}  // namespace dietcode

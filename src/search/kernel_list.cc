#include "search/kernel_list.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <set>

#include "common/error.h"
#include "search/tuning_log.h"
#include "space/template_space.h"
#include "workload/json_fields.h"
#include "workload/json_reader.h"
#include "workload/names.h"

namespace dietcode {

namespace {

// A list names a handful of kernels; a log's form has no such limit (read_tuning_log's).
constexpr size_t kMaxKernelListBytes = 16u << 20;

const char* const kKernelShape = "{\"template\": NAME, \"params\": {TUNABLE: INTEGER, ...}}";


const TemplateSpace* find_template(const std::string& name) {
  for (const TemplateSpace* space : all_template_spaces())
    if (space->tmpl == name) return space;
  return nullptr;
}

// One kernel: {"template": ..., "params": {...}} at `path`, the tunables it leaves out at the
// template's default.
MicroKernel parse_kernel(const JsonFields& fields, const ordered_json& value,
                         const JsonPath& path) {
  if (!value.is_object())
    fields.fail(path,
                fmt::format("expected a kernel {}, got {}", kKernelShape, describe_json(value)));
  fields.reject_unknown_keys(value, path, {"template", "params"});
  const JsonPath template_path = path.key("template");
  const std::string name =
      fields.get_string(fields.require(value, path, "template"), template_path);
  const TemplateSpace* space = find_template(name);
  if (!space) {
    std::vector<std::string> known;
    for (const TemplateSpace* t : all_template_spaces()) known.push_back(t->tmpl);
    fields.fail(template_path,
                fmt::format("unknown template {}{}; the templates are {}", quote(name),
                            did_you_mean(name, known), join_alternatives(known, "and")));
  }
  MicroKernel mk = space->defaults();
  if (const ordered_json* params = JsonFields::find(value, "params")) {
    const JsonPath params_path = path.key("params");
    fields.expect_object(*params, params_path);
    for (const auto& item : params->items()) {
      const JsonPath tunable_path = params_path.key(item.key());
      if (!space->find(item.key())) {
        std::vector<std::string> known;
        for (const Tunable& t : space->tunables) known.push_back(t.name);
        fields.fail(tunable_path, fmt::format("{} has no tunable {}{}; its tunables are {}", name,
                                              quote(item.key()), did_you_mean(item.key(), known),
                                              join_alternatives(known, "and")));
      }
      mk.params[item.key()] = int(fields.get_int(item.value(), tunable_path, INT_MIN, INT_MAX));
    }
  }
  return mk;
}

// Appends `mk` unless a kernel with its key is there already.
void add_once(KernelList& list, std::set<std::string>& keys, MicroKernel mk, std::string origin) {
  if (keys.insert(mk.key()).second) list.kernels.push_back({std::move(mk), std::move(origin)});
}

KernelList read_log_form(const std::string& path) {
  KernelList list;
  TuningLog log = read_tuning_log(path, list.notes, /*must_exist=*/true);
  std::set<std::string> keys;
  for (size_t r = 0; r < log.records.size(); ++r) {
    // The reader checked the record's shape; what this build knows of its kernel is checked
    // here, the same way as the array form's, at the record's own line.
    const std::string origin = fmt::format("{}:{}", path, log.record_lines.at(r));
    const MicroKernel& logged = log.records[r].mk;
    const ordered_json mk = {{"template", logged.tmpl}, {"params", logged.params}};
    add_once(list, keys, parse_kernel(JsonFields(origin), mk, JsonPath().key("mk")), origin);
  }
  if (list.kernels.empty())
    throw UserError(path + ": no measurement records in this tuning log, so no kernels to time");
  return list;
}

}  // namespace

KernelList parse_kernel_list(const std::string& text, const std::string& source) {
  if (std::all_of(text.begin(), text.end(),
                  [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }))
    throw UserError(source + ": empty file (expected a JSON array of kernels)");
  const ordered_json doc = parse_json_strict(text, source);
  const JsonFields fields(source);
  const JsonPath root;
  if (!doc.is_array())
    fields.fail(root, fmt::format("expected an array of kernels [{}, ...], got {} (a tuning log "
                                  "is read as one when its name ends in .jsonl or .jsonl.gz)",
                                  kKernelShape, describe_json(doc)));
  if (doc.empty()) fields.fail(root, "expected at least one kernel, got an empty array");
  KernelList list;
  std::set<std::string> keys;
  for (size_t i = 0; i < doc.size(); ++i) {
    const JsonPath path = root.index(i);
    add_once(list, keys, parse_kernel(fields, doc[i], path), source + path.str());
  }
  return list;
}

KernelList read_kernel_list(const std::string& path) {
  if (is_tuning_log_path(path)) return read_log_form(path);
  return parse_kernel_list(read_text_file(path, kMaxKernelListBytes), path);
}

}  // namespace dietcode

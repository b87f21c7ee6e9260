// shape_vars.NAME: the values a shape variable takes and how much each one matters.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <unordered_map>

#include "workload/names.h"
#include "workload/parse_internal.h"

namespace dietcode {

namespace {

std::vector<int64_t> parse_values(const JsonFields& fields, const ordered_json& object,
                                  const JsonPath& path) {
  const ordered_json& list = *JsonFields::find(object, "values");
  JsonPath list_path = path.key("values");
  if (!list.is_array())
    fields.fail(list_path, "expected a list of positive integers, got " + describe_json(list));
  if (list.empty()) fields.fail(list_path, "expected at least one value");
  if (static_cast<int64_t>(list.size()) > kMaxValuesPerVar)
    fields.fail(list_path, std::to_string(list.size()) + " values; at most " +
                               std::to_string(kMaxValuesPerVar) + " are supported");
  std::vector<int64_t> values;
  for (size_t i = 0; i < list.size(); ++i)
    values.push_back(fields.get_int(list[i], list_path.index(i), 1, INT64_MAX));
  std::vector<int64_t> sorted = values;
  std::sort(sorted.begin(), sorted.end());
  auto dup = std::adjacent_find(sorted.begin(), sorted.end());
  if (dup != sorted.end()) {
    size_t second = 0;
    for (size_t i = 0, seen = 0; i < values.size(); ++i)
      if (values[i] == *dup && ++seen == 2) second = i;
    fields.fail(list_path.index(second), std::to_string(*dup) + " appears twice");
  }
  return values;
}

std::vector<int64_t> parse_range(const JsonFields& fields, const ordered_json& object,
                                 const JsonPath& path) {
  int64_t min = fields.get_int(fields.require(object, path, "min"), path.key("min"), 1, INT64_MAX);
  const ordered_json& max_json = fields.require(object, path, "max");
  int64_t max = fields.get_int(max_json, path.key("max"), 1, INT64_MAX);
  if (max < min)
    fields.fail(path.key("max"),
                "must be at least min (" + std::to_string(min) + "), got " + std::to_string(max));
  int64_t step = 1;
  if (const ordered_json* s = JsonFields::find(object, "step"))
    step = fields.get_int(*s, path.key("step"), 1, INT64_MAX);
  // max - min cannot overflow: both are positive int64.
  int64_t span = max - min;
  if (span % step != 0)
    fields.fail(path.key("step"),
                std::to_string(step) + " does not divide max - min = " + std::to_string(span) +
                    ", so the range would stop at " + std::to_string(max - span % step));
  int64_t count = span / step + 1;
  if (span / step >= kMaxValuesPerVar)
    fields.fail(path, std::to_string(count) + " values; at most " +
                          std::to_string(kMaxValuesPerVar) + " are supported");
  std::vector<int64_t> values(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) values[static_cast<size_t>(i)] = min + i * step;
  return values;
}

// Weights parallel to `values` (as written, before sorting), not yet normalised.
std::vector<double> parse_weights(const JsonFields& fields, const std::string& var,
                                  const ordered_json* weights, const JsonPath& path,
                                  const std::vector<int64_t>& values) {
  if (!weights) return std::vector<double>(values.size(), 1.0);
  const double kNoMax = std::numeric_limits<double>::max();
  if (weights->is_string()) {
    const std::string& text = weights->get_ref<const std::string&>();
    if (text != "uniform")
      fields.fail(path, "expected \"uniform\", a list or an object, got " + quote(text) +
                            did_you_mean(text, {"uniform"}));
    return std::vector<double>(values.size(), 1.0);
  }
  if (weights->is_array()) {
    if (weights->size() != values.size())
      fields.fail(path, "expected " + std::to_string(values.size()) +
                            " weights (one per value), got " + std::to_string(weights->size()));
    std::vector<double> out;
    for (size_t i = 0; i < weights->size(); ++i)
      out.push_back(fields.get_number((*weights)[i], path.index(i), 0, false, kNoMax));
    return out;
  }
  if (weights->is_object()) {
    // Values left out weigh nothing: a histogram of observed shapes lists only what it saw.
    std::vector<double> out(values.size(), 0.0);
    std::unordered_map<std::string, size_t> index_of;
    for (size_t i = 0; i < values.size(); ++i) index_of[std::to_string(values[i])] = i;
    for (const auto& item : weights->items()) {
      auto it = index_of.find(item.key());
      if (it == index_of.end())
        fields.fail(path, quote(item.key()) + " is not one of the values of " + var);
      out[it->second] = fields.get_number(item.value(), path.key(item.key()), 0, false, kNoMax);
    }
    return out;
  }
  fields.fail(path, "expected \"uniform\", a list or an object, got " + describe_json(*weights));
}

}  // namespace

ShapeVar parse_shape_var(const JsonFields& fields, const std::string& name,
                         const ordered_json& value, const JsonPath& parent) {
  if (!is_identifier(name) || name.size() > kMaxNameLength)
    fields.fail(parent, quote(name) +
                            " is not a valid shape variable name: use up to 64 letters, digits "
                            "and '_', not starting with a digit");
  if (is_c_keyword(name) || name == "stream")
    fields.fail(parent,
                quote(name) + " cannot name a shape variable: it is reserved in generated C code");
  JsonPath path = parent.key(name);
  fields.expect_object(value, path);
  fields.reject_unknown_keys(value, path, {"min", "max", "step", "values", "weights"});

  bool has_values = JsonFields::find(value, "values") != nullptr;
  bool has_range = JsonFields::find(value, "min") || JsonFields::find(value, "max") ||
                   JsonFields::find(value, "step");
  if (has_values && has_range)
    fields.fail(path, "give either \"values\" or \"min\"/\"max\" (with \"step\"), not both");
  if (!has_values && !has_range) fields.fail(path, "expected \"min\" and \"max\", or \"values\"");
  std::vector<int64_t> values =
      has_values ? parse_values(fields, value, path) : parse_range(fields, value, path);
  std::vector<double> weights =
      parse_weights(fields, name, JsonFields::find(value, "weights"), path.key("weights"), values);

  double total = 0;
  for (double w : weights) total += w;
  if (total == 0) fields.fail(path.key("weights"), "all weights are zero");
  if (!std::isfinite(total)) fields.fail(path.key("weights"), "the weights add up to infinity");

  // Values listed out of order keep their weights; the variable itself is ascending.
  std::vector<size_t> order(values.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return values[a] < values[b]; });
  ShapeVar var;
  var.name = name;
  for (size_t i : order) {
    var.values.push_back(values[i]);
    var.weights.push_back(weights[i] / total);
  }
  return var;
}

}  // namespace dietcode

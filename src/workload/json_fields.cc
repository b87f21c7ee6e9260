#include "workload/json_fields.h"

#include <cmath>
#include <limits>

#include "common/error.h"
#include "workload/names.h"

namespace dietcode {

std::string describe_json(const ordered_json& value) {
  switch (value.type()) {
    case ordered_json::value_t::string:
      return quote(value.get_ref<const std::string&>());
    case ordered_json::value_t::array:
      return "an array";
    case ordered_json::value_t::object:
      return "an object";
    default:
      return value.dump();  // numbers, booleans, null: short and one line
  }
}

void JsonFields::fail(const JsonPath& path, const std::string& what) const {
  throw UserError(located_message(source_, path, what));
}

void JsonFields::expect_object(const ordered_json& value, const JsonPath& path) const {
  if (!value.is_object()) fail(path, "expected an object, got " + describe_json(value));
}

void JsonFields::reject_unknown_keys(const ordered_json& object, const JsonPath& path,
                                     const std::vector<std::string>& known) const {
  for (const auto& item : object.items()) {
    bool is_known = false;
    for (const auto& k : known) is_known = is_known || k == item.key();
    if (!is_known) fail(path, "unknown key " + quote(item.key()) + did_you_mean(item.key(), known));
  }
}

const ordered_json* JsonFields::find(const ordered_json& object, const std::string& key) {
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

const ordered_json& JsonFields::require(const ordered_json& object, const JsonPath& path,
                                        const std::string& key) const {
  const ordered_json* member = find(object, key);
  if (!member) fail(path, "missing key " + quote(key));
  return *member;
}

int64_t JsonFields::get_int(const ordered_json& value, const JsonPath& path, int64_t min,
                            int64_t max) const {
  std::string expected = min == 1   ? "a positive integer"
                         : min == 0 ? "a non-negative integer"
                                    : "an integer";
  if (value.is_number_unsigned()) {
    // Above INT64_MAX cannot be read as int64_t; it is above any max we accept anyway.
    uint64_t u = value.get<uint64_t>();
    if (u > static_cast<uint64_t>(max))
      fail(path, "must be at most " + std::to_string(max) + ", got " + value.dump());
    int64_t v = static_cast<int64_t>(u);
    if (v < min) fail(path, "expected " + expected + ", got " + value.dump());
    return v;
  }
  if (value.is_number_integer()) {
    int64_t v = value.get<int64_t>();
    if (v < min) fail(path, "expected " + expected + ", got " + value.dump());
    if (v > max) fail(path, "must be at most " + std::to_string(max) + ", got " + value.dump());
    return v;
  }
  fail(path, "expected " + expected + ", got " + describe_json(value));
}

double JsonFields::get_number(const ordered_json& value, const JsonPath& path, double min,
                              bool min_exclusive, double max) const {
  std::string expected =
      min == 0 ? (min_exclusive ? "a positive number" : "a non-negative number") : "a number";
  if (!value.is_number()) fail(path, "expected " + expected + ", got " + describe_json(value));
  double v = value.get<double>();
  if (!std::isfinite(v) || v < min || (min_exclusive && v == min))
    fail(path, "expected " + expected + ", got " + value.dump());
  if (v > max) {
    // Print the bound as a user would write it: 1000000, not 1000000.0.
    std::string bound = max == std::floor(max) && max < 1e15
                            ? std::to_string(static_cast<int64_t>(max))
                            : ordered_json(max).dump();
    fail(path, "must be at most " + bound + ", got " + value.dump());
  }
  return v;
}

bool JsonFields::get_bool(const ordered_json& value, const JsonPath& path) const {
  if (!value.is_boolean()) fail(path, "expected true or false, got " + describe_json(value));
  return value.get<bool>();
}

std::string JsonFields::get_string(const ordered_json& value, const JsonPath& path) const {
  if (!value.is_string()) fail(path, "expected a string, got " + describe_json(value));
  return value.get<std::string>();
}

}  // namespace dietcode

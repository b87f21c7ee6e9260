// Typed, path-aware access to the fields of a parsed JSON document. Every accessor either
// returns a value of the promised type and range or throws UserError with the one-line
// message "FILE: PATH: what is wrong", so parsers read like a list of fields.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "workload/json_path.h"

namespace dietcode {

using ordered_json = nlohmann::ordered_json;

// How a value reads in "got ..." messages: strings quoted, numbers as written, and
// containers by kind ("an array", "an object") rather than dumped.
std::string describe_json(const ordered_json& value);

class JsonFields {
 public:
  explicit JsonFields(std::string source) : source_(std::move(source)) {}

  const std::string& source() const { return source_; }

  [[noreturn]] void fail(const JsonPath& path, const std::string& what) const;

  // An object whose keys are all in `known`. An unknown key is reported at the object's path
  // with the closest known key as a suggestion.
  void expect_object(const ordered_json& value, const JsonPath& path) const;
  void reject_unknown_keys(const ordered_json& object, const JsonPath& path,
                           const std::vector<std::string>& known) const;

  // The member `key` of `object`; "missing key" at the object's path when absent.
  const ordered_json& require(const ordered_json& object, const JsonPath& path,
                              const std::string& key) const;
  // Null when absent.
  static const ordered_json* find(const ordered_json& object, const std::string& key);

  // An integer in [min, max]. min 1 reads "a positive integer", min 0 "a non-negative one".
  int64_t get_int(const ordered_json& value, const JsonPath& path, int64_t min, int64_t max) const;
  // A number in [min, max] (min itself excluded when min_exclusive).
  double get_number(const ordered_json& value, const JsonPath& path, double min, bool min_exclusive,
                    double max) const;
  bool get_bool(const ordered_json& value, const JsonPath& path) const;
  std::string get_string(const ordered_json& value, const JsonPath& path) const;

 private:
  std::string source_;
};

}  // namespace dietcode

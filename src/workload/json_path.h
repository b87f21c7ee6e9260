// A JSON path as error messages show it: ops[2].K, shape_vars.T.max, name. The empty path
// is the document itself.
#pragma once

#include <string>

#include "workload/names.h"

namespace dietcode {

class JsonPath {
 public:
  JsonPath() = default;

  // Keys that are identifiers read as `.key`; anything else (a weights key "17", a key with
  // spaces) as `["key"]`, so the path is unambiguous and stays on one line.
  JsonPath key(const std::string& k) const {
    if (is_identifier(k)) return JsonPath(text_.empty() ? k : text_ + "." + k);
    return JsonPath(text_ + "[" + quote(k) + "]");
  }
  JsonPath index(size_t i) const { return JsonPath(text_ + "[" + std::to_string(i) + "]"); }

  const std::string& str() const { return text_; }
  bool empty() const { return text_.empty(); }

 private:
  explicit JsonPath(std::string text) : text_(std::move(text)) {}
  std::string text_;
};

// "FILE: PATH: what" or, for the document itself, "FILE: what".
inline std::string located_message(const std::string& source, const JsonPath& path,
                                   const std::string& what) {
  return source + ": " + (path.empty() ? "" : path.str() + ": ") + what;
}

}  // namespace dietcode

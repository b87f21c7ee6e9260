// Reading user JSON defensively: any file a user (or a fuzzer) hands us ends in a value or in
// a one-line UserError "FILE: what is wrong", never a crash. Beyond nlohmann's syntax check
// it rejects what the DOM would silently accept: duplicate keys (nlohmann keeps the last),
// integers too large for 64 bits (nlohmann turns them into doubles), and nesting no
// configuration needs (which would only cost stack and memory).
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

namespace dietcode {

constexpr size_t kMaxJsonDepth = 64;

// The whole file. Throws UserError "PATH: cannot read: <strerror>" or "PATH: larger than N
// bytes" past max_bytes (which also stops /dev/zero and friends).
std::string read_text_file(const std::string& path, size_t max_bytes);

// Parses `text`, keeping object keys in file order. Throws UserError prefixed with `source`:
//   "w.json: not valid JSON: parse error at line 3, column 5: ..."
//   "w.json: ops[0]: duplicate key \"M\""
//   "w.json: ops[0].K: integer 99999999999999999999 does not fit in 64 bits"
//   "w.json: JSON nested more than 64 levels deep"
nlohmann::ordered_json parse_json_strict(const std::string& text, const std::string& source);

}  // namespace dietcode

// A hash that is the same on every machine, compiler and run (std::hash promises none of that),
// for names of on-disk cache entries and integrity checks. FNV-1a, 64 bits: not
// cryptographic, so whoever keys on it also stores and compares the full key.
#pragma once

#include <cstdint>
#include <string>

namespace dietcode {

class StableHash {
 public:
  StableHash& add(const void* data, size_t size);
  StableHash& add(const std::string& text) { return add(text.data(), text.size()); }
  uint64_t value() const { return state_; }
  std::string hex() const;  // 16 lowercase hex digits

 private:
  uint64_t state_ = 0xcbf29ce484222325ull;  // the FNV-1a 64-bit offset basis
};

inline uint64_t stable_hash(const std::string& text) { return StableHash().add(text).value(); }
std::string stable_hash_hex(const std::string& text);

}  // namespace dietcode

#include "nvrtc/stable_hash.h"

#include <fmt/format.h>

namespace dietcode {

StableHash& StableHash::add(const void* data, size_t size) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) {
    state_ ^= bytes[i];
    state_ *= 0x100000001b3ull;  // the FNV 64-bit prime
  }
  return *this;
}

std::string StableHash::hex() const { return fmt::format("{:016x}", state_); }

std::string stable_hash_hex(const std::string& text) { return StableHash().add(text).hex(); }

}  // namespace dietcode

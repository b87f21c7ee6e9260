// The on-disk form of one cached compile: the full key it was stored under and the
// CompileResult, binary-safe (CUBINs are raw bytes), ending in a checksum of everything before
// it. A reader that finds anything unexpected — a short file, a bad length, a wrong checksum —
// reports failure, and the cache treats the entry as a miss.
//
// Layout: the line "dietcode-kernel-cache 1", then fields "TAG LENGTH\n<LENGTH bytes>\n" in a
// fixed order, then "checksum <16 hex digits>\n" over all bytes before that line.
#pragma once

#include <string>

#include "nvrtc/compiler.h"

namespace dietcode {

std::string encode_cache_entry(const std::string& key, const CompileResult& result);

// False (and *result untouched) when the bytes are not a complete, intact entry.
bool decode_cache_entry(const std::string& bytes, std::string* key, CompileResult* result);

}  // namespace dietcode

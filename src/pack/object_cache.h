// The on-disk cache of a pack's compiled objects (its kernel units and its loader runtime),
// shared by every dietcode on the machine: `dietcode build` of a pack whose kernels and runtime
// were compiled before, for this or another pack, compiles only the pack's own small unit.
//
// An entry is named by a hash of its key, the text of everything that decides the object's
// bytes (the compiler's identity, flags, sources), and holds a header line "KEY_BYTES
// OBJECT_BYTES OBJECT_HASH", the key itself (so that a hash collision is a miss, not a wrong
// object) and the object. An entry cut short or damaged is a miss too: it never reaches the
// linker. Entries are written atomically (common/atomic_file.h); a cache that cannot be
// written is slower, not wrong.
#pragma once

#include <filesystem>
#include <string>

namespace dietcode {

class ObjectCache {
 public:
  // `dir` empty, or `compiler_identity` empty (a compiler that cannot say what it is cannot be
  // told from another): the cache is off, fetch() always misses and store() does nothing.
  ObjectCache(std::filesystem::path dir, std::string compiler_identity);

  bool enabled() const { return enabled_; }

  // A key starts with `kind` ("dietcode pack object key 1") and the compiler's identity; add
  // every other input that decides the object's bytes with add().
  std::string key(const std::string& kind) const;
  // Length-prefixed, so that no source or flag text can make two different keys print alike.
  static void add(std::string& key, const char* tag, const std::string& value);

  // The object cached under `key`, copied to `object`; false on a miss or a damaged entry.
  bool fetch(const std::string& key, const std::filesystem::path& object) const;
  // Keeps `object`'s bytes under `key`; false when it could not (not an error).
  bool store(const std::string& key, const std::filesystem::path& object) const;

 private:
  std::filesystem::path entry(const std::string& key) const;

  std::filesystem::path dir_;
  std::string identity_;
  bool enabled_;
};

// `program --version`'s output, run in `dir`; empty when it fails.
std::string version_text(const std::string& program, const std::filesystem::path& dir);

// What tells a compiler from another: its path and its --version text; empty when --version
// fails.
std::string compiler_identity(const std::string& program, const std::filesystem::path& dir);

}  // namespace dietcode

// A Compiler that remembers: CUBINs and PTX on disk, keyed by everything that decides them —
// the source, the options, the arch list, whether PTX was asked for, the program name (it
// appears in the log) and the inner compiler's fingerprint (NVRTC version and library,
// include folders). Compiling costs 0.1-0.5 s per kernel; a hit costs a file read.
//
// Entries live in DIR/<16 hex digits>.entry, named by a StableHash of the key text; the entry
// stores the full key, compared on every hit, so a hash collision is a miss and never a wrong
// binary. Entries are written to a temporary file and renamed into place, so concurrent
// processes and killed runs never leave a half-written entry under a real name; a damaged
// entry fails its checksum and is a miss (and is overwritten by the fresh compile).
//
// Failed compiles are cached too: for a fixed key a compile error is deterministic, and a
// search that meets the same bad candidate again should not pay for it twice. Broken
// environments throw from the inner compiler and are never cached. A cache that cannot be
// written (read-only disk, full disk) costs speed, not correctness: writes that fail are
// counted, and the compile result is returned all the same.
#pragma once

#include <atomic>
#include <filesystem>
#include <string>

#include "nvrtc/compiler.h"

namespace dietcode {

class CachingCompiler : public Compiler {
 public:
  struct Stats {
    long hits = 0;
    long misses = 0;
    long write_failures = 0;
  };

  // `inner` must outlive this object and be safe to call from several threads when this one
  // is. `fingerprint` is whatever besides the request decides the inner compiler's output
  // (NvrtcCompiler::fingerprint()). `dir` is usually cache_dir() / "kernels".
  CachingCompiler(Compiler& inner, std::string fingerprint, std::filesystem::path dir);

  // Thread-safe.
  CompileResult compile(const CompileRequest& request) override;
  // Hits come from the cache; the misses go to the inner compiler as one batch, and each
  // result is stored under its own request's key. Thread-safe.
  std::vector<CompileResult> compile_batch(const std::vector<CompileRequest>& requests) override;
  int preferred_batch() const override { return inner_.preferred_batch(); }

  std::string key_text(const CompileRequest& request) const;
  std::filesystem::path entry_path(const CompileRequest& request) const;
  const std::filesystem::path& dir() const { return dir_; }
  Stats stats() const;

 private:
  bool load(const std::filesystem::path& path, const std::string& key, CompileResult* out) const;
  bool store(const std::filesystem::path& path, const std::string& bytes);

  Compiler& inner_;
  std::string fingerprint_;
  std::filesystem::path dir_;
  std::atomic<long> hits_{0}, misses_{0}, write_failures_{0};
};

// The default kernel cache folder: cache_dir() / "kernels".
std::filesystem::path default_kernel_cache_dir();

}  // namespace dietcode

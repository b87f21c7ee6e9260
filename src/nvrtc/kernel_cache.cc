#include "nvrtc/kernel_cache.h"

#include <fstream>

#include "common/atomic_file.h"
#include "common/paths.h"
#include "nvrtc/cache_entry.h"
#include "nvrtc/stable_hash.h"

namespace dietcode {

namespace fs = std::filesystem;

namespace {

// Length-prefixed so that no source or option text can make two different keys print alike.
void field(std::string& out, const char* tag, const std::string& value) {
  out += tag;
  out += ' ' + std::to_string(value.size()) + '\n' + value + '\n';
}

}  // namespace

fs::path default_kernel_cache_dir() { return cache_dir() / "kernels"; }

CachingCompiler::CachingCompiler(Compiler& inner, std::string fingerprint, fs::path dir)
    : inner_(inner), fingerprint_(std::move(fingerprint)), dir_(std::move(dir)) {}

std::string CachingCompiler::key_text(const CompileRequest& request) const {
  std::string key = "dietcode kernel cache key 1\n";
  field(key, "compiler", fingerprint_);
  field(key, "name", request.name);
  field(key, "archs", std::to_string(request.archs.size()));
  for (const std::string& arch : request.archs) field(key, "arch", arch);
  field(key, "want_ptx", request.want_ptx ? "1" : "0");
  field(key, "options", std::to_string(request.options.size()));
  for (const std::string& option : request.options) field(key, "option", option);
  field(key, "source", request.source);
  // Only where a compiler reads them, so that every other request keeps its key.
  for (const std::string& entry : request.entries) field(key, "entry", entry);
  return key;
}

fs::path CachingCompiler::entry_path(const CompileRequest& request) const {
  return dir_ / (stable_hash_hex(key_text(request)) + ".entry");
}

CachingCompiler::Stats CachingCompiler::stats() const {
  return {hits_.load(), misses_.load(), write_failures_.load()};
}

bool CachingCompiler::load(const fs::path& path, const std::string& key, CompileResult* out) const {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string stored_key;
  if (!decode_cache_entry(bytes, &stored_key, out)) return false;
  return stored_key == key;
}

bool CachingCompiler::store(const fs::path& path, const std::string& bytes) {
  return write_file_atomically(path, bytes);
}

CompileResult CachingCompiler::compile(const CompileRequest& request) {
  std::string key = key_text(request);
  fs::path path = dir_ / (stable_hash_hex(key) + ".entry");
  CompileResult result;
  if (load(path, key, &result)) {
    ++hits_;
    result.seconds = 0;
    result.cache_hit = true;
    return result;
  }
  ++misses_;
  result = inner_.compile(request);
  result.cache_hit = false;
  if (!store(path, encode_cache_entry(key, result))) ++write_failures_;
  return result;
}

std::vector<CompileResult> CachingCompiler::compile_batch(
    const std::vector<CompileRequest>& requests) {
  std::vector<CompileResult> results(requests.size());
  std::vector<size_t> missed;
  std::vector<CompileRequest> misses;
  std::vector<std::string> keys(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    keys[i] = key_text(requests[i]);
    if (load(dir_ / (stable_hash_hex(keys[i]) + ".entry"), keys[i], &results[i])) {
      ++hits_;
      results[i].seconds = 0;
      results[i].cache_hit = true;
    } else {
      missed.push_back(i);
      misses.push_back(requests[i]);
    }
  }
  if (misses.empty()) return results;
  misses_ += long(misses.size());
  std::vector<CompileResult> compiled = inner_.compile_batch(misses);
  for (size_t j = 0; j < missed.size(); ++j) {
    const size_t i = missed[j];
    results[i] = std::move(compiled[j]);
    results[i].cache_hit = false;
    if (!store(dir_ / (stable_hash_hex(keys[i]) + ".entry"), encode_cache_entry(keys[i], results[i])))
      ++write_failures_;
  }
  return results;
}

}  // namespace dietcode

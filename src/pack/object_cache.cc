#include "pack/object_cache.h"

#include <fstream>
#include <iterator>
#include <utility>

#include "common/atomic_file.h"
#include "nvrtc/stable_hash.h"
#include "pack/run_process.h"

namespace dietcode {
namespace {

std::string entry_header(const std::string& key, const std::string& object) {
  return std::to_string(key.size()) + ' ' + std::to_string(object.size()) + ' ' +
         stable_hash_hex(object) + '\n';
}

bool read_bytes(const std::filesystem::path& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  out->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return bool(in) || in.eof();
}

}  // namespace

ObjectCache::ObjectCache(std::filesystem::path dir, std::string compiler_identity)
    : dir_(std::move(dir)),
      identity_(std::move(compiler_identity)),
      enabled_(!dir_.empty() && !identity_.empty()) {}

std::string ObjectCache::key(const std::string& kind) const {
  std::string key = kind + "\n";
  add(key, "toolchain", identity_);
  return key;
}

void ObjectCache::add(std::string& key, const char* tag, const std::string& value) {
  key += tag;
  key += ' ' + std::to_string(value.size()) + '\n' + value + '\n';
}

std::filesystem::path ObjectCache::entry(const std::string& key) const {
  return dir_ / (stable_hash_hex(key) + ".o");
}

bool ObjectCache::fetch(const std::string& key, const std::filesystem::path& object) const {
  if (!enabled_) return false;
  std::string bytes;
  if (!read_bytes(entry(key), &bytes)) return false;
  const size_t newline = bytes.find('\n');
  if (newline == std::string::npos || bytes.compare(newline + 1, key.size(), key) != 0)
    return false;
  const size_t body = newline + 1 + key.size();
  if (body > bytes.size()) return false;
  std::string bytes_of_object = bytes.substr(body);
  if (bytes.compare(0, newline + 1, entry_header(key, bytes_of_object)) != 0) return false;
  return write_file_atomically(object, bytes_of_object);
}

bool ObjectCache::store(const std::string& key, const std::filesystem::path& object) const {
  std::string bytes;
  if (!enabled_ || !read_bytes(object, &bytes)) return false;
  return write_file_atomically(entry(key), entry_header(key, bytes) + key + bytes);
}

std::string version_text(const std::string& program, const std::filesystem::path& dir) {
  ProcessResult r = run_process({program, "--version"}, dir.string());
  return r.started && r.exit_code == 0 ? r.output : "";
}

std::string compiler_identity(const std::string& program, const std::filesystem::path& dir) {
  const std::string version = version_text(program, dir);
  return version.empty() ? "" : program + "\n" + version;
}

}  // namespace dietcode

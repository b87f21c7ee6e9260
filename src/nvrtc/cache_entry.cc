#include "nvrtc/cache_entry.h"

#include <cstdlib>

#include "nvrtc/stable_hash.h"

namespace dietcode {
namespace {

const std::string kMagic = "dietcode-kernel-cache 1\n";
const std::string kChecksum = "checksum ";

class Writer {
 public:
  Writer() : out_(kMagic) {}
  void put(const char* tag, const std::string& bytes) {
    out_ += tag;
    out_ += ' ' + std::to_string(bytes.size()) + '\n';
    out_ += bytes;
    out_ += '\n';
  }
  void put(const char* tag, long value) { put(tag, std::to_string(value)); }
  std::string finish() {
    std::string sum = StableHash().add(out_).hex();
    return out_ + kChecksum + sum + '\n';
  }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(const std::string& bytes) : in_(bytes), pos_(kMagic.size()) {}
  bool get(const char* tag, std::string* value) {
    std::string prefix = std::string(tag) + ' ';
    if (in_.compare(pos_, prefix.size(), prefix) != 0) return false;
    size_t digits = pos_ + prefix.size();
    size_t newline = in_.find('\n', digits);
    if (newline == std::string::npos || newline == digits || newline - digits > 12) return false;
    for (size_t i = digits; i < newline; ++i)
      if (in_[i] < '0' || in_[i] > '9') return false;
    size_t length = std::strtoull(in_.c_str() + digits, nullptr, 10);
    size_t start = newline + 1;
    if (length > end_ || start > end_ - length || start + length >= end_) return false;
    if (in_[start + length] != '\n') return false;
    value->assign(in_, start, length);
    pos_ = start + length + 1;
    return true;
  }
  bool get(const char* tag, long* value) {
    std::string text;
    if (!get(tag, &text) || text.empty() || text.size() > 12) return false;
    char* end = nullptr;
    *value = std::strtol(text.c_str(), &end, 10);
    return *end == '\0';
  }
  bool get(const char* tag, int* value) {
    long v = 0;
    if (!get(tag, &v) || v < -(1L << 30) || v > (1L << 30)) return false;
    *value = int(v);
    return true;
  }
  // Checks magic and checksum, and bounds the fields to the bytes before the checksum line.
  bool verify() {
    if (in_.compare(0, kMagic.size(), kMagic) != 0) return false;
    size_t line = in_.rfind(kChecksum);
    if (line == std::string::npos || line < kMagic.size()) return false;
    std::string expected = StableHash().add(in_.data(), line).hex() + '\n';
    if (in_.compare(line + kChecksum.size(), std::string::npos, expected) != 0) return false;
    end_ = line;
    return true;
  }
  bool at_end() const { return pos_ == end_; }

 private:
  const std::string& in_;
  size_t pos_;
  size_t end_ = 0;
};

}  // namespace

std::string encode_cache_entry(const std::string& key, const CompileResult& result) {
  Writer w;
  w.put("key", key);
  w.put("ok", result.ok ? 1 : 0);
  w.put("log", result.log);
  w.put("ptx_arch", result.ptx_arch);
  w.put("ptx", result.ptx);
  w.put("binaries", long(result.binaries.size()));
  for (const ArchBinary& b : result.binaries) {
    w.put("arch", b.arch);
    w.put("cubin", b.cubin);
    w.put("entries", long(b.resources.size()));
    for (const KernelResources& r : b.resources) {
      w.put("entry", r.entry);
      w.put("registers", r.registers);
      w.put("spill_stores", r.spill_stores);
      w.put("spill_loads", r.spill_loads);
      w.put("static_smem", r.static_smem);
      w.put("stack_frame", r.stack_frame);
    }
  }
  return w.finish();
}

bool decode_cache_entry(const std::string& bytes, std::string* key, CompileResult* result) {
  Reader r(bytes);
  if (!r.verify()) return false;
  std::string stored_key;
  CompileResult out;
  int ok = 0, binaries = 0;
  if (!r.get("key", &stored_key) || !r.get("ok", &ok) || !r.get("log", &out.log) ||
      !r.get("ptx_arch", &out.ptx_arch) || !r.get("ptx", &out.ptx) ||
      !r.get("binaries", &binaries) || binaries < 0)
    return false;
  out.ok = ok == 1;
  for (int i = 0; i < binaries; ++i) {
    ArchBinary b;
    int entries = 0;
    if (!r.get("arch", &b.arch) || !r.get("cubin", &b.cubin) || !r.get("entries", &entries) ||
        entries < 0)
      return false;
    for (int j = 0; j < entries; ++j) {
      KernelResources k;
      if (!r.get("entry", &k.entry) || !r.get("registers", &k.registers) ||
          !r.get("spill_stores", &k.spill_stores) || !r.get("spill_loads", &k.spill_loads) ||
          !r.get("static_smem", &k.static_smem) || !r.get("stack_frame", &k.stack_frame))
        return false;
      b.resources.push_back(std::move(k));
    }
    out.binaries.push_back(std::move(b));
  }
  if (!r.at_end()) return false;
  *key = std::move(stored_key);
  *result = std::move(out);
  return true;
}

}  // namespace dietcode

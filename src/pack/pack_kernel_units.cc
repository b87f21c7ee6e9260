#include "pack/pack_kernel_units.h"

#include <algorithm>
#include <atomic>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <thread>

#include "common/atomic_file.h"
#include "common/error.h"
#include "nvrtc/stable_hash.h"
#include "pack/run_process.h"

namespace dietcode {
namespace {

// Runs one step; "" when it worked, else why not.
std::string run_step(const std::vector<std::string>& argv, const std::filesystem::path& dir) {
  ProcessResult r = run_process(argv, dir.string());
  if (!r.started) return "cannot run '" + argv[0] + "': " + r.error;
  if (r.exit_code != 0)
    return argv[0] + " exit " + std::to_string(r.exit_code) + ":\n" + r.output.substr(0, 4000);
  return "";
}

// What decides the objects besides the units themselves: the compiler (its --version text),
// the flags only it gets, and objcopy's version.
struct Toolchain {
  std::vector<std::string> extra_flags;
  std::string identity;
};

std::string version_text(const std::string& program, const std::filesystem::path& dir) {
  ProcessResult r = run_process({program, "--version"}, dir.string());
  return r.started && r.exit_code == 0 ? r.output : "";
}

// g++ gives a static variable of an inline function (a kernel's per-thread scratch) a
// STB_GNU_UNIQUE symbol, which objcopy cannot make local; -fno-gnu-unique makes it a plain weak
// one. clang++ never uses that binding and does not know the flag.
Toolchain identify_toolchain(const std::string& cxx, const std::filesystem::path& dir,
                             bool for_cache) {
  Toolchain t;
  const std::string cxx_version = version_text(cxx, dir);
  if (!cxx_version.empty() && cxx_version.find("clang") == std::string::npos)
    t.extra_flags = {"-fno-gnu-unique"};
  // A compiler that does not say what it is cannot be told from another: no caching then.
  if (for_cache && !cxx_version.empty())
    t.identity = cxx + "\n" + cxx_version + version_text("objcopy", dir);
  return t;
}

// Length-prefixed so that no source or flag text can make two different keys print alike.
void field(std::string& out, const char* tag, const std::string& value) {
  out += tag;
  out += ' ' + std::to_string(value.size()) + '\n' + value + '\n';
}

std::string object_key(const KernelUnit& unit, const Toolchain& toolchain) {
  std::string key = "dietcode pack object key 1\n";
  field(key, "toolchain", toolchain.identity);
  field(key, "file", unit.file);
  for (const std::string& flag : unit.flags) field(key, "flag", flag);
  for (const std::string& flag : toolchain.extra_flags) field(key, "extra", flag);
  for (const std::string& entry : unit.entries) field(key, "entry", entry);
  field(key, "source", unit.source);
  return key;
}

// A cache entry: a header line "KEY_BYTES OBJECT_BYTES OBJECT_HASH", the key (to rule out
// hash collisions in the entry's name) and the object. The length and hash catch an entry cut
// short or damaged, which would otherwise reach the linker.
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

// The cached object for `key`, written to `object`; false on a miss or a damaged entry.
bool fetch_object(const std::filesystem::path& entry, const std::string& key,
                  const std::filesystem::path& object) {
  std::string bytes;
  if (!read_bytes(entry, &bytes)) return false;
  const size_t newline = bytes.find('\n');
  if (newline == std::string::npos || bytes.compare(newline + 1, key.size(), key) != 0)
    return false;
  const size_t body = newline + 1 + key.size();
  if (body > bytes.size()) return false;
  std::string bytes_of_object = bytes.substr(body);
  if (bytes.compare(0, newline + 1, entry_header(key, bytes_of_object)) != 0) return false;
  return write_file_atomically(object, bytes_of_object);
}

std::string compile_unit(const KernelUnit& unit, const std::string& cxx,
                         const std::vector<std::string>& extra, const std::filesystem::path& dir,
                         const std::string& object) {
  const std::string raw = unit.file + ".raw.o";
  std::vector<std::string> compile = {cxx};
  compile.insert(compile.end(), unit.flags.begin(), unit.flags.end());
  compile.insert(compile.end(), extra.begin(), extra.end());
  compile.insert(compile.end(),
                 {"-frandom-seed=" + unit.file, "-c", unit.file, "-o", raw});
  if (std::string why = run_step(compile, dir); !why.empty()) return why;
  if (std::string why = run_step({cxx, "-r", "-nostdlib", "-Wl,--force-group-allocation", raw,
                                  "-o", object},
                                 dir);
      !why.empty())
    return why;
  std::vector<std::string> localize = {"objcopy"};
  for (const std::string& entry : unit.entries) localize.push_back("--keep-global-symbol=" + entry);
  localize.push_back(object);
  return run_step(localize, dir);
}

}  // namespace

std::vector<std::string> compile_kernel_units(const std::vector<KernelUnit>& units,
                                              const std::string& cxx,
                                              const std::filesystem::path& dir,
                                              const std::filesystem::path& cache_dir,
                                              KernelUnitStats* stats) {
  std::vector<std::string> objects, errors(units.size());
  if (units.empty()) return objects;
  for (const KernelUnit& unit : units) objects.push_back(unit.file + ".o");
  const Toolchain toolchain = identify_toolchain(cxx, dir, !cache_dir.empty());
  const bool cached = !toolchain.identity.empty();
  std::atomic<int> hits{0};
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < units.size();) {
      const std::string key = cached ? object_key(units[i], toolchain) : "";
      const std::filesystem::path entry =
          cached ? cache_dir / (stable_hash_hex(key) + ".o") : std::filesystem::path();
      if (cached && fetch_object(entry, key, dir / objects[i])) {
        ++hits;
        continue;
      }
      errors[i] = compile_unit(units[i], cxx, toolchain.extra_flags, dir, objects[i]);
      std::string object;
      if (cached && errors[i].empty() && read_bytes(dir / objects[i], &object))
        write_file_atomically(entry, entry_header(key, object) + key + object);
    }
  };
  size_t n = std::min<size_t>(units.size(), std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> threads;
  for (size_t t = 1; t < n; ++t) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
  if (stats) *stats = {int(units.size()), hits.load()};
  for (size_t i = 0; i < units.size(); ++i) {
    if (errors[i].empty()) continue;
    if (errors[i].rfind("cannot run 'objcopy'", 0) == 0)
      throw EnvironmentError(errors[i] + " (a CPU pack's kernels are prepared with objcopy, "
                             "from binutils)");
    if (errors[i].rfind("cannot run", 0) == 0) throw EnvironmentError(errors[i]);
    throw std::runtime_error("kernel " + units[i].file + " of the pack does not compile: " +
                             errors[i]);
  }
  return objects;
}

}  // namespace dietcode

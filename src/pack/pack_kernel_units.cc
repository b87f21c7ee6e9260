#include "pack/pack_kernel_units.h"

#include <algorithm>
#include <atomic>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "common/error.h"
#include "pack/object_cache.h"
#include "pack/run_process.h"
#include "x86/cxx_compiler.h"

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

std::string object_key(const ObjectCache& cache, const KernelUnit& unit,
                       const Toolchain& toolchain) {
  std::string key = cache.key("dietcode pack object key 1");
  ObjectCache::add(key, "file", unit.file);
  for (const std::string& flag : unit.flags) ObjectCache::add(key, "flag", flag);
  for (const std::string& flag : toolchain.extra_flags) ObjectCache::add(key, "extra", flag);
  for (const std::string& entry : unit.entries) ObjectCache::add(key, "entry", entry);
  ObjectCache::add(key, "source", unit.source);
  return key;
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

std::vector<std::string> kernel_unit_flags(const std::string& level,
                                           const std::vector<std::string>& options) {
  std::vector<std::string> flags;
  for (const std::string& flag : CxxCompiler::flags(level))
    if (flag != "-shared") flags.push_back(flag);
  flags.insert(flags.end(), options.begin(), options.end());
  return flags;
}

struct KernelUnitCompiler::State {
  Toolchain toolchain;
  ObjectCache cache;
};

KernelUnitCompiler::KernelUnitCompiler(std::string cxx, const std::filesystem::path& dir,
                                       const std::filesystem::path& cache_dir)
    : cxx_(std::move(cxx)) {
  Toolchain toolchain = identify_toolchain(cxx_, dir, !cache_dir.empty());
  ObjectCache cache(cache_dir, toolchain.identity);
  state_ = std::make_unique<State>(State{std::move(toolchain), std::move(cache)});
}

KernelUnitCompiler::~KernelUnitCompiler() = default;

std::string KernelUnitCompiler::compile(const KernelUnit& unit, const std::filesystem::path& dir,
                                        const std::string& object, bool* cache_hit) const {
  if (cache_hit) *cache_hit = false;
  const ObjectCache& cache = state_->cache;
  const std::string key = cache.enabled() ? object_key(cache, unit, state_->toolchain) : "";
  if (cache.fetch(key, dir / object)) {
    if (cache_hit) *cache_hit = true;
    return "";
  }
  {
    std::ofstream out(dir / unit.file, std::ios::binary | std::ios::trunc);
    out << unit.source;
    if (!out.flush()) return "cannot write " + (dir / unit.file).string();
  }
  std::string why = compile_unit(unit, cxx_, state_->toolchain.extra_flags, dir, object);
  if (why.empty()) cache.store(key, dir / object);
  if (why.rfind("cannot run 'objcopy'", 0) == 0)
    why += " (a CPU pack's kernels are prepared with objcopy, from binutils)";
  return why;
}

std::vector<std::string> compile_kernel_units(const std::vector<KernelUnit>& units,
                                              const std::string& cxx,
                                              const std::filesystem::path& dir,
                                              const std::filesystem::path& cache_dir,
                                              KernelUnitStats* stats) {
  std::vector<std::string> objects, errors(units.size());
  if (units.empty()) return objects;
  for (const KernelUnit& unit : units) objects.push_back(unit.file + ".o");
  std::unique_ptr<KernelUnitCompiler> compiler;  // only when some unit has no object yet
  int reused = 0;
  for (size_t i = 0; i < units.size(); ++i) {
    if (units[i].object.empty()) {
      if (!compiler) compiler = std::make_unique<KernelUnitCompiler>(cxx, dir, cache_dir);
      continue;
    }
    // The source beside its object, as a compiled unit has it (a kept build folder shows both).
    std::ofstream source(dir / units[i].file, std::ios::binary | std::ios::trunc);
    source << units[i].source;
    std::ofstream out(dir / objects[i], std::ios::binary | std::ios::trunc);
    out << units[i].object;
    if (!source.flush() || !out.flush())
      throw EnvironmentError("cannot write " + (dir / objects[i]).string());
    ++reused;
  }
  std::atomic<int> hits{0};
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < units.size();) {
      if (!units[i].object.empty()) continue;
      bool hit = false;
      errors[i] = compiler->compile(units[i], dir, objects[i], &hit);
      if (hit) ++hits;
    }
  };
  const size_t to_compile = units.size() - size_t(reused);
  size_t n = std::min<size_t>(to_compile, std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> threads;
  for (size_t t = 1; t < n; ++t) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
  if (stats) *stats = {int(units.size()), hits.load(), reused};
  for (size_t i = 0; i < units.size(); ++i) {
    if (errors[i].empty()) continue;
    if (errors[i].rfind("cannot run", 0) == 0) throw EnvironmentError(errors[i]);
    throw std::runtime_error("kernel " + units[i].file + " of the pack does not compile: " +
                             errors[i]);
  }
  return objects;
}

}  // namespace dietcode

#include "pack/pack_kernel_units.h"

#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <thread>

#include "common/error.h"
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

// g++ gives a static variable of an inline function (a kernel's per-thread scratch) a
// STB_GNU_UNIQUE symbol, which objcopy cannot make local; -fno-gnu-unique makes it a plain weak
// one. clang++ never uses that binding and does not know the flag.
std::vector<std::string> compiler_specific_flags(const std::string& cxx,
                                                 const std::filesystem::path& dir) {
  ProcessResult r = run_process({cxx, "--version"}, dir.string());
  if (!r.started || r.exit_code != 0 || r.output.find("clang") != std::string::npos) return {};
  return {"-fno-gnu-unique"};
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
                                              const std::filesystem::path& dir) {
  std::vector<std::string> objects, errors(units.size());
  if (units.empty()) return objects;
  for (const KernelUnit& unit : units) objects.push_back(unit.file + ".o");
  const std::vector<std::string> extra = compiler_specific_flags(cxx, dir);
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < units.size();)
      errors[i] = compile_unit(units[i], cxx, extra, dir, objects[i]);
  };
  size_t n = std::min<size_t>(units.size(), std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> threads;
  for (size_t t = 1; t < n; ++t) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
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

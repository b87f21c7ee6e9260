#include "pack/pack_runtime_object.h"

#include <fstream>
#include <iterator>
#include <stdexcept>

#include "common/error.h"
#include "pack/object_cache.h"
#include "pack/run_process.h"

namespace dietcode {
namespace {

std::string text_of(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Everything the object's bytes depend on besides the compiler: its flags and every file it
// can include (the embedded runtime, and a GPU pack's driver API headers from the toolkit).
std::string runtime_key(const ObjectCache& cache, const std::vector<std::string>& flags,
                        const PackRuntime& runtime, const std::vector<EmbeddedFile>& files,
                        const std::string& cuda_include) {
  std::string key = cache.key("dietcode pack runtime key 1");
  for (const std::string& flag : flags) ObjectCache::add(key, "flag", flag);
  ObjectCache::add(key, "source", runtime.source);
  for (const EmbeddedFile& f : files) {
    ObjectCache::add(key, "file", f.path);
    ObjectCache::add(key, "text", f.text);
  }
  if (!cuda_include.empty())
    for (const char* header : {"cuda.h", "cudaTypedefs.h"})
      ObjectCache::add(key, header, text_of(std::filesystem::path(cuda_include) / header));
  return key;
}

}  // namespace

RuntimeObject compile_runtime_object(const std::string& cxx, const std::vector<std::string>& flags,
                                     const PackRuntime& runtime,
                                     const std::vector<EmbeddedFile>& files,
                                     const std::string& cuda_include,
                                     const std::filesystem::path& dir,
                                     const std::filesystem::path& cache_dir) {
  RuntimeObject out{runtime.source + ".o", false};
  // -pthread is a compile flag too (it defines _REENTRANT), as when the runtime compiled in the
  // link's command.
  std::vector<std::string> compile_flags = flags;
  for (const std::string& flag : runtime.link_flags)
    if (flag == "-pthread") compile_flags.push_back(flag);
  const ObjectCache cache(cache_dir, cache_dir.empty() ? "" : compiler_identity(cxx, dir));
  const std::string key =
      cache.enabled() ? runtime_key(cache, compile_flags, runtime, files, cuda_include) : "";
  if (cache.fetch(key, dir / out.file)) {
    out.cached = true;
    return out;
  }
  std::vector<std::string> argv = {cxx};
  argv.insert(argv.end(), compile_flags.begin(), compile_flags.end());
  argv.insert(argv.end(), {"-frandom-seed=dietcode-runtime", "-c", runtime.source, "-o", out.file});
  ProcessResult r = run_process(argv, dir.string());
  if (!r.started)
    throw EnvironmentError("cannot run the host C++ compiler '" + cxx + "': " + r.error +
                           " (a pack is compiled with it; install g++ or clang++)");
  if (r.exit_code != 0)
    throw std::runtime_error("the pack's loader runtime does not compile (" + cxx + " exit " +
                             std::to_string(r.exit_code) + "):\n" + r.output.substr(0, 4000));
  cache.store(key, dir / out.file);
  return out;
}

}  // namespace dietcode

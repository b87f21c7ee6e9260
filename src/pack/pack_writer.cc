#include "pack/pack_writer.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>

#include "common/error.h"
#include "pack/build_dir.h"
#include "pack/embedded_runtime.h"
#include "pack/manifest.h"
#include "pack/pack_kernel_units.h"
#include "pack/pack_runtime_object.h"
#include "pack/pack_source.h"
#include "pack/run_process.h"

namespace dietcode {

namespace fs = std::filesystem;

fs::path header_path_for(const fs::path& library) {
  std::string stem = library.filename().string();
  if (stem.size() > 3 && stem.rfind(".so") == stem.size() - 3) stem.resize(stem.size() - 3);
  if (stem.rfind("lib", 0) == 0 && stem.size() > 3) stem = stem.substr(3);
  return library.parent_path() / (stem + ".h");
}

namespace {

void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), std::streamsize(bytes.size()));
  f.close();
  if (!f) throw EnvironmentError(path.string() + ": cannot write");
}

std::string find_cuda_include(const std::string& requested) {
  std::vector<std::string> candidates;
  if (!requested.empty())
    candidates = {requested};
  else
    candidates = {DIETCODE_CUDA_INCLUDE_DIR, "/usr/local/cuda/include"};
  std::error_code ec;
  for (const std::string& dir : candidates)
    if (fs::exists(fs::path(dir) / "cudaTypedefs.h", ec)) return dir;
  throw EnvironmentError("cannot find the CUDA toolkit headers (cuda.h, cudaTypedefs.h) in " +
                         candidates.front() + ": a pack's loader needs their types");
}

// The same bytes under `dest`, by way of a temporary name beside it and a rename.
void install(const fs::path& from, const fs::path& dest, bool executable) {
  fs::path tmp =
      dest.parent_path() / ("." + dest.filename().string() + ".tmp-" + std::to_string(getpid()));
  std::error_code ec;
  fs::copy_file(from, tmp, fs::copy_options::overwrite_existing, ec);
  auto read = fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
              fs::perms::others_read;
  auto exec = fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec;
  if (!ec) fs::permissions(tmp, executable ? read | exec : read, ec);
  if (!ec) fs::rename(tmp, dest, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw EnvironmentError(dest.string() + ": cannot write: " + ec.message());
  }
}

}  // namespace

PackFiles write_pack(const PackRequest& request, const fs::path& library,
                     const PackWriteOptions& options) {
  auto start = std::chrono::steady_clock::now();
  PackFiles files;
  files.library = fs::absolute(library);
  files.header = header_path_for(files.library);
  std::string library_name = files.library.filename().string();
  std::error_code ec;
  if (!fs::is_directory(files.library.parent_path(), ec))
    throw UserError(library.string() + ": no such folder " + files.library.parent_path().string());

  BuildDir dir("dietcode-pack", options.keep_build_dir);
  std::string manifest = pack_manifest(request).dump();
  PackSources src = generate_pack_sources(request, manifest, dir.path().string(), library_name,
                                          files.header.filename().string());
  for (const EmbeddedFile& f : embedded_runtime_files()) {
    fs::create_directories((dir.path() / f.path).parent_path());
    write_file(dir.path() / f.path, f.text);
  }
  for (const PackBlob& blob : src.blobs) write_file(dir.path() / blob.file, blob.bytes);
  write_file(dir.path() / "pack.cc", src.translation_unit);
  write_file(dir.path() / "exports.map", src.version_script);
  write_file(dir.path() / files.header.filename(), src.header);
  KernelUnitStats unit_stats;
  std::vector<std::string> objects = compile_kernel_units(
      src.kernel_units, options.cxx, dir.path(), options.object_cache_dir, &unit_stats);
  files.kernel_objects = unit_stats.units;
  files.kernel_objects_cached = unit_stats.cache_hits;
  files.kernel_objects_reused = unit_stats.reused;

  // The flags of the pack's own unit and of its runtime, compiled apart so that the runtime's
  // object can come from the cache (pack_runtime_object.h).
  std::vector<std::string> flags = {
      "-std=c++17", "-O2", "-fPIC", "-fvisibility=hidden", "-fvisibility-inlines-hidden",
      "-Iinclude",  "-I."};
  std::string cuda_include;
  if (src.runtime.needs_cuda_headers) {
    cuda_include = find_cuda_include(options.cuda_include_dir);
    flags.insert(flags.end(), {"-isystem", cuda_include});
  }
  const RuntimeObject runtime =
      compile_runtime_object(options.cxx, flags, src.runtime, embedded_runtime_files(),
                             cuda_include, dir.path(), options.object_cache_dir);
  files.runtime_object_cached = runtime.cached;

  std::vector<std::string> argv = {options.cxx};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {"-shared", "-frandom-seed=dietcode-pack", "pack.cc", runtime.file});
  argv.insert(argv.end(), objects.begin(), objects.end());
  argv.insert(argv.end(), {"-o", library_name, "-s", "-Wl,--version-script=exports.map",
                           "-Wl,--build-id=none", "-Wl,-soname," + library_name, "-Wl,-z,defs",
                           "-Wl,--as-needed"});
  argv.insert(argv.end(), src.runtime.link_flags.begin(), src.runtime.link_flags.end());
  ProcessResult r = run_process(argv, dir.path().string());
  if (!r.started)
    throw EnvironmentError("cannot run the host C++ compiler '" + options.cxx + "': " + r.error +
                           " (a pack is compiled with it; install g++ or clang++)");
  if (r.exit_code != 0)
    throw std::runtime_error("the generated pack does not compile (" + options.cxx + " exit " +
                             std::to_string(r.exit_code) + "):\n" + r.output.substr(0, 4000));
  install(dir.path() / files.header.filename(), files.header, false);
  install(dir.path() / library_name, files.library, true);
  files.library_bytes = fs::file_size(files.library);
  if (options.keep_build_dir) files.build_dir = dir.path();
  files.compile_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return files;
}

}  // namespace dietcode

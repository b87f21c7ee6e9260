#include "bench/openblas_loader.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <sstream>

#include "common/error.h"

namespace dietcode {

namespace {

constexpr const char* kInstallHint =
    "install the Debian package libopenblas0-openmp (or set DIETCODE_OPENBLAS_LIBRARY)";

// Never dlclose'd: OpenBLAS keeps buffers and threads for the life of the process.
void* open_first(const std::vector<std::string>& files, std::string* path, std::string* why) {
  std::string first_error;
  for (const std::string& file : files) {
    if (void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      *path = file;
      return handle;
    }
    const char* reason = dlerror();
    if (first_error.empty()) first_error = reason ? reason : file + ": cannot be loaded";
  }
  std::string tried;
  for (size_t i = 1; i < files.size(); ++i) tried += (i > 1 ? ", " : "") + files[i];
  *why = "no OpenBLAS: " + (files.empty() ? std::string("no library named") : first_error) +
         (tried.empty() ? "" : " (also tried " + tried + ")") + "; " + kInstallHint;
  return nullptr;
}

template <typename Fn>
bool resolve(void* handle, const std::string& path, const char* name, Fn& fn, std::string* why) {
  dlerror();
  fn = reinterpret_cast<Fn>(dlsym(handle, name));
  if (fn) return true;
  *why = "no OpenBLAS: " + path + " has no " + name + " (is it OpenBLAS? " + kInstallHint + ")";
  return false;
}

}  // namespace

std::string OpenblasApi::threading() const {
  switch (parallel) {
    case 0:
      return "sequential";
    case 1:
      return "pthreads";
    case 2:
      return "openmp";
  }
  return "unknown threading";
}

std::string OpenblasApi::label() const {
  return "OpenBLAS " + (version.empty() ? std::string("?") : version) + " (" + threading() + ")";
}

std::vector<std::string> openblas_candidates() {
  const char* env = std::getenv("DIETCODE_OPENBLAS_LIBRARY");
  if (env && *env) return {env};
  return {"/usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0"};
}

bool load_openblas(const std::vector<std::string>& files, OpenblasApi* out, std::string* why) {
  OpenblasApi api;
  void* h = open_first(files, &api.path, why);
  if (!h) return false;
  const std::string& p = api.path;
#define DIETCODE_RESOLVE(name) resolve(h, p, #name, api.name, why)
  const bool ok = DIETCODE_RESOLVE(cblas_sgemm) && DIETCODE_RESOLVE(openblas_set_num_threads) &&
                  DIETCODE_RESOLVE(openblas_get_num_threads) &&
                  DIETCODE_RESOLVE(openblas_get_config) &&
                  DIETCODE_RESOLVE(openblas_get_corename) &&
                  DIETCODE_RESOLVE(openblas_get_parallel);
#undef DIETCODE_RESOLVE
  if (!ok) return false;
  if (const char* config = api.openblas_get_config()) api.config = config;
  if (const char* core = api.openblas_get_corename()) api.core = core;
  api.parallel = api.openblas_get_parallel();
  std::istringstream words(api.config);
  std::string first, second;
  if (words >> first >> second && first == "OpenBLAS") api.version = second;
  *out = api;
  why->clear();
  return true;
}

const OpenblasApi& openblas_api() {
  static OpenblasApi api;
  static std::string why;
  static std::once_flag once;
  std::call_once(once, [] { load_openblas(openblas_candidates(), &api, &why); });
  if (!why.empty()) throw EnvironmentError(why);
  return api;
}

}  // namespace dietcode

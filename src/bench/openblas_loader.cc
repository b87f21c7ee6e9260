#include "bench/openblas_loader.h"

#include <cstdlib>
#include <mutex>
#include <sstream>

#include "bench/dl_library.h"
#include "common/error.h"

namespace dietcode {

namespace {

constexpr const char* kInstallHint =
    "install the Debian package libopenblas0-openmp (or set DIETCODE_OPENBLAS_LIBRARY)";

// fn from the library, or false with *why naming what is missing.
template <typename Fn>
bool resolve(void* handle, const std::string& path, const char* name, Fn& fn, std::string* why) {
  if (dlsym_into(handle, name, fn)) return true;
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
  void* h = dlopen_first(files, &api.path, why);
  if (!h) {
    *why = "no OpenBLAS: " + *why + "; " + kInstallHint;
    return false;
  }
  const std::string& p = api.path;
#define DIETCODE_RESOLVE(name) resolve(h, p, #name, api.name, why)
  const bool ok =
      DIETCODE_RESOLVE(cblas_sgemm) && DIETCODE_RESOLVE(openblas_set_num_threads) &&
      DIETCODE_RESOLVE(openblas_get_num_threads) && DIETCODE_RESOLVE(openblas_get_config) &&
      DIETCODE_RESOLVE(openblas_get_corename) && DIETCODE_RESOLVE(openblas_get_parallel);
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

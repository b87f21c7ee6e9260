#include "bench/cudnn_loader.h"

#include <glob.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>

#include "bench/dl_library.h"
#include "common/error.h"

namespace dietcode {

namespace {

#ifndef DIETCODE_CUDA_LIBRARY_DIR
#define DIETCODE_CUDA_LIBRARY_DIR "/usr/local/cuda/lib64"
#endif

constexpr char kSoname[] = "libcudnn.so.9";
constexpr char kWheelLibrary[] = "site-packages/nvidia/cudnn/lib/libcudnn.so.9";

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

// The files matching `pattern`, sorted (glob's order), none when nothing matches.
std::vector<std::string> expand(const std::string& pattern) {
  std::vector<std::string> out;
  glob_t matches = {};
  if (glob(pattern.c_str(), 0, nullptr, &matches) == 0)
    for (size_t i = 0; i < matches.gl_pathc; ++i) out.push_back(matches.gl_pathv[i]);
  globfree(&matches);
  return out;
}

void add_unique(std::vector<std::string>& out, const std::string& path) {
  if (std::find(out.begin(), out.end(), path) == out.end()) out.push_back(path);
}

template <typename Fn>
bool resolve(void* handle, const std::string& path, const char* name, Fn& fn, std::string* why) {
  if (dlsym_into(handle, name, fn)) return true;
  *why = "no cuDNN: " + path + " has no " + name;
  return false;
}

}  // namespace

CudnnSearchEnv CudnnSearchEnv::from_process() {
  CudnnSearchEnv env;
  env.library = env_or_empty("DIETCODE_CUDNN_LIBRARY");
  env.virtual_env = env_or_empty("VIRTUAL_ENV");
  env.conda_prefix = env_or_empty("CONDA_PREFIX");
  env.home = env_or_empty("HOME");
  return env;
}

std::vector<std::string> cudnn_candidates(const CudnnSearchEnv& env) {
  if (!env.library.empty()) return {env.library};
  std::vector<std::string> out = {kSoname};
  for (const std::string dir : {DIETCODE_CUDA_LIBRARY_DIR, "/usr/local/cuda/lib64"})
    add_unique(out, dir + "/" + kSoname);
  // pip installs into lib/pythonX.Y/site-packages (dist-packages for Debian's system Python).
  std::vector<std::string> prefixes;
  for (const std::string& root : {env.virtual_env, env.conda_prefix})
    if (!root.empty()) prefixes.push_back(root + "/lib");
  if (!env.home.empty()) prefixes.push_back(env.home + "/.local/lib");
  for (const std::string& root : env.python_roots) prefixes.push_back(root);
  for (const std::string& prefix : prefixes)
    for (const char* packages : {"site-packages", "dist-packages"}) {
      std::string tail = kWheelLibrary;
      tail.replace(0, std::string("site-packages").size(), packages);
      for (const std::string& path : expand(prefix + "/python3*/" + tail)) add_unique(out, path);
    }
  return out;
}

std::string cudnn_version_text(size_t version) {
  const size_t major = version >= 90000 ? version / 10000 : version / 1000;
  const size_t minor = version >= 90000 ? version / 100 % 100 : version / 100 % 10;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(version % 100);
}

bool load_cudnn(const std::vector<std::string>& files, CudnnApi* out, std::string* why) {
  CudnnApi api;
  // Never dlclose'd: cuDNN keeps its sub-libraries and GPU state for the process's life.
  void* handle = dlopen_first(files, &api.path, why);
  if (!handle) {
    *why = "no cuDNN: " + *why;
    return false;
  }
  const std::string& p = api.path;
#define DIETCODE_RESOLVE(name) resolve(handle, p, #name, api.name, why)
  const bool ok =
      DIETCODE_RESOLVE(cudnnGetVersion) && DIETCODE_RESOLVE(cudnnGetErrorString) &&
      DIETCODE_RESOLVE(cudnnCreate) && DIETCODE_RESOLVE(cudnnDestroy) &&
      DIETCODE_RESOLVE(cudnnSetStream) && DIETCODE_RESOLVE(cudnnCreateTensorDescriptor) &&
      DIETCODE_RESOLVE(cudnnSetTensor4dDescriptor) &&
      DIETCODE_RESOLVE(cudnnDestroyTensorDescriptor) &&
      DIETCODE_RESOLVE(cudnnCreateFilterDescriptor) &&
      DIETCODE_RESOLVE(cudnnSetFilter4dDescriptor) &&
      DIETCODE_RESOLVE(cudnnDestroyFilterDescriptor) &&
      DIETCODE_RESOLVE(cudnnCreateConvolutionDescriptor) &&
      DIETCODE_RESOLVE(cudnnSetConvolution2dDescriptor) &&
      DIETCODE_RESOLVE(cudnnSetConvolutionMathType) &&
      DIETCODE_RESOLVE(cudnnGetConvolution2dForwardOutputDim) &&
      DIETCODE_RESOLVE(cudnnDestroyConvolutionDescriptor) &&
      DIETCODE_RESOLVE(cudnnGetConvolutionForwardAlgorithmMaxCount) &&
      DIETCODE_RESOLVE(cudnnFindConvolutionForwardAlgorithmEx) &&
      DIETCODE_RESOLVE(cudnnConvolutionForward) &&
      DIETCODE_RESOLVE(cudnnConvolutionBiasActivationForward) && DIETCODE_RESOLVE(cudnnAddTensor) &&
      DIETCODE_RESOLVE(cudnnCreateActivationDescriptor) &&
      DIETCODE_RESOLVE(cudnnSetActivationDescriptor) &&
      DIETCODE_RESOLVE(cudnnDestroyActivationDescriptor) &&
      DIETCODE_RESOLVE(cudnnActivationForward);
#undef DIETCODE_RESOLVE
  if (!ok) return false;
  api.version = api.cudnnGetVersion();
  if (api.version < 90000) {
    *why = "no cuDNN: " + p + " is cuDNN " + cudnn_version_text(api.version) +
           "; bench needs cuDNN 9 or newer";
    return false;
  }
  *out = api;
  why->clear();
  return true;
}

const CudnnApi* cudnn_api_or_null(std::string* why) {
  static CudnnApi api;
  static std::string reason;
  static std::once_flag once;
  std::call_once(
      once, [] { load_cudnn(cudnn_candidates(CudnnSearchEnv::from_process()), &api, &reason); });
  *why = reason;
  return reason.empty() ? &api : nullptr;
}

void check_cudnn(const CudnnApi& api, cudnn::Status status, const std::string& what) {
  if (status == cudnn::kStatusSuccess) return;
  const char* text = api.cudnnGetErrorString ? api.cudnnGetErrorString(status) : nullptr;
  throw EnvironmentError(
      what + ": " +
      (text && *text ? std::string(text) : "cudnnStatus_t " + std::to_string(status)));
}

}  // namespace dietcode

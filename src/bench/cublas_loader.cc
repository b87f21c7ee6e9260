#include "bench/cublas_loader.h"

#include <mutex>

#include "bench/dl_library.h"

namespace dietcode {

namespace {

#ifndef DIETCODE_CUDA_LIBRARY_DIR
#define DIETCODE_CUDA_LIBRARY_DIR "/usr/local/cuda/lib64"
#endif

std::vector<std::string> candidates(const std::string& stem) {
  std::vector<std::string> out = {stem + ".so.13", stem + ".so"};
  for (std::string dir :
       {std::string(DIETCODE_CUDA_LIBRARY_DIR), std::string("/usr/local/cuda/lib64")}) {
    for (const std::string& name : {stem + ".so.13", stem + ".so"}) {
      const std::string path = dir + "/" + name;
      bool seen = false;
      for (const std::string& o : out) seen = seen || o == path;
      if (!seen) out.push_back(path);
    }
  }
  return out;
}

// The first of `files` that loads, or null with *why saying what `what` lacks. Never
// dlclose'd: cuBLAS keeps threads and GPU state for the life of the process.
void* open_first(const std::vector<std::string>& files, const char* what, std::string* path,
                 std::string* why) {
  if (void* handle = dlopen_first(files, path, why)) return handle;
  *why =
      std::string("no ") + what + ": " + *why + "; run with --baseline none to time the pack alone";
  return nullptr;
}

template <typename Fn>
bool resolve(void* handle, const std::string& path, const char* name, Fn& fn, std::string* why) {
  if (dlsym_into(handle, name, fn)) return true;
  *why = "no cuBLAS: " + path + " has no " + name + " (a cuBLAS from CUDA 12 or newer is needed)";
  return false;
}

}  // namespace

std::vector<std::string> cublas_candidates() { return candidates("libcublas"); }
std::vector<std::string> cublaslt_candidates() { return candidates("libcublasLt"); }

bool load_cublas(const std::vector<std::string>& cublas_files,
                 const std::vector<std::string>& cublaslt_files, CublasApi* out, std::string* why) {
  CublasApi api;
  void* lt = open_first(cublaslt_files, "cuBLASLt", &api.cublaslt_path, why);
  if (!lt) return false;
  void* blas = open_first(cublas_files, "cuBLAS", &api.cublas_path, why);
  if (!blas) return false;
  const std::string& b = api.cublas_path;
  const std::string& l = api.cublaslt_path;
#define DIETCODE_RESOLVE(handle, path, name) resolve(handle, path, #name, api.name, why)
  const bool ok =
      DIETCODE_RESOLVE(blas, b, cublasCreate_v2) && DIETCODE_RESOLVE(blas, b, cublasDestroy_v2) &&
      DIETCODE_RESOLVE(blas, b, cublasSetStream_v2) &&
      DIETCODE_RESOLVE(blas, b, cublasSetWorkspace_v2) &&
      DIETCODE_RESOLVE(blas, b, cublasSetMathMode) &&
      DIETCODE_RESOLVE(blas, b, cublasGetStatusString) &&
      DIETCODE_RESOLVE(blas, b, cublasSgemm_v2) && DIETCODE_RESOLVE(blas, b, cublasGemmEx) &&
      DIETCODE_RESOLVE(blas, b, cublasSgemmStridedBatched) &&
      DIETCODE_RESOLVE(blas, b, cublasGemmStridedBatchedEx) &&
      DIETCODE_RESOLVE(lt, l, cublasLtGetVersion) && DIETCODE_RESOLVE(lt, l, cublasLtCreate) &&
      DIETCODE_RESOLVE(lt, l, cublasLtDestroy) && DIETCODE_RESOLVE(lt, l, cublasLtMatmul) &&
      DIETCODE_RESOLVE(lt, l, cublasLtMatmulDescCreate) &&
      DIETCODE_RESOLVE(lt, l, cublasLtMatmulDescSetAttribute) &&
      DIETCODE_RESOLVE(lt, l, cublasLtMatmulDescDestroy) &&
      DIETCODE_RESOLVE(lt, l, cublasLtMatrixLayoutCreate) &&
      DIETCODE_RESOLVE(lt, l, cublasLtMatrixLayoutSetAttribute) &&
      DIETCODE_RESOLVE(lt, l, cublasLtMatrixLayoutDestroy) &&
      DIETCODE_RESOLVE(lt, l, cublasLtMatmulPreferenceCreate) &&
      DIETCODE_RESOLVE(lt, l, cublasLtMatmulPreferenceSetAttribute) &&
      DIETCODE_RESOLVE(lt, l, cublasLtMatmulPreferenceDestroy) &&
      DIETCODE_RESOLVE(lt, l, cublasLtMatmulAlgoGetHeuristic);
#undef DIETCODE_RESOLVE
  if (!ok) return false;
  api.lt_version = api.cublasLtGetVersion();
  *out = api;
  why->clear();
  return true;
}

const CublasApi& cublas_api() {
  static CublasApi api;
  static std::string why;
  static std::once_flag once;
  std::call_once(once, [] { load_cublas(cublas_candidates(), cublaslt_candidates(), &api, &why); });
  if (!why.empty()) throw EnvironmentError(why);
  return api;
}

std::string cublas_status_name(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS:
      return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR:
      return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR:
      return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "cublasStatus_t " + std::to_string(int(status));
}

void check_cublas(const CublasApi& api, cublasStatus_t status, const std::string& what) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  std::string message = what + ": " + cublas_status_name(status);
  const char* text = api.cublasGetStatusString ? api.cublasGetStatusString(status) : nullptr;
  if (text && *text) message += std::string(" (") + text + ")";
  throw EnvironmentError(message);
}

}  // namespace dietcode

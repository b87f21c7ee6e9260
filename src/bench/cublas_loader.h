// cuBLAS and cuBLASLt, reached at run time and never linked: the baselines `dietcode bench`
// compares kernel packs against.
//
// Why dlopen: dietcode runs (validate, build, inspect) on machines with no GPU and possibly no
// cuBLAS; linking libcublas would make the binary need it to start and would add ~600 MB of
// dependencies to every installation. So libcublasLt and libcublas are opened on first use,
// by soname (libcublas.so.13), then unversioned, then from the toolkit's library folder.
//
// The function-pointer types are the headers' own declarations (decltype), so a signature
// can never drift from the library's. Only cublasGemmEx and cublasGemmStridedBatchedEx are
// spelled out: cublas_api.h overloads them in C++ with a legacy inline wrapper.
//
// libcublas loads its CUDA runtime statically and dlopens libcuda itself, so both libraries
// load on machines without a driver; only cublasCreate then fails.
#pragma once

#include <cublasLt.h>
#include <cublas_api.h>

#include <string>
#include <vector>

#include "common/error.h"

namespace dietcode {

using PFN_cublasGemmEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t,
                                            int, int, int, const void*, const void*, cudaDataType,
                                            int, const void*, cudaDataType, int, const void*, void*,
                                            cudaDataType, int, cublasComputeType_t,
                                            cublasGemmAlgo_t);
using PFN_cublasGemmStridedBatchedEx = cublasStatus_t (*)(
    cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*, const void*,
    cudaDataType, int, long long, const void*, cudaDataType, int, long long, const void*, void*,
    cudaDataType, int, long long, int, cublasComputeType_t, cublasGemmAlgo_t);

struct CublasApi {
  std::string cublas_path;  // the files actually opened, for the report
  std::string cublaslt_path;
  size_t lt_version = 0;  // cublasLtGetVersion(): 130000 + ... for 13.0.x

  // cuBLAS.
  decltype(&::cublasCreate_v2) cublasCreate_v2 = nullptr;
  decltype(&::cublasDestroy_v2) cublasDestroy_v2 = nullptr;
  decltype(&::cublasSetStream_v2) cublasSetStream_v2 = nullptr;
  decltype(&::cublasSetWorkspace_v2) cublasSetWorkspace_v2 = nullptr;
  decltype(&::cublasSetMathMode) cublasSetMathMode = nullptr;
  decltype(&::cublasGetStatusString) cublasGetStatusString = nullptr;
  decltype(&::cublasSgemm_v2) cublasSgemm_v2 = nullptr;
  PFN_cublasGemmEx cublasGemmEx = nullptr;
  decltype(&::cublasSgemmStridedBatched) cublasSgemmStridedBatched = nullptr;
  PFN_cublasGemmStridedBatchedEx cublasGemmStridedBatchedEx = nullptr;

  // cuBLASLt.
  decltype(&::cublasLtGetVersion) cublasLtGetVersion = nullptr;
  decltype(&::cublasLtCreate) cublasLtCreate = nullptr;
  decltype(&::cublasLtDestroy) cublasLtDestroy = nullptr;
  decltype(&::cublasLtMatmul) cublasLtMatmul = nullptr;
  decltype(&::cublasLtMatmulDescCreate) cublasLtMatmulDescCreate = nullptr;
  decltype(&::cublasLtMatmulDescSetAttribute) cublasLtMatmulDescSetAttribute = nullptr;
  decltype(&::cublasLtMatmulDescDestroy) cublasLtMatmulDescDestroy = nullptr;
  decltype(&::cublasLtMatrixLayoutCreate) cublasLtMatrixLayoutCreate = nullptr;
  decltype(&::cublasLtMatrixLayoutSetAttribute) cublasLtMatrixLayoutSetAttribute = nullptr;
  decltype(&::cublasLtMatrixLayoutDestroy) cublasLtMatrixLayoutDestroy = nullptr;
  decltype(&::cublasLtMatmulPreferenceCreate) cublasLtMatmulPreferenceCreate = nullptr;
  decltype(&::cublasLtMatmulPreferenceSetAttribute) cublasLtMatmulPreferenceSetAttribute = nullptr;
  decltype(&::cublasLtMatmulPreferenceDestroy) cublasLtMatmulPreferenceDestroy = nullptr;
  decltype(&::cublasLtMatmulAlgoGetHeuristic) cublasLtMatmulAlgoGetHeuristic = nullptr;
};

// Where to look, in order: the soname, the unversioned name, then the toolkit's library folder
// that dietcode was built against and /usr/local/cuda/lib64.
std::vector<std::string> cublas_candidates();
std::vector<std::string> cublaslt_candidates();

// Opens the first loadable file of each list (cuBLASLt first: libcublas needs it) and resolves
// every function; false with *why set to one line, e.g. "no cuBLAS: libcublas.so.13: cannot
// open shared object file: No such file or directory (also tried libcublas.so, ...)" or
// "no cuBLAS: /x/libcublas.so.13 has no cublasGemmEx".
bool load_cublas(const std::vector<std::string>& cublas_files,
                 const std::vector<std::string>& cublaslt_files, CublasApi* out, std::string* why);

// The process-wide instance from the default candidates, loaded once; EnvironmentError with
// the line above (exit 2) when it cannot be loaded.
const CublasApi& cublas_api();

// "CUBLAS_STATUS_NOT_SUPPORTED" and the like, without needing the library.
std::string cublas_status_name(cublasStatus_t status);

// Throws EnvironmentError "WHAT: CUBLAS_STATUS_... (library's description)" unless success.
void check_cublas(const CublasApi& api, cublasStatus_t status, const std::string& what);

}  // namespace dietcode

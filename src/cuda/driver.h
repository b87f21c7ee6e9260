// The CUDA Driver API, reached at run time and never linked.
//
// Why: a binary that links libcuda cannot even start on a machine without the NVIDIA driver
// (the dynamic loader fails before main), yet dietcode must validate, build packs and explain
// itself on such machines. So libcuda.so.1 is dlopen'ed on first use and every entry point is
// fetched through cuGetProcAddress with the ABI version its function-pointer type was written
// for (PFN_<name>_v<version> from cudaTypedefs.h). Asking by version, never dlsym'ing the
// plain names, is what keeps a call's signature right when a later driver changes it (CUDA 13
// gave cuCtxSynchronize a context argument, for one).
//
// Use:
//   const Driver& d = driver();           // throws EnvironmentError: no driver / no device
//   check(d.cuMemAlloc(&ptr, n), "cuMemAlloc");
// or, where no GPU is a normal outcome:
//   std::string why;
//   if (const Driver* d = driver_or_null(&why)) ... else report(why);
//
// Loading happens once per process (std::call_once); the result, success or the reason for
// failure, is kept. Field names are the API's own; cuda.h's macros (cuMemAlloc ->
// cuMemAlloc_v2, ...) rename them uniformly in every file that includes this header, which is
// harmless because the lookup strings in driver.cc are literals.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>

#include <string>

#include "common/error.h"

namespace dietcode {

struct Driver {
  int version = 0;  // cuDriverGetVersion: 13000 for CUDA 13.0

  // Initialisation and devices.
  PFN_cuInit_v2000 cuInit = nullptr;
  PFN_cuDriverGetVersion_v2020 cuDriverGetVersion = nullptr;
  PFN_cuDeviceGetCount_v2000 cuDeviceGetCount = nullptr;
  PFN_cuDeviceGet_v2000 cuDeviceGet = nullptr;
  PFN_cuDeviceGetName_v2000 cuDeviceGetName = nullptr;
  PFN_cuDeviceGetAttribute_v2000 cuDeviceGetAttribute = nullptr;
  PFN_cuDeviceTotalMem_v3020 cuDeviceTotalMem = nullptr;

  // Contexts: dietcode uses each device's primary context, the one the runtime API and
  // frameworks such as PyTorch share, so packs launched from those programs see our kernels.
  PFN_cuDevicePrimaryCtxRetain_v7000 cuDevicePrimaryCtxRetain = nullptr;
  PFN_cuDevicePrimaryCtxRelease_v11000 cuDevicePrimaryCtxRelease = nullptr;
  PFN_cuCtxSetCurrent_v4000 cuCtxSetCurrent = nullptr;
  PFN_cuCtxGetCurrent_v4000 cuCtxGetCurrent = nullptr;
  PFN_cuCtxGetDevice_v2000 cuCtxGetDevice = nullptr;      // of the current context
  PFN_cuCtxSynchronize_v2000 cuCtxSynchronize = nullptr;  // the current context

  // Modules and kernels.
  PFN_cuModuleLoadData_v2000 cuModuleLoadData = nullptr;
  PFN_cuModuleLoadDataEx_v2010 cuModuleLoadDataEx = nullptr;
  PFN_cuModuleUnload_v2000 cuModuleUnload = nullptr;
  PFN_cuModuleGetFunction_v2000 cuModuleGetFunction = nullptr;
  PFN_cuFuncSetAttribute_v9000 cuFuncSetAttribute = nullptr;
  PFN_cuFuncGetAttribute_v2020 cuFuncGetAttribute = nullptr;
  PFN_cuLaunchKernel_v4000 cuLaunchKernel = nullptr;
  // Optional (null when the driver lacks it): tensor maps for kernels with a TMA producer.
  // Only those kernels need it, so an older driver still serves everything else.
  PFN_cuTensorMapEncodeTiled_v12000 cuTensorMapEncodeTiled = nullptr;

  // Memory.
  PFN_cuMemAlloc_v3020 cuMemAlloc = nullptr;
  PFN_cuMemFree_v3020 cuMemFree = nullptr;
  PFN_cuMemcpyHtoD_v3020 cuMemcpyHtoD = nullptr;
  PFN_cuMemcpyDtoH_v3020 cuMemcpyDtoH = nullptr;
  PFN_cuMemsetD8_v3020 cuMemsetD8 = nullptr;
  PFN_cuMemsetD32_v3020 cuMemsetD32 = nullptr;
  PFN_cuMemGetInfo_v3020 cuMemGetInfo = nullptr;
  PFN_cuPointerGetAttribute_v4000 cuPointerGetAttribute = nullptr;

  // Streams and events.
  PFN_cuStreamCreate_v2000 cuStreamCreate = nullptr;
  PFN_cuStreamDestroy_v4000 cuStreamDestroy = nullptr;
  PFN_cuStreamSynchronize_v2000 cuStreamSynchronize = nullptr;
  PFN_cuEventCreate_v2000 cuEventCreate = nullptr;
  PFN_cuEventRecord_v2000 cuEventRecord = nullptr;
  PFN_cuEventSynchronize_v2000 cuEventSynchronize = nullptr;
  PFN_cuEventElapsedTime_v2000 cuEventElapsedTime = nullptr;
  PFN_cuEventDestroy_v4000 cuEventDestroy = nullptr;

  // Errors.
  PFN_cuGetErrorName_v6000 cuGetErrorName = nullptr;
  PFN_cuGetErrorString_v6000 cuGetErrorString = nullptr;
};

// The loaded and initialised driver, or null with *why (if given) set to one line such as
// "no CUDA driver: libcuda.so.1: cannot open shared object file: No such file or directory"
// or "no CUDA device: cuInit failed: CUDA_ERROR_NO_DEVICE". Thread-safe; loads once.
const Driver* driver_or_null(std::string* why = nullptr);

// The same, throwing EnvironmentError with that line when there is no usable driver.
const Driver& driver();

// Loads the driver from `library` into *out and initialises it; false with *why set as above.
// driver_or_null() uses it for libcuda.so.1 once; tests hand it a stand-in library.
bool load_driver(const char* library, Driver* out, std::string* why);

// A failed driver call. It is an EnvironmentError (exit 2 when it reaches the CLI), and it
// keeps the code so a caller can tell a bad candidate (CUDA_ERROR_LAUNCH_FAILED) from a broken
// environment (CUDA_ERROR_OUT_OF_MEMORY) and record the first as data.
class CudaError : public EnvironmentError {
 public:
  CudaError(CUresult code, const std::string& message) : EnvironmentError(message), code_(code) {}
  CUresult code() const { return code_; }

 private:
  CUresult code_;
};

// "CUDA_ERROR_OUT_OF_MEMORY" for a code; "CUresult 999" if the driver has no name for it.
std::string cuda_error_name(CUresult code);

// Throws CudaError "WHAT: CUDA_ERROR_NAME (driver's description)".
[[noreturn]] void throw_cuda_error(CUresult code, const char* what);

// Throws that CudaError unless code is CUDA_SUCCESS. Inline: it wraps every driver call.
inline void check(CUresult code, const char* what) {
  if (code != CUDA_SUCCESS) throw_cuda_error(code, what);
}

}  // namespace dietcode

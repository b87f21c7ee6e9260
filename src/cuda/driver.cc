#include "cuda/driver.h"

#include <dlfcn.h>

#include <initializer_list>
#include <mutex>
#include <string>

namespace dietcode {

namespace {

const char kDriverLibrary[] = "libcuda.so.1";

// "12.8" for 12080: how the CUDA version a symbol was introduced in reads in a message.
std::string cuda_version_text(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

// cuGetProcAddress as the driver exports it: the versioned symbol (drivers for CUDA 12.0 on)
// with its status argument, else the CUDA 11.3 one, which reports only a CUresult.
class ProcResolver {
 public:
  ProcResolver(void* handle, const char* library) : library_(library) {
    v2_ = reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(handle, "cuGetProcAddress_v2"));
    if (!v2_) {
      v1_ = reinterpret_cast<PFN_cuGetProcAddress_v11030>(dlsym(handle, "cuGetProcAddress"));
    }
  }

  bool usable() const { return v2_ || v1_; }

  // Fetches `name` with the first of `versions` (newest first) the driver provides; the
  // version fixes the ABI, so it must be the one in the PFN type `fn` was declared with.
  template <typename Fn>
  bool get(Fn& fn, const char* name, std::initializer_list<int> versions, std::string* why) {
    // Legacy-stream flavours: a null stream means the legacy default stream, as it does for
    // the CUDA runtime and for the programs that call a kernel pack.
    const cuuint64_t flags = CU_GET_PROC_ADDRESS_LEGACY_STREAM;
    for (int version : versions) {
      void* pfn = nullptr;
      CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
      CUresult rc =
          v2_ ? v2_(name, &pfn, version, flags, &status) : v1_(name, &pfn, version, flags);
      if (rc == CUDA_SUCCESS && status == CU_GET_PROC_ADDRESS_SUCCESS && pfn) {
        fn = reinterpret_cast<Fn>(pfn);
        return true;
      }
    }
    const int oldest = *(versions.end() - 1);
    *why = "no CUDA driver: " + library_ + " has no " + name + " for the CUDA " +
           cuda_version_text(oldest) + " ABI; update the NVIDIA driver";
    return false;
  }

 private:
  std::string library_;
  PFN_cuGetProcAddress_v12000 v2_ = nullptr;
  PFN_cuGetProcAddress_v11030 v1_ = nullptr;
};

bool resolve_all(ProcResolver& r, Driver* d, std::string* why) {
  // The version beside each name is the one in its PFN type in driver.h; keep them together.
  return r.get(d->cuGetErrorName, "cuGetErrorName", {6000}, why) &&
         r.get(d->cuGetErrorString, "cuGetErrorString", {6000}, why) &&
         r.get(d->cuInit, "cuInit", {2000}, why) &&
         r.get(d->cuDriverGetVersion, "cuDriverGetVersion", {2020}, why) &&
         r.get(d->cuDeviceGetCount, "cuDeviceGetCount", {2000}, why) &&
         r.get(d->cuDeviceGet, "cuDeviceGet", {2000}, why) &&
         r.get(d->cuDeviceGetName, "cuDeviceGetName", {2000}, why) &&
         r.get(d->cuDeviceGetAttribute, "cuDeviceGetAttribute", {2000}, why) &&
         r.get(d->cuDeviceTotalMem, "cuDeviceTotalMem", {3020}, why) &&
         r.get(d->cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", {7000}, why) &&
         r.get(d->cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease", {11000}, why) &&
         r.get(d->cuCtxSetCurrent, "cuCtxSetCurrent", {4000}, why) &&
         r.get(d->cuCtxGetCurrent, "cuCtxGetCurrent", {4000}, why) &&
         r.get(d->cuCtxGetDevice, "cuCtxGetDevice", {2000}, why) &&
         r.get(d->cuCtxSynchronize, "cuCtxSynchronize", {2000}, why) &&
         r.get(d->cuModuleLoadData, "cuModuleLoadData", {2000}, why) &&
         r.get(d->cuModuleLoadDataEx, "cuModuleLoadDataEx", {2010}, why) &&
         r.get(d->cuModuleUnload, "cuModuleUnload", {2000}, why) &&
         r.get(d->cuModuleGetFunction, "cuModuleGetFunction", {2000}, why) &&
         r.get(d->cuFuncSetAttribute, "cuFuncSetAttribute", {9000}, why) &&
         r.get(d->cuFuncGetAttribute, "cuFuncGetAttribute", {2020}, why) &&
         r.get(d->cuLaunchKernel, "cuLaunchKernel", {4000}, why) &&
         r.get(d->cuMemAlloc, "cuMemAlloc", {3020}, why) &&
         r.get(d->cuMemFree, "cuMemFree", {3020}, why) &&
         r.get(d->cuMemcpyHtoD, "cuMemcpyHtoD", {3020}, why) &&
         r.get(d->cuMemcpyDtoH, "cuMemcpyDtoH", {3020}, why) &&
         r.get(d->cuMemsetD8, "cuMemsetD8", {3020}, why) &&
         r.get(d->cuMemsetD32, "cuMemsetD32", {3020}, why) &&
         r.get(d->cuMemGetInfo, "cuMemGetInfo", {3020}, why) &&
         r.get(d->cuPointerGetAttribute, "cuPointerGetAttribute", {4000}, why) &&
         r.get(d->cuStreamCreate, "cuStreamCreate", {2000}, why) &&
         r.get(d->cuStreamDestroy, "cuStreamDestroy", {4000}, why) &&
         r.get(d->cuStreamSynchronize, "cuStreamSynchronize", {2000}, why) &&
         r.get(d->cuEventCreate, "cuEventCreate", {2000}, why) &&
         r.get(d->cuEventRecord, "cuEventRecord", {2000}, why) &&
         r.get(d->cuEventSynchronize, "cuEventSynchronize", {2000}, why) &&
         // 12.8 re-issued it with the same signature; older drivers have only the first.
         r.get(d->cuEventElapsedTime, "cuEventElapsedTime", {12080, 2000}, why) &&
         r.get(d->cuEventDestroy, "cuEventDestroy", {4000}, why);
}

std::string error_name(const Driver& d, CUresult code) {
  const char* name = nullptr;
  if (d.cuGetErrorName && d.cuGetErrorName(code, &name) == CUDA_SUCCESS && name) return name;
  return "CUresult " + std::to_string(static_cast<int>(code));
}

struct LoadedDriver {
  Driver driver;
  std::string why;  // empty when the driver is usable
};

const LoadedDriver& loaded() {
  static LoadedDriver result;
  static std::once_flag once;
  std::call_once(once, [] { load_driver(kDriverLibrary, &result.driver, &result.why); });
  return result;
}

}  // namespace

bool load_driver(const char* library, Driver* out, std::string* why) {
  // Never dlclose'd: the driver keeps threads and state for the life of the process.
  void* handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* reason = dlerror();
    *why = std::string("no CUDA driver: ") + (reason ? reason : library);
    return false;
  }
  ProcResolver resolver(handle, library);
  if (!resolver.usable()) {
    *why = std::string("no CUDA driver: ") + library +
           " has no cuGetProcAddress (a driver for CUDA 11.3 or newer is needed)";
    return false;
  }
  Driver d;
  if (!resolve_all(resolver, &d, why)) return false;
  std::string optional_missing;  // the reason is not needed: a TMA launch reports the gap
  if (!resolver.get(d.cuTensorMapEncodeTiled, "cuTensorMapEncodeTiled", {12000}, &optional_missing))
    d.cuTensorMapEncodeTiled = nullptr;
  if (CUresult rc = d.cuInit(0); rc != CUDA_SUCCESS) {
    *why = "no CUDA device: cuInit failed: " + error_name(d, rc);
    return false;
  }
  if (CUresult rc = d.cuDriverGetVersion(&d.version); rc != CUDA_SUCCESS) {
    *why = "no CUDA driver: cuDriverGetVersion failed: " + error_name(d, rc);
    return false;
  }
  *out = d;
  why->clear();
  return true;
}

const Driver* driver_or_null(std::string* why) {
  const LoadedDriver& l = loaded();
  if (!l.why.empty()) {
    if (why) *why = l.why;
    return nullptr;
  }
  return &l.driver;
}

const Driver& driver() {
  std::string why;
  const Driver* d = driver_or_null(&why);
  if (!d) throw EnvironmentError(why);
  return *d;
}

std::string cuda_error_name(CUresult code) {
  const Driver* d = driver_or_null();
  return d ? error_name(*d, code) : "CUresult " + std::to_string(static_cast<int>(code));
}

void throw_cuda_error(CUresult code, const char* what) {
  std::string message = std::string(what) + ": " + cuda_error_name(code);
  const char* text = nullptr;
  const Driver* d = driver_or_null();
  if (d && d->cuGetErrorString(code, &text) == CUDA_SUCCESS && text) {
    message += std::string(" (") + text + ")";
  }
  throw CudaError(code, message);
}

}  // namespace dietcode

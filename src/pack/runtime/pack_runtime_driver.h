/* The driver as a kernel pack's loader runtime sees it: libcuda.so.1 opened with dlopen on
 * first use and every entry point fetched with cuGetProcAddress at the ABI version its
 * signature was written for (never dlsym of unsuffixed names, whose ABI is the oldest one).
 * Part of pack_runtime.cc (included by it, and only by it), kept apart to keep each file about
 * one thing; unload_pack there closes what this opens. */
#ifndef DIETCODE_PACK_RUNTIME_DRIVER_H_
#define DIETCODE_PACK_RUNTIME_DRIVER_H_

#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>

#include <atomic>
#include <mutex>
#include <string>
#include <type_traits>

#include "pack_runtime_checks.h"

namespace dietcode_pack {
namespace {

// ---- the driver ----------------------------------------------------------------------------

// Entry points as of CUDA 12.0: every one used here has had this signature since then, so a
// 12.x driver serves the pack as well as a 13.x one.
constexpr int kDriverApi = 12000;

struct Driver {
  int status = DIETCODE_ERR_NO_DEVICE;
  std::string why;
  void* lib = nullptr;
  PFN_cuGetErrorName_v6000 GetErrorName = nullptr;
  PFN_cuGetErrorString_v6000 GetErrorString = nullptr;
  PFN_cuInit_v2000 Init = nullptr;
  PFN_cuDeviceGet_v2000 DeviceGet = nullptr;
  PFN_cuDeviceGetAttribute_v2000 DeviceGetAttribute = nullptr;
  PFN_cuDevicePrimaryCtxRetain_v7000 DevicePrimaryCtxRetain = nullptr;
  PFN_cuDevicePrimaryCtxRelease_v11000 DevicePrimaryCtxRelease = nullptr;
  PFN_cuDevicePrimaryCtxGetState_v7000 DevicePrimaryCtxGetState = nullptr;
  PFN_cuCtxGetCurrent_v4000 CtxGetCurrent = nullptr;
  PFN_cuCtxSetCurrent_v4000 CtxSetCurrent = nullptr;
  PFN_cuCtxGetDevice_v2000 CtxGetDevice = nullptr;
  PFN_cuCtxGetId_v12000 CtxGetId = nullptr;
  PFN_cuModuleLoadDataEx_v2010 ModuleLoadDataEx = nullptr;
  PFN_cuModuleUnload_v2000 ModuleUnload = nullptr;
  PFN_cuModuleGetFunction_v2000 ModuleGetFunction = nullptr;
  PFN_cuFuncSetAttribute_v9000 FuncSetAttribute = nullptr;
  PFN_cuLaunchKernel_v4000 LaunchKernel = nullptr;
  PFN_cuMemPoolCreate_v11020 MemPoolCreate = nullptr;
  PFN_cuMemPoolSetAttribute_v11020 MemPoolSetAttribute = nullptr;
  PFN_cuMemPoolDestroy_v11020 MemPoolDestroy = nullptr;
  PFN_cuMemAllocFromPoolAsync_v11020 MemAllocFromPoolAsync = nullptr;
  PFN_cuMemFreeAsync_v11020 MemFreeAsync = nullptr;
  PFN_cuMemAlloc_v3020 MemAlloc = nullptr;
  PFN_cuMemFree_v3020 MemFree = nullptr;
  PFN_cuStreamSynchronize_v2000 StreamSynchronize = nullptr;
  PFN_cuStreamGetId_v12000 StreamGetId = nullptr;
  PFN_cuStreamIsCapturing_v10000 StreamIsCapturing = nullptr;
  // Optional: only kernels with a TMA producer need it, and a pack without them runs on a
  // driver that lacks it. Null then; such a kernel's launch says so.
  PFN_cuTensorMapEncodeTiled_v12000 TensorMapEncodeTiled = nullptr;
};

void load_driver(Driver& d) {
  void* lib = d.lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    d.why = "no NVIDIA driver: cannot load libcuda.so.1";
    return;
  }
  auto get_proc = reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(lib, "cuGetProcAddress_v2"));
  if (!get_proc) {
    d.why = "the NVIDIA driver is too old: libcuda.so.1 has no cuGetProcAddress_v2 (CUDA 12.0+)";
    return;
  }
  bool ok = true;
  auto get = [&](const char* name, auto& fn) {
    void* p = nullptr;
    CUdriverProcAddressQueryResult found;
    if (get_proc(name, &p, kDriverApi, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &found) != CUDA_SUCCESS ||
        !p) {
      if (ok) d.why = std::string("the NVIDIA driver lacks ") + name;
      ok = false;
      return;
    }
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
  };
  get("cuGetErrorName", d.GetErrorName);
  get("cuGetErrorString", d.GetErrorString);
  get("cuInit", d.Init);
  get("cuDeviceGet", d.DeviceGet);
  get("cuDeviceGetAttribute", d.DeviceGetAttribute);
  get("cuDevicePrimaryCtxRetain", d.DevicePrimaryCtxRetain);
  get("cuDevicePrimaryCtxRelease", d.DevicePrimaryCtxRelease);
  get("cuDevicePrimaryCtxGetState", d.DevicePrimaryCtxGetState);
  get("cuCtxGetCurrent", d.CtxGetCurrent);
  get("cuCtxSetCurrent", d.CtxSetCurrent);
  get("cuCtxGetDevice", d.CtxGetDevice);
  get("cuCtxGetId", d.CtxGetId);
  get("cuModuleLoadDataEx", d.ModuleLoadDataEx);
  get("cuModuleUnload", d.ModuleUnload);
  get("cuModuleGetFunction", d.ModuleGetFunction);
  get("cuFuncSetAttribute", d.FuncSetAttribute);
  get("cuLaunchKernel", d.LaunchKernel);
  get("cuMemPoolCreate", d.MemPoolCreate);
  get("cuMemPoolSetAttribute", d.MemPoolSetAttribute);
  get("cuMemPoolDestroy", d.MemPoolDestroy);
  get("cuMemAllocFromPoolAsync", d.MemAllocFromPoolAsync);
  get("cuMemFreeAsync", d.MemFreeAsync);
  get("cuMemAlloc", d.MemAlloc);
  get("cuMemFree", d.MemFree);
  get("cuStreamSynchronize", d.StreamSynchronize);
  get("cuStreamGetId", d.StreamGetId);
  get("cuStreamIsCapturing", d.StreamIsCapturing);
  if (!ok) return;
  {
    void* p = nullptr;
    CUdriverProcAddressQueryResult found;
    if (get_proc("cuTensorMapEncodeTiled", &p, kDriverApi, CU_GET_PROC_ADDRESS_LEGACY_STREAM,
                 &found) == CUDA_SUCCESS &&
        found == CU_GET_PROC_ADDRESS_SUCCESS)
      d.TensorMapEncodeTiled = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  }
  CUresult r = d.Init(0);
  if (r == CUDA_ERROR_NO_DEVICE) {
    d.why = "no CUDA-capable GPU found (the driver is installed)";
    return;
  }
  if (r != CUDA_SUCCESS) {
    const char* name = "?";
    d.GetErrorName(r, &name);
    d.why = std::string("cuInit failed: ") + name;
    return;
  }
  d.status = DIETCODE_OK;
}

// Loaded once per load of the pack (a driver does not appear or vanish while a program runs),
// on first use, and closed by unload_pack. Plain pointers, created and freed by hand, so that
// nothing here depends on the order of static destructors at dlclose or exit.
std::atomic<Driver*> g_driver{nullptr};
std::mutex* g_driver_mu = new std::mutex;  // freed by unload_pack

const Driver& driver() {
  if (Driver* d = g_driver.load(std::memory_order_acquire)) return *d;
  std::lock_guard<std::mutex> lock(*g_driver_mu);
  if (!g_driver.load(std::memory_order_relaxed)) {
    auto* d = new Driver;
    load_driver(*d);
    g_driver.store(d, std::memory_order_release);
  }
  return *g_driver.load(std::memory_order_relaxed);
}

int cuda_fail(CUresult r, const char* what, const char* op) {
  const char* name = "CUDA_ERROR_UNKNOWN";
  const char* text = "";
  driver().GetErrorName(r, &name);
  driver().GetErrorString(r, &text);
  return fail(DIETCODE_ERR_CUDA, "op %s: %s failed: %s (%s)", op, what, name, text);
}

}  // namespace
}  // namespace dietcode_pack

#endif /* DIETCODE_PACK_RUNTIME_DRIVER_H_ */

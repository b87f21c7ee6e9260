// What the pack stress client (pack_stress.cc) works with: the kernel pack it loads and
// unloads, and the stand-in driver (a TEST DOUBLE, tests/data/fake_driver) it reaches through
// cuGetProcAddress as any program would, plus the double's counters.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "fake_driver/fake_cuda_stats.h"

namespace stress {

// The driver calls the client makes itself: contexts and streams to launch from, and a direct
// launch for the overhead comparison.
struct Driver {
  void* lib = nullptr;
  PFN_cuInit_v2000 Init = nullptr;
  PFN_cuDevicePrimaryCtxRetain_v7000 PrimaryCtxRetain = nullptr;
  PFN_cuDevicePrimaryCtxRelease_v11000 PrimaryCtxRelease = nullptr;
  PFN_cuCtxGetCurrent_v4000 CtxGetCurrent = nullptr;
  PFN_cuCtxSetCurrent_v4000 CtxSetCurrent = nullptr;
  PFN_cuStreamCreate_v2000 StreamCreate = nullptr;
  PFN_cuStreamDestroy_v4000 StreamDestroy = nullptr;
  PFN_cuStreamSynchronize_v2000 StreamSynchronize = nullptr;
  PFN_cuModuleLoadDataEx_v2010 ModuleLoadDataEx = nullptr;
  PFN_cuMemAlloc_v3020 MemAlloc = nullptr;
  PFN_cuMemFree_v3020 MemFree = nullptr;
  bool real = false;  // a real driver (allowed for the bench scenario): no counters
  PFN_cuModuleUnload_v2000 ModuleUnload = nullptr;
  PFN_cuModuleGetFunction_v2000 ModuleGetFunction = nullptr;
  PFN_cuLaunchKernel_v4000 LaunchKernel = nullptr;
  FakeCudaStatsFn stats_fn = nullptr;
  long long (*stream_launches)(CUstream) = nullptr;

  // False (with a message on stderr) when libcuda.so.1 is not the test double, unless
  // allow_real: then a real driver is used as it is, without the double's counters.
  bool open(bool allow_real = false) {
    lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return std::fprintf(stderr, "dlopen libcuda.so.1: %s\n", dlerror()), false;
    auto get_proc =
        reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(lib, "cuGetProcAddress_v2"));
    stats_fn = reinterpret_cast<FakeCudaStatsFn>(dlsym(lib, "fake_cuda_stats"));
    stream_launches =
        reinterpret_cast<long long (*)(CUstream)>(dlsym(lib, "fake_cuda_stream_launches"));
    real = allow_real && get_proc && !stats_fn;
    if (!get_proc || (!real && (!stats_fn || !stream_launches)))
      return std::fprintf(stderr, "libcuda.so.1 is not the fake driver\n"), false;
    bool ok = true;
    auto get = [&](const char* name, auto& fn) {
      void* p = nullptr;
      CUdriverProcAddressQueryResult found;
      if (get_proc(name, &p, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &found) != CUDA_SUCCESS || !p)
        ok = false;
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
    };
    get("cuInit", Init);
    get("cuDevicePrimaryCtxRetain", PrimaryCtxRetain);
    get("cuDevicePrimaryCtxRelease", PrimaryCtxRelease);
    get("cuCtxGetCurrent", CtxGetCurrent);
    get("cuCtxSetCurrent", CtxSetCurrent);
    get("cuStreamCreate", StreamCreate);
    get("cuStreamDestroy", StreamDestroy);
    get("cuStreamSynchronize", StreamSynchronize);
    get("cuModuleLoadDataEx", ModuleLoadDataEx);
    get("cuModuleUnload", ModuleUnload);
    get("cuModuleGetFunction", ModuleGetFunction);
    get("cuLaunchKernel", LaunchKernel);
    get("cuMemAlloc", MemAlloc);
    get("cuMemFree", MemFree);
    if (!ok || Init(0) != CUDA_SUCCESS)
      return std::fprintf(stderr, "the fake driver does not serve kernels\n"), false;
    return true;
  }

  FakeCudaStats stats() const {
    FakeCudaStats s;
    stats_fn(&s);
    return s;
  }
};

// The pack's C ABI (include/dietcode/pack_abi.h), through dlopen.
struct Pack {
  void* lib = nullptr;
  int (*select)(const char*, const int64_t*, int) = nullptr;
  int (*launch)(const char*, void* const*, int, const int64_t*, int, void*) = nullptr;
  const char* (*last_error)() = nullptr;

  bool open(const std::string& path) {
    lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) return std::fprintf(stderr, "dlopen %s: %s\n", path.c_str(), dlerror()), false;
    select = reinterpret_cast<decltype(select)>(dlsym(lib, "dietcode_select"));
    launch = reinterpret_cast<decltype(launch)>(dlsym(lib, "dietcode_launch"));
    last_error = reinterpret_cast<decltype(last_error)>(dlsym(lib, "dietcode_last_error"));
    if (!select || !launch || !last_error)
      return std::fprintf(stderr, "%s: not a dietcode pack\n", path.c_str()), false;
    return true;
  }
  bool close() {
    bool ok = dlclose(lib) == 0;
    lib = nullptr;
    return ok;
  }
};

}  // namespace stress

/* A stand-in for libcuda.so.1: a TEST DOUBLE, never a measurement.
 *
 * It lets the driver loader, `dietcode devices` and kernel packs be tested on machines without
 * a GPU. It exports what a real driver exports for our loaders (cuGetProcAddress_v2),
 * describes GPUs with the limits of an H100 PCIe under a name that says it is a test double,
 * and records which entry points were asked for at which ABI version, so a test can check the
 * loader asks by version. Environment knobs, read on every call:
 *   FAKE_CUDA_INIT_RESULT=N   cuInit returns CUresult N (100: CUDA_ERROR_NO_DEVICE)
 *   FAKE_CUDA_MISSING=NAME    cuGetProcAddress reports NAME as not found (a driver older
 *                             than the entry point: cuTensorMapEncodeTiled for a CUDA 11 one)
 *   FAKE_CUDA_DEVICES=N       N devices (default 1, at most 8)
 *   FAKE_CUDA_CC=90,80        compute capability of device 0, 1, ... (default 90 for all)
 *   FAKE_CUDA_KERNELS=1       also serve primary contexts, streams, modules, launches and
 *                             memory (fake_cuda_context.c, _module.c, _memory.c): enough for a
 *                             kernel pack to load and launch, with nothing run, and the tensor
 *                             maps of TMA kernels (fake_cuda_tensor_map.c)
 *   FAKE_CUDA_NO_POOLS=1      a device without memory pools
 *   FAKE_CUDA_MAX_ALLOC=B     allocations above B bytes fail (default 1 GiB)
 * Without FAKE_CUDA_KERNELS only the initialisation and device-query calls do anything, as a
 * driver that cannot run kernels; every other entry point returns CUDA_ERROR_NOT_SUPPORTED.
 * Thread-safe: kernels may be launched from any number of threads at once. Once its destructor
 * has run (at exit), the calls that free or use objects answer CUDA_ERROR_DEINITIALIZED.
 * fake_cuda_stats() (fake_cuda_stats.h) reports live objects and launch counts. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_cuda_internal.h"
#include "fake_cuda_stats.h"

struct fake_state g_fake = {.mu = PTHREAD_MUTEX_INITIALIZER};

static pthread_mutex_t requests_mu = PTHREAD_MUTEX_INITIALIZER;
static char requests[8192];

int fake_device_count(void) {
  const char* text = getenv("FAKE_CUDA_DEVICES");
  int n = text ? atoi(text) : 1;
  return n < 1 ? 1 : n > FAKE_MAX_DEVICES ? FAKE_MAX_DEVICES : n;
}

int fake_device_cc(int device) {
  const char* text = getenv("FAKE_CUDA_CC");
  int cc = 90;
  for (int i = 0; text && *text; ++i) {
    char* end;
    long value = strtol(text, &end, 10);
    if (end == text) break;
    cc = (int)value; /* a device past the list gets the last one */
    if (i == device) break;
    text = *end == ',' ? end + 1 : end;
  }
  return cc;
}

static int kernels_enabled(void) {
  const char* on = getenv("FAKE_CUDA_KERNELS");
  return on && *on && strcmp(on, "0") != 0;
}

static CUresult fake_init(unsigned int flags) {
  const char* forced = getenv("FAKE_CUDA_INIT_RESULT");
  (void)flags;
  return forced ? (CUresult)atoi(forced) : CUDA_SUCCESS;
}

static CUresult fake_driver_get_version(int* version) {
  *version = 13000;
  return CUDA_SUCCESS;
}

static CUresult fake_device_get_count(int* count) {
  *count = fake_device_count();
  return CUDA_SUCCESS;
}

static CUresult fake_device_get(CUdevice* device, int ordinal) {
  if (ordinal < 0 || ordinal >= fake_device_count()) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

static CUresult fake_device_get_name(char* name, int length, CUdevice device) {
  (void)device;
  snprintf(name, (size_t)length, "Test double of an NVIDIA H100 PCIe");
  return CUDA_SUCCESS;
}

static CUresult fake_device_get_attribute(int* value, CUdevice_attribute attribute,
                                          CUdevice device) {
  if (device < 0 || device >= fake_device_count()) return CUDA_ERROR_INVALID_DEVICE;
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      *value = fake_device_cc(device) / 10;
      break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
      *value = fake_device_cc(device) % 10;
      break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:
      *value = fake_pools_supported();
      break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
      *value = 114;
      break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
      *value = 32;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      *value = 1024;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
      *value = 2048;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR:
      *value = 32;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR:
      *value = 65536;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK:
      *value = 65536;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
      *value = 49152;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
      *value = 232448;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR:
      *value = 233472;
      break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE:
      *value = 52428800;
      break;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE:
      *value = 1755000;
      break; /* kHz */
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE:
      *value = 1593000;
      break; /* kHz */
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH:
      *value = 5120;
      break;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

static CUresult fake_device_total_mem(size_t* bytes, CUdevice device) {
  (void)device;
  *bytes = (size_t)80 << 30;
  return CUDA_SUCCESS;
}

#define FAKE_ERROR(code) {code, #code}
static const struct {
  CUresult code;
  const char* name;
} error_names[] = {
    FAKE_ERROR(CUDA_SUCCESS),
    FAKE_ERROR(CUDA_ERROR_INVALID_VALUE),
    FAKE_ERROR(CUDA_ERROR_OUT_OF_MEMORY),
    FAKE_ERROR(CUDA_ERROR_NOT_INITIALIZED),
    FAKE_ERROR(CUDA_ERROR_DEINITIALIZED),
    FAKE_ERROR(CUDA_ERROR_NO_DEVICE),
    FAKE_ERROR(CUDA_ERROR_INVALID_DEVICE),
    FAKE_ERROR(CUDA_ERROR_INVALID_IMAGE),
    FAKE_ERROR(CUDA_ERROR_INVALID_CONTEXT),
    FAKE_ERROR(CUDA_ERROR_INVALID_HANDLE),
    FAKE_ERROR(CUDA_ERROR_NOT_FOUND),
    FAKE_ERROR(CUDA_ERROR_CONTEXT_IS_DESTROYED),
    FAKE_ERROR(CUDA_ERROR_NOT_SUPPORTED),
};

static CUresult fake_get_error_name(CUresult code, const char** name) {
  for (size_t i = 0; i < sizeof error_names / sizeof error_names[0]; ++i)
    if (error_names[i].code == code) {
      *name = error_names[i].name;
      return CUDA_SUCCESS;
    }
  *name = NULL;
  return CUDA_ERROR_INVALID_VALUE;
}

static CUresult fake_get_error_string(CUresult code, const char** text) {
  *text = code == CUDA_ERROR_NO_DEVICE ? "no CUDA-capable device is detected" : "fake driver";
  return CUDA_SUCCESS;
}

/* Every other entry point. The loader only stores these pointers; tests never call them. */
static CUresult fake_not_supported(void) { return CUDA_ERROR_NOT_SUPPORTED; }

struct entry {
  const char* name;
  void* fn;
};

static const struct entry entries[] = {
    {"cuInit", (void*)fake_init},
    {"cuDriverGetVersion", (void*)fake_driver_get_version},
    {"cuDeviceGetCount", (void*)fake_device_get_count},
    {"cuDeviceGet", (void*)fake_device_get},
    {"cuDeviceGetName", (void*)fake_device_get_name},
    {"cuDeviceGetAttribute", (void*)fake_device_get_attribute},
    {"cuDeviceTotalMem", (void*)fake_device_total_mem},
    {"cuGetErrorName", (void*)fake_get_error_name},
    {"cuGetErrorString", (void*)fake_get_error_string},
};

FAKE_EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int version,
                                         cuuint64_t flags, CUdriverProcAddressQueryResult* status) {
  const char* missing = getenv("FAKE_CUDA_MISSING");
  (void)flags;
  pthread_mutex_lock(&requests_mu);
  size_t used = strlen(requests);
  snprintf(requests + used, sizeof(requests) - used, "%s@%d;", symbol, version);
  pthread_mutex_unlock(&requests_mu);
  *pfn = NULL;
  if (missing && strcmp(missing, symbol) == 0) {
    if (status) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_ERROR_NOT_FOUND;
  }
  for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); ++i) {
    if (strcmp(entries[i].name, symbol) == 0) *pfn = entries[i].fn;
  }
  if (!*pfn && kernels_enabled() && !(*pfn = fake_context_entry(symbol)) &&
      !(*pfn = fake_module_entry(symbol)) && !(*pfn = fake_memory_entry(symbol)))
    *pfn = fake_tensor_map_entry(symbol);
  if (!*pfn) *pfn = (void*)fake_not_supported;
  if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}

/* For tests: "cuInit@2000;cuMemAlloc@3020;..." in the order asked; clears the record. */
FAKE_EXPORT const char* fake_cuda_take_requests(void) {
  static char taken[sizeof(requests)];
  pthread_mutex_lock(&requests_mu);
  memcpy(taken, requests, sizeof(requests));
  requests[0] = '\0';
  pthread_mutex_unlock(&requests_mu);
  return taken;
}

CUresult fake_refuse_after_shutdown(const char* function) {
  const char* trace = getenv("FAKE_CUDA_TRACE_SHUTDOWN");
  if (trace && *trace && strcmp(trace, "0") != 0)
    fprintf(stderr, "fake driver: %s after shutdown: CUDA_ERROR_DEINITIALIZED\n", function);
  return CUDA_ERROR_DEINITIALIZED;
}

/* At exit (or unload) the double shuts down like a driver: later calls are refused. */
__attribute__((destructor)) static void fake_shut_down(void) { atomic_store(&g_fake.shut_down, 1); }

FAKE_EXPORT void fake_cuda_stats(FakeCudaStats* out) {
  out->live_modules = atomic_load(&g_fake.live_modules);
  out->live_allocations = atomic_load(&g_fake.live_allocations);
  out->live_pools = atomic_load(&g_fake.live_pools);
  out->live_streams = atomic_load(&g_fake.live_streams);
  out->retained_contexts = atomic_load(&g_fake.retained);
  out->launches = atomic_load(&g_fake.launches);
  out->rejected_launches = atomic_load(&g_fake.rejected_launches);
  out->modules_loaded = atomic_load(&g_fake.modules_loaded);
  out->allocations = atomic_load(&g_fake.allocations);
  out->tensor_map_encodes = atomic_load(&g_fake.tensor_map_encodes);
}

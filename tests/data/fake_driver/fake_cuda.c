/* A stand-in for libcuda.so.1: a TEST DOUBLE, never a measurement.
 *
 * It lets the driver loader and `dietcode devices` be tested on machines without a GPU. It
 * exports what a real driver exports for our loader (cuGetProcAddress_v2), describes one GPU
 * with the limits of an H100 PCIe under a name that says it is a test double, and records
 * which entry points were asked for at which ABI version, so a test can check the loader asks
 * by version. Environment knobs, read on every call:
 *   FAKE_CUDA_INIT_RESULT=N   cuInit returns CUresult N (100: CUDA_ERROR_NO_DEVICE)
 *   FAKE_CUDA_MISSING=NAME    cuGetProcAddress reports NAME as not found
 * Only the initialisation and device-query calls do anything; every other entry point returns
 * CUDA_ERROR_NOT_SUPPORTED. */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAKE_EXPORT __attribute__((visibility("default")))

static char requests[8192];

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
  *count = 1;
  return CUDA_SUCCESS;
}

static CUresult fake_device_get(CUdevice* device, int ordinal) {
  if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
  *device = 0;
  return CUDA_SUCCESS;
}

static CUresult fake_device_get_name(char* name, int length, CUdevice device) {
  (void)device;
  snprintf(name, (size_t)length, "Test double of an NVIDIA H100 PCIe");
  return CUDA_SUCCESS;
}

static CUresult fake_device_get_attribute(int* value, CUdevice_attribute attribute,
                                          CUdevice device) {
  (void)device;
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      *value = 9;
      break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
      *value = 0;
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

static CUresult fake_get_error_name(CUresult code, const char** name) {
  switch (code) {
    case CUDA_SUCCESS:
      *name = "CUDA_SUCCESS";
      break;
    case CUDA_ERROR_NO_DEVICE:
      *name = "CUDA_ERROR_NO_DEVICE";
      break;
    case CUDA_ERROR_NOT_SUPPORTED:
      *name = "CUDA_ERROR_NOT_SUPPORTED";
      break;
    default:
      *name = NULL;
      return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
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
  size_t used = strlen(requests);
  (void)flags;
  snprintf(requests + used, sizeof(requests) - used, "%s@%d;", symbol, version);
  *pfn = NULL;
  if (missing && strcmp(missing, symbol) == 0) {
    if (status) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_ERROR_NOT_FOUND;
  }
  for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); ++i) {
    if (strcmp(entries[i].name, symbol) == 0) *pfn = entries[i].fn;
  }
  if (!*pfn) *pfn = (void*)fake_not_supported;
  if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}

/* For tests: "cuInit@2000;cuMemAlloc@3020;..." in the order asked; clears the record. */
FAKE_EXPORT const char* fake_cuda_take_requests(void) {
  static char taken[sizeof(requests)];
  memcpy(taken, requests, sizeof(requests));
  requests[0] = '\0';
  return taken;
}

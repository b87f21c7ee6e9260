/* What the stand-in libcuda.so.1 (a TEST DOUBLE, tests/data/fake_driver) counts, for tests that
 * check a program leaks no driver object and launched what it should. Read it with
 *   void (*stats)(FakeCudaStats*) = dlsym(dlopen("libcuda.so.1", RTLD_NOW), "fake_cuda_stats");
 * Counters are process-wide and updated atomically; "live" ones go down again when the object
 * is released. */
#ifndef DIETCODE_FAKE_CUDA_STATS_H_
#define DIETCODE_FAKE_CUDA_STATS_H_

#include <stdint.h>

typedef struct FakeCudaStats {
  int64_t live_modules;       /* loaded and not yet unloaded, over all contexts */
  int64_t live_allocations;   /* cuMemAlloc / cuMemAllocFromPoolAsync not yet freed */
  int64_t live_pools;         /* cuMemPoolCreate not yet destroyed */
  int64_t live_streams;       /* cuStreamCreate not yet destroyed */
  int64_t retained_contexts;  /* sum over devices of the primary context's retain count */
  int64_t launches;           /* successful cuLaunchKernel calls */
  int64_t rejected_launches;  /* cuLaunchKernel calls that returned an error */
  int64_t modules_loaded;     /* cuModuleLoadDataEx successes, ever */
  int64_t allocations;        /* successful allocations, ever */
  int64_t tensor_map_encodes; /* successful cuTensorMapEncodeTiled calls, ever */
} FakeCudaStats;

typedef void (*FakeCudaStatsFn)(FakeCudaStats*);

/* A tensor map as cuTensorMapEncodeTiled was told it (enums as their CUresult-style values).
 *   int (*last)(FakeTensorMap*, int max) = dlsym(driver, "fake_cuda_last_tensor_maps");
 * gives the maps the calling thread's last successful cuLaunchKernel received (kernels whose
 * image declares parameters after DietcodeArgs), returning how many (0 for other kernels);
 *   int (*decode)(const void* map, FakeTensorMap*) = dlsym(driver, "fake_cuda_decode_tensor_map");
 * reads one map (1, or 0 when the bytes are not a map the double encoded). */
#define FAKE_MAX_TENSOR_MAPS 4
typedef struct FakeTensorMap {
  int rank, data_type, interleave, swizzle, l2_promotion, oob_fill;
  uint64_t base;
  uint64_t dims[5];
  uint64_t strides[4]; /* bytes, of dimensions 1..rank-1 */
  uint32_t box[5];
  uint32_t element_strides[5];
} FakeTensorMap;

typedef int (*FakeCudaLastTensorMapsFn)(FakeTensorMap*, int);
typedef int (*FakeCudaDecodeTensorMapFn)(const void*, FakeTensorMap*);

#endif /* DIETCODE_FAKE_CUDA_STATS_H_ */

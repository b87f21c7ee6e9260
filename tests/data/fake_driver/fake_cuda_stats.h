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
} FakeCudaStats;

typedef void (*FakeCudaStatsFn)(FakeCudaStats*);

#endif /* DIETCODE_FAKE_CUDA_STATS_H_ */

/* Shared state of the stand-in libcuda.so.1, a TEST DOUBLE (see fake_cuda.c): the objects it
 * hands out and the counters behind fake_cuda_stats(). Every handle begins with a magic word
 * so a call given a wrong or stale handle fails as a driver would, instead of crashing. */
#ifndef DIETCODE_FAKE_CUDA_INTERNAL_H_
#define DIETCODE_FAKE_CUDA_INTERNAL_H_

#include <cuda.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#define FAKE_EXPORT __attribute__((visibility("default")))
#define FAKE_MAX_DEVICES 8

enum {
  kCtxMagic = 0x43545831,
  kModuleMagic = 0x4d4f4431,
  kFunctionMagic = 0x46554e31,
  kPoolMagic = 0x504f4f31,
  kStreamMagic = 0x53545231,
  kDeadMagic = 0x44454144,
};

/* A primary context: one per device, same handle for the life of the process (as in the real
 * driver); it is "active" while retained, and gets a fresh id each time it becomes active. */
struct CUctx_st {
  int magic;
  int device;
  int retained; /* under g_fake.mu */
  unsigned long long id;
  atomic_llong live_modules;
};

struct CUfunc_st {
  int magic;
  struct CUmod_st* module;
  struct CUfunc_st* next;
  atomic_int max_dynamic_smem; /* opted-in limit, 48 KB until cuFuncSetAttribute */
  int params; /* declared in the image (fake_function_params); -1 when it says nothing */
  char name[256];
};

struct CUmod_st {
  int magic;
  struct CUctx_st* ctx;
  unsigned char* image; /* a private copy, as the driver keeps */
  size_t size;
  pthread_mutex_t mu; /* guards functions */
  struct CUfunc_st* functions;
};

struct CUmemPoolHandle_st {
  int magic;
  int device;
};

struct CUstream_st {
  int magic;
  unsigned long long id; /* cuStreamGetId's: unique, though a freed handle's address recurs */
  struct CUctx_st* ctx;
  atomic_llong launches;
};

struct fake_state {
  pthread_mutex_t mu; /* guards context retain counts and ids */
  struct CUctx_st primary[FAKE_MAX_DEVICES];
  unsigned long long next_ctx_id;
  atomic_llong live_modules, live_allocations, live_pools, live_streams, retained;
  atomic_llong launches, rejected_launches, modules_loaded, allocations;
  atomic_llong null_stream_launches;
  atomic_llong tensor_map_encodes;
  atomic_int shut_down; /* set by the double's destructor at exit or unload */
};

extern struct fake_state g_fake;

/* After the double's destructor has run (process exit), calls answer CUDA_ERROR_DEINITIALIZED
 * and touch nothing, as a real driver does once it has shut down; with
 * FAKE_CUDA_TRACE_SHUTDOWN=1 each such call is reported on stderr. */
CUresult fake_refuse_after_shutdown(const char* function);
#define FAKE_SHUT_DOWN_GUARD() \
  if (atomic_load(&g_fake.shut_down)) return fake_refuse_after_shutdown(__func__)

/* The calling thread's current context (NULL when none). */
struct CUctx_st* fake_current(void);
/* FAKE_CUDA_DEVICES, 1 when unset, clamped to 1..FAKE_MAX_DEVICES. */
int fake_device_count(void);
/* Compute capability of a device as 90 for 9.0: FAKE_CUDA_CC ("90,80"), else 90. */
int fake_device_cc(int device);
/* A live context handle (retained primary context), else NULL. */
struct CUctx_st* fake_live_ctx(CUcontext ctx);

/* The entry points of each concern, looked up by name (NULL when the file has none). */
void* fake_context_entry(const char* name);
void* fake_module_entry(const char* name);
void* fake_memory_entry(const char* name);
void* fake_tensor_map_entry(const char* name);

/* Tensor maps (fake_cuda_tensor_map.c). How many parameters kernel `name` of an image takes,
 * -1 when the image does not say; whether params[1..n_params) are maps, remembering them as
 * the calling thread's last launch's (CUDA_ERROR_INVALID_VALUE when one is not). */
int fake_function_params(const unsigned char* image, size_t size, const char* name);
CUresult fake_tensor_map_params(int n_params, void** params);
/* FAKE_CUDA_NO_POOLS unset or 0. */
int fake_pools_supported(void);

#endif /* DIETCODE_FAKE_CUDA_INTERNAL_H_ */

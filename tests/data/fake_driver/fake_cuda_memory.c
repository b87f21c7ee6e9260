/* TEST DOUBLE of device memory (see fake_cuda.c): allocations are host memory from malloc, so a
 * use after free or a leak shows under a sanitizer, and each carries a header the frees check.
 * Memory pools only record their device; stream-ordered frees happen at once, since no kernel
 * ever runs. FAKE_CUDA_MAX_ALLOC (bytes, default 1 GiB) is the largest allocation that
 * succeeds: above it the double answers CUDA_ERROR_OUT_OF_MEMORY, as a full GPU would. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fake_cuda_internal.h"

enum { kBlockMagic = 0x424c4b31 };

typedef struct {
  int magic;
  int pad;
  size_t size;
  uint64_t reserved[2]; /* keeps the payload 32-byte aligned, as device memory is (more) */
} block_header;

static size_t max_alloc(void) {
  const char* text = getenv("FAKE_CUDA_MAX_ALLOC");
  return text ? (size_t)strtoull(text, NULL, 10) : (size_t)1 << 30;
}

static CUresult allocate(CUdeviceptr* ptr, size_t bytes) {
  FAKE_SHUT_DOWN_GUARD();
  if (!ptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  if (!fake_live_ctx(fake_current())) return CUDA_ERROR_INVALID_CONTEXT;
  if (bytes > max_alloc()) return CUDA_ERROR_OUT_OF_MEMORY;
  block_header* h = aligned_alloc(32, (sizeof *h + bytes + 31) / 32 * 32);
  if (!h) return CUDA_ERROR_OUT_OF_MEMORY;
  h->magic = kBlockMagic;
  h->size = bytes;
  atomic_fetch_add(&g_fake.live_allocations, 1);
  atomic_fetch_add(&g_fake.allocations, 1);
  *ptr = (CUdeviceptr)(uintptr_t)(h + 1);
  return CUDA_SUCCESS;
}

static CUresult release(CUdeviceptr ptr) {
  FAKE_SHUT_DOWN_GUARD();
  if (!ptr) return CUDA_ERROR_INVALID_VALUE;
  block_header* h = (block_header*)(uintptr_t)ptr - 1;
  if (h->magic != kBlockMagic) return CUDA_ERROR_INVALID_VALUE;
  h->magic = 0;
  free(h);
  atomic_fetch_sub(&g_fake.live_allocations, 1);
  return CUDA_SUCCESS;
}

static CUresult mem_alloc(CUdeviceptr* ptr, size_t bytes) { return allocate(ptr, bytes); }

static CUresult mem_free(CUdeviceptr ptr) { return release(ptr); }

static int pools_supported(void) {
  const char* off = getenv("FAKE_CUDA_NO_POOLS");
  return !(off && *off && strcmp(off, "0") != 0);
}

static CUresult pool_create(CUmemoryPool* pool, const CUmemPoolProps* props) {
  if (!pool || !props) return CUDA_ERROR_INVALID_VALUE;
  if (!pools_supported()) return CUDA_ERROR_NOT_SUPPORTED;
  if (props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
      props->location.type != CU_MEM_LOCATION_TYPE_DEVICE || props->location.id < 0 ||
      props->location.id >= fake_device_count())
    return CUDA_ERROR_INVALID_VALUE;
  struct CUmemPoolHandle_st* p = calloc(1, sizeof *p);
  if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
  p->magic = kPoolMagic;
  p->device = props->location.id;
  atomic_fetch_add(&g_fake.live_pools, 1);
  *pool = p;
  return CUDA_SUCCESS;
}

static CUresult pool_set_attribute(CUmemoryPool pool, CUmemPool_attribute attribute, void* value) {
  (void)attribute;
  if (!pool || pool->magic != kPoolMagic || !value) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

static CUresult pool_destroy(CUmemoryPool pool) {
  FAKE_SHUT_DOWN_GUARD();
  if (!pool || pool->magic != kPoolMagic) return CUDA_ERROR_INVALID_VALUE;
  pool->magic = kDeadMagic;
  free(pool);
  atomic_fetch_sub(&g_fake.live_pools, 1);
  return CUDA_SUCCESS;
}

static int valid_stream(CUstream stream) {
  return !stream || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD ||
         stream->magic == kStreamMagic;
}

static CUresult alloc_from_pool_async(CUdeviceptr* ptr, size_t bytes, CUmemoryPool pool,
                                      CUstream stream) {
  if (!pool || pool->magic != kPoolMagic) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_stream(stream)) return CUDA_ERROR_INVALID_HANDLE;
  struct CUctx_st* ctx = fake_live_ctx(fake_current());
  if (ctx && ctx->device != pool->device) return CUDA_ERROR_INVALID_VALUE;
  return allocate(ptr, bytes);
}

static CUresult free_async(CUdeviceptr ptr, CUstream stream) {
  if (!valid_stream(stream)) return CUDA_ERROR_INVALID_HANDLE;
  return release(ptr);
}

/* Copies and fills: device memory is host memory here. Enough for dietcode's measurement
 * worker to stage its operands on the double. */
static CUresult memcpy_htod(CUdeviceptr dst, const void* src, size_t bytes) {
  FAKE_SHUT_DOWN_GUARD();
  if (!dst || !src) return CUDA_ERROR_INVALID_VALUE;
  memcpy((void*)(uintptr_t)dst, src, bytes);
  return CUDA_SUCCESS;
}

static CUresult memcpy_dtoh(void* dst, CUdeviceptr src, size_t bytes) {
  FAKE_SHUT_DOWN_GUARD();
  if (!dst || !src) return CUDA_ERROR_INVALID_VALUE;
  memcpy(dst, (const void*)(uintptr_t)src, bytes);
  return CUDA_SUCCESS;
}

static CUresult memset_d8(CUdeviceptr dst, unsigned char value, size_t n) {
  FAKE_SHUT_DOWN_GUARD();
  if (!dst) return CUDA_ERROR_INVALID_VALUE;
  memset((void*)(uintptr_t)dst, value, n);
  return CUDA_SUCCESS;
}

static CUresult memset_d32(CUdeviceptr dst, unsigned int value, size_t n) {
  FAKE_SHUT_DOWN_GUARD();
  if (!dst || dst % 4 != 0) return CUDA_ERROR_INVALID_VALUE;
  unsigned int* words = (unsigned int*)(uintptr_t)dst;
  for (size_t i = 0; i < n; ++i) words[i] = value;
  return CUDA_SUCCESS;
}

void* fake_memory_entry(const char* name) {
  static const struct {
    const char* name;
    void* fn;
  } entries[] = {
      {"cuMemAlloc", (void*)mem_alloc},
      {"cuMemFree", (void*)mem_free},
      {"cuMemPoolCreate", (void*)pool_create},
      {"cuMemPoolSetAttribute", (void*)pool_set_attribute},
      {"cuMemPoolDestroy", (void*)pool_destroy},
      {"cuMemAllocFromPoolAsync", (void*)alloc_from_pool_async},
      {"cuMemFreeAsync", (void*)free_async},
      {"cuMemcpyHtoD", (void*)memcpy_htod},
      {"cuMemcpyDtoH", (void*)memcpy_dtoh},
      {"cuMemsetD8", (void*)memset_d8},
      {"cuMemsetD32", (void*)memset_d32},
  };
  for (size_t i = 0; i < sizeof entries / sizeof entries[0]; ++i)
    if (strcmp(entries[i].name, name) == 0) return entries[i].fn;
  return NULL;
}

int fake_pools_supported(void) { return pools_supported(); }

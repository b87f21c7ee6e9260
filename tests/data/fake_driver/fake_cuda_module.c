#define _GNU_SOURCE /* memmem */
/* TEST DOUBLE of the driver's modules and launches (see fake_cuda.c). A module keeps a copy of
 * its image; a function is found only when its name occurs in the image, as a CUBIN's symbol
 * table and a PTX's .entry lines hold their kernels' names. A launch is checked against the
 * limits a real driver enforces and counted; it runs nothing. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dietcode_args.h" /* templates/: the kernel ABI, for the stray-write markers */
#include "fake_cuda_internal.h"

/* Bytes of a 64-bit ELF image: its headers and sections all lie within the extent returned. */
static size_t elf_size(const unsigned char* p) {
  uint64_t phoff, shoff;
  uint16_t phentsize, phnum, shentsize, shnum;
  memcpy(&phoff, p + 0x20, 8);
  memcpy(&shoff, p + 0x28, 8);
  memcpy(&phentsize, p + 0x36, 2);
  memcpy(&phnum, p + 0x38, 2);
  memcpy(&shentsize, p + 0x3a, 2);
  memcpy(&shnum, p + 0x3c, 2);
  uint64_t end = 64;
  if (phoff + (uint64_t)phnum * phentsize > end) end = phoff + (uint64_t)phnum * phentsize;
  if (shoff + (uint64_t)shnum * shentsize > end) end = shoff + (uint64_t)shnum * shentsize;
  for (uint16_t i = 0; i < shnum; ++i) {
    const unsigned char* sh = p + shoff + (uint64_t)i * shentsize;
    uint32_t type;
    uint64_t offset, size;
    memcpy(&type, sh + 4, 4);
    memcpy(&offset, sh + 0x18, 8);
    memcpy(&size, sh + 0x20, 8);
    if (type != 8 /* SHT_NOBITS */ && offset + size > end) end = offset + size;
  }
  return (size_t)end;
}

static CUresult module_load(CUmodule* module, const void* image, unsigned int n_options,
                            CUjit_option* options, void** values) {
  FAKE_SHUT_DOWN_GUARD();
  if (!module || !image || (n_options && (!options || !values))) return CUDA_ERROR_INVALID_VALUE;
  struct CUctx_st* ctx = fake_live_ctx(fake_current());
  if (!ctx) return CUDA_ERROR_INVALID_CONTEXT;
  const unsigned char* bytes = image;
  size_t size = memcmp(bytes, "\177ELF", 4) == 0 && bytes[4] == 2 ? elf_size(bytes)
                                                                    : strlen(image);
  if (size == 0) return CUDA_ERROR_INVALID_IMAGE;
  struct CUmod_st* m = calloc(1, sizeof *m);
  if (!m || !(m->image = malloc(size))) {
    free(m);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  memcpy(m->image, image, size);
  m->size = size;
  m->ctx = ctx;
  m->magic = kModuleMagic;
  pthread_mutex_init(&m->mu, NULL);
  /* An empty JIT log, as after a load that went well. */
  for (unsigned int i = 0; i < n_options; ++i)
    if (options[i] == CU_JIT_ERROR_LOG_BUFFER && values[i]) *(char*)values[i] = '\0';
  atomic_fetch_add(&ctx->live_modules, 1);
  atomic_fetch_add(&g_fake.live_modules, 1);
  atomic_fetch_add(&g_fake.modules_loaded, 1);
  *module = m;
  return CUDA_SUCCESS;
}

/* The module goes whatever its context's state; a destroyed context is still reported. */
static CUresult module_unload(CUmodule module) {
  FAKE_SHUT_DOWN_GUARD();
  if (!module || module->magic != kModuleMagic) return CUDA_ERROR_INVALID_HANDLE;
  struct CUctx_st* ctx = module->ctx;
  module->magic = kDeadMagic;
  for (struct CUfunc_st* f = module->functions; f;) {
    struct CUfunc_st* next = f->next;
    f->magic = kDeadMagic;
    free(f);
    f = next;
  }
  pthread_mutex_destroy(&module->mu);
  free(module->image);
  free(module);
  atomic_fetch_sub(&ctx->live_modules, 1);
  atomic_fetch_sub(&g_fake.live_modules, 1);
  return fake_live_ctx(ctx) ? CUDA_SUCCESS : CUDA_ERROR_CONTEXT_IS_DESTROYED;
}

static int is_identifier_char(unsigned char c) {
  return c == '_' || c == '$' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
         (c >= 'A' && c <= 'Z');
}

/* The name occurs as a whole identifier somewhere in the image. */
static int image_names(const struct CUmod_st* m, const char* name) {
  size_t n = strlen(name);
  const unsigned char* p = m->image;
  const unsigned char* end = m->image + m->size;
  while (n && (size_t)(end - p) >= n) {
    const unsigned char* hit = memmem(p, (size_t)(end - p), name, n);
    if (!hit) return 0;
    int starts = hit == m->image || !is_identifier_char(hit[-1]);
    int ends = hit + n == end || !is_identifier_char(hit[n]);
    if (starts && ends) return 1;
    p = hit + 1;
  }
  return 0;
}

static CUresult module_get_function(CUfunction* function, CUmodule module, const char* name) {
  if (!function || !name) return CUDA_ERROR_INVALID_VALUE;
  if (!module || module->magic != kModuleMagic) return CUDA_ERROR_INVALID_HANDLE;
  if (strlen(name) >= sizeof(((struct CUfunc_st*)0)->name) || !image_names(module, name))
    return CUDA_ERROR_NOT_FOUND;
  CUresult r = CUDA_SUCCESS;
  pthread_mutex_lock(&module->mu);
  struct CUfunc_st* f = module->functions;
  while (f && strcmp(f->name, name) != 0) f = f->next;
  if (!f && (f = calloc(1, sizeof *f))) {
    f->magic = kFunctionMagic;
    f->module = module;
    atomic_init(&f->max_dynamic_smem, 48 * 1024);
    f->params = fake_function_params(module->image, module->size, name);
    strcpy(f->name, name);
    f->next = module->functions;
    module->functions = f;
  }
  if (!f) r = CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_unlock(&module->mu);
  if (f) *function = f;
  return r;
}

/* Dynamic shared memory a block may opt in to on a device of this compute capability. */
static int optin_smem(int cc) {
  if (cc >= 90) return 232448;
  if (cc == 80 || cc == 87) return 166912;
  if (cc >= 86) return 101376;
  return 49152;
}

static CUresult func_set_attribute(CUfunction f, CUfunction_attribute attribute, int value) {
  if (!f || f->magic != kFunctionMagic) return CUDA_ERROR_INVALID_HANDLE;
  if (attribute != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) return CUDA_SUCCESS;
  if (value < 0 || value > optin_smem(fake_device_cc(f->module->ctx->device)))
    return CUDA_ERROR_INVALID_VALUE;
  atomic_store(&f->max_dynamic_smem, value);
  return CUDA_SUCCESS;
}

static CUresult check_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                             unsigned by, unsigned bz, unsigned smem, CUstream stream,
                             void** params, void** extra) {
  if (!f || f->magic != kFunctionMagic) return CUDA_ERROR_INVALID_HANDLE;
  struct CUctx_st* ctx = fake_live_ctx(fake_current());
  if (!ctx) return CUDA_ERROR_INVALID_CONTEXT;
  if (f->module->ctx != ctx) return CUDA_ERROR_INVALID_CONTEXT; /* loaded in another one */
  int special = stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD;
  if (stream && !special && (stream->magic != kStreamMagic || stream->ctx != ctx))
    return CUDA_ERROR_INVALID_HANDLE;
  if (gx < 1 || gy < 1 || gz < 1 || gx > 2147483647u || gy > 65535 || gz > 65535)
    return CUDA_ERROR_INVALID_VALUE;
  if (bx < 1 || by < 1 || bz < 1 || bx > 1024 || by > 1024 || bz > 64 ||
      (unsigned long long)bx * by * bz > 1024)
    return CUDA_ERROR_INVALID_VALUE;
  if ((int)smem > atomic_load(&f->max_dynamic_smem) || smem > 0x7fffffffu)
    return CUDA_ERROR_INVALID_VALUE;
  /* Every kernel of a pack takes one by-value argument, passed through kernelParams, and a
   * kernel with a TMA producer tensor maps after it. */
  if (!params || extra || !params[0]) return CUDA_ERROR_INVALID_VALUE;
  return fake_tensor_map_params(f->params, params);
}

/* Kernels run nothing, except what a test asks for through a marker in the image: a kernel
 * taking DietcodeArgs whose image says "fake:write-after-output" writes one float just past
 * its fp32 output, and "fake:write-before-output" one just before it (device memory is host
 * memory here), so the measurer's canaries can be tested. */
static int image_says(const struct CUmod_st* m, const char* marker) {
  size_t n = strlen(marker);
  for (size_t i = 0; i + n <= m->size; ++i)
    if (memcmp(m->image + i, marker, n) == 0) return 1;
  return 0;
}

static void act_out_stray_writes(CUfunction f, void** params) {
  const DietcodeArgs* args = (const DietcodeArgs*)params[0];
  if (image_says(f->module, "fake:write-after-output"))
    ((float*)args->c)[args->batch * args->m * args->n] = 1.0f;
  if (image_says(f->module, "fake:write-before-output")) ((float*)args->c)[-1] = 1.0f;
}

static CUresult launch_kernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                              unsigned by, unsigned bz, unsigned smem, CUstream stream,
                              void** params, void** extra) {
  FAKE_SHUT_DOWN_GUARD();
  CUresult r = check_launch(f, gx, gy, gz, bx, by, bz, smem, stream, params, extra);
  if (r != CUDA_SUCCESS) {
    atomic_fetch_add(&g_fake.rejected_launches, 1);
    return r;
  }
  if (stream && stream != CU_STREAM_LEGACY && stream != CU_STREAM_PER_THREAD)
    atomic_fetch_add_explicit(&stream->launches, 1, memory_order_relaxed);
  else
    atomic_fetch_add_explicit(&g_fake.null_stream_launches, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&g_fake.launches, 1, memory_order_relaxed);
  act_out_stray_writes(f, params);
  return CUDA_SUCCESS;
}

void* fake_module_entry(const char* name) {
  static const struct {
    const char* name;
    void* fn;
  } entries[] = {
      {"cuModuleLoadDataEx", (void*)module_load},
      {"cuModuleUnload", (void*)module_unload},
      {"cuModuleGetFunction", (void*)module_get_function},
      {"cuFuncSetAttribute", (void*)func_set_attribute},
      {"cuLaunchKernel", (void*)launch_kernel},
  };
  for (size_t i = 0; i < sizeof entries / sizeof entries[0]; ++i)
    if (strcmp(entries[i].name, name) == 0) return entries[i].fn;
  return NULL;
}

/* Kernels launched on a stream (NULL: the default streams), for tests. */
FAKE_EXPORT long long fake_cuda_stream_launches(CUstream stream) {
  if (!stream || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD)
    return atomic_load(&g_fake.null_stream_launches);
  return stream->magic == kStreamMagic ? atomic_load(&stream->launches) : -1;
}

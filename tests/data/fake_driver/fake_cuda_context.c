/* TEST DOUBLE of the driver's contexts and streams (see fake_cuda.c): one primary context per
 * device with a retain count, a thread-local current context, and streams that count the
 * kernels launched on them, and events that record the host's clock. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fake_cuda_internal.h"

static __thread struct CUctx_st* t_current;

struct CUctx_st* fake_current(void) { return t_current; }

struct CUctx_st* fake_live_ctx(CUcontext ctx) {
  if (!ctx || ctx->magic != kCtxMagic) return NULL;
  return __atomic_load_n(&ctx->retained, __ATOMIC_ACQUIRE) > 0 ? ctx : NULL;
}

static CUresult primary_retain(CUcontext* ctx, CUdevice device) {
  FAKE_SHUT_DOWN_GUARD();
  if (!ctx) return CUDA_ERROR_INVALID_VALUE;
  if (device < 0 || device >= fake_device_count()) return CUDA_ERROR_INVALID_DEVICE;
  struct CUctx_st* c = &g_fake.primary[device];
  pthread_mutex_lock(&g_fake.mu);
  c->magic = kCtxMagic;
  c->device = device;
  if (c->retained == 0) /* a new incarnation */
    __atomic_store_n(&c->id, ++g_fake.next_ctx_id, __ATOMIC_RELEASE);
  __atomic_store_n(&c->retained, c->retained + 1, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&g_fake.mu);
  atomic_fetch_add(&g_fake.retained, 1);
  *ctx = c;
  return CUDA_SUCCESS;
}

static CUresult primary_release(CUdevice device) {
  FAKE_SHUT_DOWN_GUARD();
  if (device < 0 || device >= fake_device_count()) return CUDA_ERROR_INVALID_DEVICE;
  struct CUctx_st* c = &g_fake.primary[device];
  CUresult r = CUDA_SUCCESS;
  pthread_mutex_lock(&g_fake.mu);
  if (c->retained == 0)
    r = CUDA_ERROR_INVALID_CONTEXT;
  else
    __atomic_store_n(&c->retained, c->retained - 1, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&g_fake.mu);
  if (r == CUDA_SUCCESS) atomic_fetch_sub(&g_fake.retained, 1);
  return r;
}

static CUresult primary_get_state(CUdevice device, unsigned int* flags, int* active) {
  FAKE_SHUT_DOWN_GUARD();
  if (device < 0 || device >= fake_device_count()) return CUDA_ERROR_INVALID_DEVICE;
  *flags = 0;
  *active = __atomic_load_n(&g_fake.primary[device].retained, __ATOMIC_ACQUIRE) > 0;
  return CUDA_SUCCESS;
}

static CUresult ctx_get_current(CUcontext* ctx) {
  FAKE_SHUT_DOWN_GUARD();
  if (!ctx) return CUDA_ERROR_INVALID_VALUE;
  *ctx = t_current;
  return CUDA_SUCCESS;
}

static CUresult ctx_set_current(CUcontext ctx) {
  FAKE_SHUT_DOWN_GUARD();
  if (ctx && !fake_live_ctx(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  t_current = ctx;
  return CUDA_SUCCESS;
}

static CUresult ctx_get_device(CUdevice* device) {
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  struct CUctx_st* c = fake_live_ctx(t_current);
  if (!c) return CUDA_ERROR_INVALID_CONTEXT;
  *device = c->device;
  return CUDA_SUCCESS;
}

static CUresult ctx_get_id(CUcontext ctx, unsigned long long* id) {
  FAKE_SHUT_DOWN_GUARD();
  if (!id) return CUDA_ERROR_INVALID_VALUE;
  struct CUctx_st* c = fake_live_ctx(ctx ? ctx : t_current);
  if (!c) return CUDA_ERROR_INVALID_CONTEXT;
  *id = __atomic_load_n(&c->id, __ATOMIC_ACQUIRE); /* no lock: launches ask on every call */
  return CUDA_SUCCESS;
}

static CUresult ctx_synchronize(void) {
  return fake_live_ctx(t_current) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

/* Ids of created streams; 1 is the legacy default stream's, and each thread's per-thread default
 * stream takes one from the counter when first asked. */
static atomic_llong g_next_stream_id = 16;
static _Thread_local unsigned long long t_per_thread_stream_id;

static CUresult stream_create(CUstream* stream, unsigned int flags) {
  (void)flags;
  if (!stream) return CUDA_ERROR_INVALID_VALUE;
  struct CUctx_st* c = fake_live_ctx(t_current);
  if (!c) return CUDA_ERROR_INVALID_CONTEXT;
  struct CUstream_st* s = calloc(1, sizeof *s);
  if (!s) return CUDA_ERROR_OUT_OF_MEMORY;
  s->magic = kStreamMagic;
  s->id = (unsigned long long)atomic_fetch_add(&g_next_stream_id, 1);
  s->ctx = c;
  atomic_fetch_add(&g_fake.live_streams, 1);
  *stream = s;
  return CUDA_SUCCESS;
}

static CUresult stream_destroy(CUstream stream) {
  FAKE_SHUT_DOWN_GUARD();
  if (!stream || stream->magic != kStreamMagic) return CUDA_ERROR_INVALID_HANDLE;
  stream->magic = kDeadMagic;
  free(stream);
  atomic_fetch_sub(&g_fake.live_streams, 1);
  return CUDA_SUCCESS;
}

static CUresult stream_get_id(CUstream stream, unsigned long long* id) {
  if (!id) return CUDA_ERROR_INVALID_VALUE;
  if (!stream || stream == CU_STREAM_LEGACY) {
    *id = 1;
  } else if (stream == CU_STREAM_PER_THREAD) {
    if (!t_per_thread_stream_id)
      t_per_thread_stream_id = (unsigned long long)atomic_fetch_add(&g_next_stream_id, 1);
    *id = t_per_thread_stream_id;
  } else if (stream->magic == kStreamMagic) {
    *id = stream->id;
  } else {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  return CUDA_SUCCESS;
}

/* The double cannot capture graphs; FAKE_CUDA_CAPTURING=1 makes every stream report that it is
 * being captured, so a client's capture path can be tested. */
static CUresult stream_is_capturing(CUstream stream, CUstreamCaptureStatus* status) {
  if (!status) return CUDA_ERROR_INVALID_VALUE;
  if (stream && stream != CU_STREAM_LEGACY && stream != CU_STREAM_PER_THREAD &&
      stream->magic != kStreamMagic)
    return CUDA_ERROR_INVALID_HANDLE;
  const char* on = getenv("FAKE_CUDA_CAPTURING");
  *status = on && *on && strcmp(on, "0") != 0 ? CU_STREAM_CAPTURE_STATUS_ACTIVE
                                               : CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}

/* Kernels run nothing, so every stream is always idle. */
static CUresult stream_synchronize(CUstream stream) {
  if (stream && stream->magic != kStreamMagic) return CUDA_ERROR_INVALID_HANDLE;
  return fake_live_ctx(stream ? stream->ctx : t_current) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

/* Events record the host's clock: nothing runs on the double, so an elapsed time is the host
 * time between two records, never a kernel's time. */
struct fake_event {
  int magic;
  int recorded;
  struct timespec at;
};
enum { kEventMagic = 0x45564e31 };

static CUresult event_create(CUevent* event, unsigned int flags) {
  (void)flags;
  if (!event) return CUDA_ERROR_INVALID_VALUE;
  if (!fake_live_ctx(t_current)) return CUDA_ERROR_INVALID_CONTEXT;
  struct fake_event* e = calloc(1, sizeof *e);
  if (!e) return CUDA_ERROR_OUT_OF_MEMORY;
  e->magic = kEventMagic;
  *event = (CUevent)e;
  return CUDA_SUCCESS;
}

static struct fake_event* live_event(CUevent event) {
  struct fake_event* e = (struct fake_event*)event;
  return e && e->magic == kEventMagic ? e : NULL;
}

static CUresult event_record(CUevent event, CUstream stream) {
  FAKE_SHUT_DOWN_GUARD();
  struct fake_event* e = live_event(event);
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  if (stream && stream != CU_STREAM_LEGACY && stream != CU_STREAM_PER_THREAD &&
      stream->magic != kStreamMagic)
    return CUDA_ERROR_INVALID_HANDLE;
  clock_gettime(CLOCK_MONOTONIC, &e->at);
  e->recorded = 1;
  return CUDA_SUCCESS;
}

static CUresult event_synchronize(CUevent event) {
  return live_event(event) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

static CUresult event_elapsed(float* ms, CUevent start, CUevent end) {
  struct fake_event* a = live_event(start);
  struct fake_event* b = live_event(end);
  if (!ms || !a || !b) return CUDA_ERROR_INVALID_HANDLE;
  if (!a->recorded || !b->recorded) return CUDA_ERROR_INVALID_HANDLE;
  *ms = (float)((double)(b->at.tv_sec - a->at.tv_sec) * 1e3 +
                (double)(b->at.tv_nsec - a->at.tv_nsec) / 1e6);
  return CUDA_SUCCESS;
}

static CUresult event_destroy(CUevent event) {
  FAKE_SHUT_DOWN_GUARD();
  struct fake_event* e = live_event(event);
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  e->magic = kDeadMagic;
  free(e);
  return CUDA_SUCCESS;
}

void* fake_context_entry(const char* name) {
  static const struct {
    const char* name;
    void* fn;
  } entries[] = {
      {"cuDevicePrimaryCtxRetain", (void*)primary_retain},
      {"cuDevicePrimaryCtxRelease", (void*)primary_release},
      {"cuDevicePrimaryCtxGetState", (void*)primary_get_state},
      {"cuCtxGetCurrent", (void*)ctx_get_current},
      {"cuCtxSetCurrent", (void*)ctx_set_current},
      {"cuCtxGetDevice", (void*)ctx_get_device},
      {"cuCtxGetId", (void*)ctx_get_id},
      {"cuCtxSynchronize", (void*)ctx_synchronize},
      {"cuStreamCreate", (void*)stream_create},
      {"cuStreamDestroy", (void*)stream_destroy},
      {"cuStreamSynchronize", (void*)stream_synchronize},
      {"cuStreamGetId", (void*)stream_get_id},
      {"cuStreamIsCapturing", (void*)stream_is_capturing},
      {"cuEventCreate", (void*)event_create},
      {"cuEventRecord", (void*)event_record},
      {"cuEventSynchronize", (void*)event_synchronize},
      {"cuEventElapsedTime", (void*)event_elapsed},
      {"cuEventDestroy", (void*)event_destroy},
  };
  for (size_t i = 0; i < sizeof entries / sizeof entries[0]; ++i)
    if (strcmp(entries[i].name, name) == 0) return entries[i].fn;
  return NULL;
}

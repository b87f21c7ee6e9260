/* Split-K workspaces of a GPU pack (pack_runtime.cc): the one each stream keeps.
 *
 * A stream runs its work in order, so one buffer serves every split-K launch on it, grown in
 * stream order when a launch needs more. Why keep one: on an H200 the pack's split-K launches,
 * which allocated and freed a workspace around every launch, took 4.9% longer than the same
 * kernels in the tuner, which reuses one buffer (docs/results/h200, section 2). A stream being
 * captured into a graph, and streams past the first kStreamWorkspaces of a context, get a
 * buffer per launch instead (pack_runtime.cc's launch). Included by pack_runtime.cc only, after
 * pack_runtime_driver.h.
 */
#ifndef DIETCODE_PACK_RUNTIME_WORKSPACES_H_
#define DIETCODE_PACK_RUNTIME_WORKSPACES_H_

#include <cuda.h>

#include <cstddef>
#include <mutex>

namespace dietcode_pack {
namespace {

struct StreamWorkspace {
  std::mutex mu;  // held from lookup until the launches that use the buffer are queued
  unsigned long long stream_id = 0;  // cuStreamGetId's: never reused, unlike a stream's handle
  CUdeviceptr ptr = 0;
  size_t bytes = 0;
};

// Streams per context that keep a workspace. A kept workspace lives until the pack is unloaded,
// even after its stream is destroyed (the pack cannot see that), so a program that makes a new
// stream for every call fills the table and then allocates per launch.
constexpr int kStreamWorkspaces = 16;

// A context's table of kept workspaces, one per stream.
class StreamWorkspaces {
 public:
  // The workspace `stream` keeps, locked through *lock; null when this launch must take a
  // buffer of its own: while the stream is captured (a graph replayed on several streams at
  // once must not share one buffer), or when the table is full.
  StreamWorkspace* kept_for(CUstream stream, std::unique_lock<std::mutex>* lock) {
    const Driver& d = driver();
    CUstreamCaptureStatus capture;
    unsigned long long id;
    if (d.StreamIsCapturing(stream, &capture) != CUDA_SUCCESS ||
        capture != CU_STREAM_CAPTURE_STATUS_NONE || d.StreamGetId(stream, &id) != CUDA_SUCCESS)
      return nullptr;
    StreamWorkspace* w = nullptr;
    {
      std::lock_guard<std::mutex> guard(mu_);
      for (int i = 0; i < used_ && !w; ++i)
        if (slots_[i].stream_id == id) w = &slots_[i];
      if (!w) {
        if (used_ == kStreamWorkspaces) return nullptr;
        w = &slots_[used_++];
        w->stream_id = id;
      }
    }
    *lock = std::unique_lock<std::mutex>(w->mu);
    return w;
  }

  // At unload, with the driver unload_pack holds (driver() would load a new one there):
  // cuMemFree waits for the work that may still use a kept workspace.
  void free_all(const Driver& d) {
    for (int i = 0; i < used_; ++i)
      if (slots_[i].ptr) d.MemFree(slots_[i].ptr);
  }

 private:
  std::mutex mu_;  // guards used_ and each slot's stream_id
  int used_ = 0;
  StreamWorkspace slots_[kStreamWorkspaces];
};

// Grows a kept workspace to at least `bytes`, in the stream's order: the old buffer is freed
// after the work already queued that uses it. Sizes go up by powers of two, so a model whose
// shapes grow call by call reallocates a few times, not on every call.
CUresult grow_workspace(StreamWorkspace& w, size_t bytes, CUmemoryPool pool, CUstream stream) {
  if (w.bytes >= bytes) return CUDA_SUCCESS;
  const Driver& d = driver();
  size_t size = 256;
  while (size < bytes) size *= 2;
  if (w.ptr) {
    CUresult r = d.MemFreeAsync(w.ptr, stream);
    if (r != CUDA_SUCCESS) return r;
    w.ptr = 0;
    w.bytes = 0;
  }
  CUresult r = d.MemAllocFromPoolAsync(&w.ptr, size, pool, stream);
  if (r != CUDA_SUCCESS) {
    w.ptr = 0;
    return r;
  }
  w.bytes = size;
  return CUDA_SUCCESS;
}

}  // namespace
}  // namespace dietcode_pack

#endif /* DIETCODE_PACK_RUNTIME_WORKSPACES_H_ */

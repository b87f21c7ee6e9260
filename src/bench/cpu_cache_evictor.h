// Cache eviction between timed CPU runs, the CPU counterpart of the GPU's L2 flush: every line
// of a buffer larger than the last-level cache is written, by as many threads as the timed
// code runs on, each its own slice, so that every core's private L1/L2 and the shared L3 hold
// eviction data and no operand (reads would not do: a written line must be fetched, and the
// operands' lines are pushed out to make room). The same scheme as the tuner's CPU worker
// (x86/cpu_worker.cc), so bench times packs in the regime their kernels were tuned in.
//
// The writer threads are started for each eviction and joined: none is left running, or
// spinning, when the timed run starts (process_threads.h). Writer t is bound to the t-th CPU of
// the pool's own placement (CpuThreadPool::close_placement), so that every core the timed code
// runs on is evicted, also when an OpenMP runtime (OMP_PROC_BIND) has bound bench's thread,
// and so every thread it starts, to a single CPU.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace dietcode {

// 2x the last-level cache, at most `cap` (a VM may report the whole host's L3, or none: 0
// gives `cap`), rounded up to whole 64-byte lines.
int64_t eviction_bytes(int64_t last_level_cache_bytes, int64_t cap);

class CpuCacheEvictor {
 public:
  // Allocates and touches `bytes` (0: evict() does nothing) to be written by `threads`.
  CpuCacheEvictor(int64_t bytes, int threads);
  ~CpuCacheEvictor();
  CpuCacheEvictor(const CpuCacheEvictor&) = delete;
  CpuCacheEvictor& operator=(const CpuCacheEvictor&) = delete;

  void evict();
  int64_t bytes() const { return bytes_; }

 private:
  unsigned char* data_ = nullptr;
  int64_t bytes_ = 0;
  int threads_ = 1;
  std::vector<int> cpus_;    // writer t runs on cpus_[t % size]
  unsigned char round_ = 0;  // a new value each time, so no write is a no-op
};

}  // namespace dietcode

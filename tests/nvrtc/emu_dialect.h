// TEST DOUBLE: the part of CUDA's device dialect that every host emulation of a template needs
// (dense_f32_emulation.h for the fp32 templates, tc_emulation.h for the tensor-core ones): the
// qualifiers compiled away, the built-in index variables, min, float2, and the block barrier
// behind __syncthreads. Blocks run one at a time, each thread of a block as a host thread.
#pragma once

#include <condition_variable>
#include <mutex>

#define DIETCODE_HOST_EMULATION 1
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__

struct __attribute__((may_alias, aligned(8))) float2 {
  float x, y;
};
inline float2 make_float2(float x, float y) { return {x, y}; }
struct EmuDim3 {
  unsigned x = 0, y = 0, z = 0;
};

inline int min(int a, int b) { return a < b ? a : b; }

// The block being run and the current thread's index in it.
inline EmuDim3 blockIdx, gridDim, blockDim;
inline thread_local EmuDim3 threadIdx;

// A reusable barrier for `count` threads (a block, or a warp for warp-collective instructions).
class EmuBarrier {
 public:
  void reset(int count) {
    count_ = count;
    waiting_ = 0;
  }
  void wait() {
    std::unique_lock<std::mutex> lock(mu_);
    const unsigned long generation = generation_;
    if (++waiting_ == count_) {
      waiting_ = 0;
      ++generation_;
      cv_.notify_all();
      return;
    }
    cv_.wait(lock, [&] { return generation != generation_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int count_ = 0, waiting_ = 0;
  unsigned long generation_ = 0;
};
inline EmuBarrier emu_block_barrier;
inline void __syncthreads() { emu_block_barrier.wait(); }

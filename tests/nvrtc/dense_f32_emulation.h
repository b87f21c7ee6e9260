// TEST DOUBLE: just enough of CUDA's device dialect to compile templates/dense_f32.cu as host
// C++ and run each block's threads as host threads, so the kernel's index arithmetic, local
// padding, pipelines, split-K slices and epilogues are checked on a machine without a GPU.
// Copies that are cp.async on the GPU happen synchronously here, so this cannot find a
// missing cp.async wait; the GPU tests can.
#pragma once

#include <cmath>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#define DIETCODE_HOST_EMULATION 1
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__

struct __attribute__((may_alias, aligned(16))) float4 {
  float x, y, z, w;
};
struct __attribute__((may_alias, aligned(8))) float2 {
  float x, y;
};
struct EmuDim3 {
  unsigned x = 0, y = 0, z = 0;
};

inline int min(int a, int b) { return a < b ? a : b; }

// The block being run and the current thread's index in it.
inline EmuDim3 blockIdx, gridDim, blockDim;
inline thread_local EmuDim3 threadIdx;

// Shared memory of the one block that runs at a time.
extern "C" {
alignas(16) float4 dc_smem[64 * 1024 / 4];  // this header is included by one test only
}

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
inline EmuBarrier emu_barrier;
inline void __syncthreads() { emu_barrier.wait(); }

// Runs kernel over the grid, one block after another, each block's threads concurrently.
template <class Args>
void emu_launch(void (*kernel)(Args), const unsigned grid[3], int threads, const Args& args) {
  gridDim = {grid[0], grid[1], grid[2]};
  blockDim = {unsigned(threads), 1, 1};
  for (unsigned z = 0; z < grid[2]; ++z)
    for (unsigned y = 0; y < grid[1]; ++y)
      for (unsigned x = 0; x < grid[0]; ++x) {
        blockIdx = {x, y, z};
        emu_barrier.reset(threads);
        std::vector<std::thread> pool;
        for (int t = 0; t < threads; ++t)
          pool.emplace_back([=] {
            threadIdx = {unsigned(t), 0, 0};
            kernel(args);
          });
        for (auto& th : pool) th.join();
      }
}

// TEST DOUBLE: just enough of CUDA's device dialect to compile templates/dense_f32.cu as host
// C++ and run each block's threads as host threads, so the kernel's index arithmetic, local
// padding, pipelines, split-K slices and epilogues are checked on a machine without a GPU.
// Copies that are cp.async on the GPU happen synchronously here, so this cannot find a
// missing cp.async wait; the GPU tests can.
#pragma once

#include <cmath>
#include <functional>
#include <thread>
#include <vector>

#include "nvrtc/emu_dialect.h"

struct __attribute__((may_alias, aligned(16))) float4 {
  float x, y, z, w;
};

// Shared memory of the one block that runs at a time.
extern "C" {
alignas(16) float4 dc_smem[64 * 1024 / 4];  // this header is included by one test only
}

// Runs kernel over the grid, one block after another, each block's threads concurrently.
template <class Args>
void emu_launch(void (*kernel)(Args), const unsigned grid[3], int threads, const Args& args) {
  gridDim = {grid[0], grid[1], grid[2]};
  blockDim = {unsigned(threads), 1, 1};
  for (unsigned z = 0; z < grid[2]; ++z)
    for (unsigned y = 0; y < grid[1]; ++y)
      for (unsigned x = 0; x < grid[0]; ++x) {
        blockIdx = {x, y, z};
        emu_block_barrier.reset(threads);
        std::vector<std::thread> pool;
        for (int t = 0; t < threads; ++t)
          pool.emplace_back([=] {
            threadIdx = {unsigned(t), 0, 0};
            kernel(args);
          });
        for (auto& th : pool) th.join();
      }
}

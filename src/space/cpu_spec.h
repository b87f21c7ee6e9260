// The figures of one x86-64 CPU that the CPU target's cost terms are computed from, the
// counterpart of gpu_spec.h: plain data, so the search and the cost model need nothing of the
// host. Filled from the host at `tune --target cpu` (x86/host_cpu_spec.h) or by a test.
#pragma once

#include <cstdint>
#include <string>

namespace dietcode {

struct CpuSpec {
  std::string name;                     // the brand string
  std::string isa_level = "x86-64-v3";  // the highest level this CPU runs
  int threads = 1;                      // workers a kernel gets (the thread pool's size)
  int64_t l1d_bytes = 32 << 10;         // per core
  int64_t l2_bytes = 1 << 20;           // per core
  int64_t l3_bytes = 32 << 20;          // shared
  // Measured fp32 FMA peak of ONE thread with 256-bit (AVX2) and 512-bit (AVX-512) vectors;
  // 0 where the CPU lacks the width. Many CPUs run zmm at well under twice the ymm rate.
  double gflops_per_thread_256 = 0;
  double gflops_per_thread_512 = 0;
  // Streaming read bandwidth all threads together reach, GB/s (probed by tune; this default
  // is a few server cores' worth).
  double mem_bandwidth_gbs = 20;
  // tune --constant-weights: dense and conv2d kernels are timed on weights packed once, so the
  // BLIS form packs no B in the call (the cost model's packing term leaves it out).
  bool weights_prepacked = false;
};

}  // namespace dietcode

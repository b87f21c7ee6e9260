// Times a kernel pack against its baselines (cuBLAS/cuBLASLt for GEMMs, cuDNN or cuBLAS+im2col
// for conv2d; baseline.h) on the local GPU, in one process, one context and one
// stream, and fills a BenchReport.
//
// Per op: the operands of its largest instance are allocated once and filled with seeded
// random data (every smaller instance uses a prefix of them, which for contiguous row-major
// tensors is a tensor of the smaller shape). Per instance:
//   1. check: both outputs are filled with NaN, the pack and the baseline run once, and the
//      outputs must agree within the dtype's tolerance (host_tensors.h); a disagreement fails
//      the row, and bench exits 1 after the report;
//   2. warm-up: `warmup` launches of each (lazy module loading, clocks, cuBLAS's heuristics);
//   3. timing: `repeats` rounds, each timing one pack launch and one baseline launch between
//      CUDA events, alternating which goes first, with the L2 flushed before every timed
//      launch in flush mode; the median of each is reported.
// The timed launches are queued behind a spin kernel that holds the GPU until they are all
// enqueued, so they run back to back as in a busy stream and the events time the GPU's work
// (kernel launch latency on the GPU included), not the host's launch overhead.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bench/bench_pack.h"
#include "bench/pack_library.h"
#include "bench/report.h"

namespace dietcode {

struct BenchOptions {
  std::string baseline = "auto";  // a --baseline value (baseline.h: plan_baselines)
  std::vector<std::string> ops;   // empty: all
  std::vector<ShapeOverride> shapes;
  bool flush_l2 = true;
  int repeats = 30;
  int warmup = 3;
  bool tf32 = false;
  int device = 0;
  uint64_t seed = 1;
  // Called with one line per op as it starts ("qkv: 128 shapes"); may be empty.
  std::function<void(const std::string&)> progress;
};

// Runs the benchmark. Throws EnvironmentError for the machine (no GPU, no cuBLAS, no cuDNN
// under --baseline cudnn, out of memory, a pack built for another arch) and UserError for a
// pack that fails at a valid shape.
BenchReport run_bench(const PackLibrary& library, const BenchPack& pack,
                      const BenchOptions& options);

// The median of `values` (the mean of the middle two for an even count); 0 when empty.
double median(std::vector<double> values);

}  // namespace dietcode

// Times a CPU kernel pack (manifest "target": "cpu") against oneDNN and OpenBLAS
// (cpu_baseline.h) on this machine's cores, in one process, and fills a BenchReport.
//
// Threads: the pack's pool is sized with dietcode_set_num_threads(threads) and each baseline
// runs on the same count, so every contender gets the same cores.
//
// Per op: the operands of its largest instance are allocated once (page-aligned host memory)
// and filled with seeded random data; every smaller instance uses a prefix. Each baseline
// writes its own output. Per instance:
//   1. check: outputs filled with NaN, pack and baselines run once, the pack's output must
//      agree with each baseline's within the fp32 tolerance (host_tensors.h); a disagreement
//      fails the row, and bench exits 1 after the report;
//   2. warm-up: `warmup` runs of each, round-robin;
//   3. timing: `repeats` rounds, each timing one run of every contender, the order rotating
//      from round to round so that drift (clocks, heat, a neighbour) hits all alike. Before
//      each timed run the caches are evicted (flush mode, cpu_cache_evictor.h) and bench waits
//      until every other thread of the process sleeps (process_threads.h); the median of each
//      contender's runs is reported.
// Nothing else runs meanwhile: no compile, no GPU work, no other process of bench's.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bench/bench_pack.h"
#include "bench/pack_library.h"
#include "bench/report.h"

namespace dietcode {

struct CpuBenchOptions {
  std::vector<std::string> baselines = {"onednn", "openblas"};  // cpu_baseline.h names
  std::vector<std::string> ops;                                 // empty: all
  std::vector<ShapeOverride> shapes;
  int threads = 0;  // 0: every logical CPU of the affinity mask
  bool evict_caches = true;
  int64_t evict_bytes = int64_t(64) << 20;  // cpu_cache_evictor.h: eviction_bytes()
  int repeats = 30;
  int warmup = 3;
  uint64_t seed = 1;
  std::string cpu;             // for the report: "AMD EPYC 7B13 64-Core Processor (x86-64-v3)"
  // Probes the fp32 FMA peak on `threads` threads (HostCpu::fp32_peak_gflops): called before
  // the first timing and after the last (cpu_peak_probe.h). Empty: the peak is unknown.
  std::function<double()> probe_peak_gflops;
  int isa_cap = 0;             // every contender held to this x86-64 level (cpu_isa_cap.h); 0: none
  std::string pack_level;      // the level of the pack's kernels that run here: "x86-64-v4"
  double quiet_wait_us = 2e5;  // how long to wait for other threads to sleep before a run
  // Weights (dense's W, conv2d's filters) as an inference server holds them: declared constant
  // to the pack (dietcode_declare_constant), which packs them once, and in the layout oneDNN
  // chooses, reordered once; both outside the timing. OpenBLAS has no such API. Off: the pack
  // and oneDNN's matmul read the weights as they are on every call (oneDNN's convolution
  // reorders them outside the timing either way when it wants its own layout).
  bool constant_weights = false;
  std::function<void(const std::string&)> progress;  // one line per op; may be empty
};

// A --baseline value for a CPU pack as the baselines to run: auto -> onednn and openblas,
// onednn or openblas alone, none -> nothing. UserError for the GPU's names or anything else.
std::vector<std::string> cpu_baselines_for_option(const std::string& option);

// Runs the benchmark. A baseline library that does not load is a note and no column; a
// baseline that cannot run an instance leaves that cell empty with a note. Throws
// EnvironmentError for the machine (the pack's ISA variants do not run here, out of memory)
// and UserError for a pack that fails at a valid shape.
BenchReport run_cpu_bench(const PackLibrary& library, const BenchPack& pack,
                          const CpuBenchOptions& options);

}  // namespace dietcode

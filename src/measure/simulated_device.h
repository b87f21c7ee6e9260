// SimulatedDevice: a TEST DOUBLE of a GPU. It never runs a kernel; it computes a latency from an
// analytical model of a GpuSpec (configs/gpus/), so the whole tune -> log -> build path runs in CI
// and in demos on machines without a GPU. Its numbers are a model, not measurements: its
// DeviceIdentity says "simulated <gpu name>" with simulated = true, every log record it produces
// says "simulated": true, and `build` refuses such a log unless told --allow-simulated.
//
// The model, per (candidate, shape) — plausible rather than exact, but with the structure real
// GPUs have, so a cost model trained on it has something to learn:
//   resources   registers from the compiler's ptxas report when present (else estimated from
//               the accumulator tile), threads and shared memory from the launch plan; beyond
//               the GPU's limits -> kDeviceLimitsExceeded. They give resident blocks per SM.
//   tile        how close one SM gets to its peak on this micro-kernel: grows with the
//               per-thread (SIMT), per-warp (mma.sync) or per-warpgroup (wgmma: m64 x BN)
//               tile, whose loads per FMA decide whether shared memory keeps up, and with BK,
//               which amortises the per-k-tile synchronisation; falls past a register-pressure
//               knee and with spills. The tensor peak of an sm_90 spec is wgmma's: warp-level
//               mma.sync kernels get about 2/3 of it there.
//   waves       grid = ceil(M/tile_m) x ceil(N/tile_n) x batch*split_k blocks; the busiest SM
//               runs ceil(blocks/SMs) of them, resident ones concurrently; few resident warps
//               hide latency badly; every wave pays the k-loop's memory latency at least.
//               Padding is real work: M = 129 with tile_m = 128 costs what M = 256 costs.
//   memory      DRAM bytes (operands once, output, split-K partials) over bandwidth, and
//               L2-to-SM tile traffic over an L2 bandwidth; the kernel takes the larger of
//               compute and memory time. A conv2d's A is its input N*H*W*C, not the implicit
//               GEMM's M x K (found through the instance with that GEMM shape).
//   split-K     partial sums through a workspace, then a reduction kernel (another launch).
//   launch      a fixed launch overhead per kernel (~3 us, as CUDA events see it).
//   noise       optional multiplicative lognormal noise, a deterministic function of the seed,
//               the micro-kernel key, the op and the shape: re-measuring gives the same number.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "measure/measurer.h"
#include "space/gpu_spec.h"

namespace dietcode {

struct SimulatedDeviceOptions {
  double noise_sigma = 0;           // sigma of log(latency) noise; 0: exact model values
  uint64_t seed = 0;                // selects the noise draw
  double launch_overhead_us = 3.0;  // per kernel launch
  // The L2 regime the run asked for, recorded in the log like a real GPU's; the model
  // computes the same numbers under both.
  std::string l2 = "flush";

  // Knobs for testing several devices at once (measure_pool.h); they change when results
  // arrive, never what they are.
  int ordinal = 0;            // which GPU of a simulated host this is, for messages
  double delay_seconds = 0;   // slept per candidate: an artificial measuring speed
  int fail_after_calls = -1;  // measure() calls served before the device "dies": every later
                              // call sleeps half its delay, then throws EnvironmentError as a
                              // GPU whose worker cannot be restarted would; -1: never
};

// The model's working for one candidate on one shape: what tests check and what a person
// reads to understand a simulated number.
struct SimulatedTiming {
  MeasureStatus status = MeasureStatus::kOk;
  std::string error;                 // why the candidate cannot run, when status != kOk
  int registers = 0;                 // per thread
  bool registers_estimated = false;  // no ptxas report for this kernel: estimated from the tile
  int resident_blocks_per_sm = 0;
  int64_t blocks = 0;  // grid size, all dimensions
  int64_t blocks_on_busiest_sm = 0;
  double tile_efficiency = 0;  // fraction of an SM's peak this micro-kernel reaches with
                               // enough resident warps (the f_MK a cost model learns)
  double compute_us = 0;       // waves on the busiest SM
  double memory_us = 0;        // max of DRAM and L2 time
  double reduce_us = 0;        // split-K reduction kernel, launch included
  double launch_us = 0;        // the main kernel's launch overhead
  double latency_us = 0;       // launch + max(compute, memory) + reduce, before noise
};

class SimulatedDevice : public Measurer {
 public:
  explicit SimulatedDevice(GpuSpec gpu, SimulatedDeviceOptions options = {});

  // name "simulated <GpuSpec::name>", arch "sm_XY" from the spec, simulated = true.
  DeviceIdentity device() const override;

  // One result per input: the noise-scaled model latency for every instance, or the status
  // that keeps the candidate from running (kCompileError, kDeviceLimitsExceeded, kLaunchError
  // for a launch plan that cannot be launched). Never throws for a candidate; throws
  // EnvironmentError once past options.fail_after_calls.
  std::vector<MeasureResult> measure(const std::vector<MeasureInput>& inputs) override;

  // The noise-free model for one shape. input.op must be set; for a conv2d op the shape should
  // be one of input.instances' (else its input is counted as the GEMM's M x K).
  SimulatedTiming model(const MeasureInput& input, const GemmShape& shape) const;

  // The multiplicative noise for one (candidate, instance): exp(sigma * z), z ~ N(0, 1) drawn
  // from a hash of (seed, mk key, op name, shape). Exactly 1 when noise_sigma is 0.
  double noise_factor(const MeasureInput& input, const GemmShape& shape) const;

  const GpuSpec& gpu() const { return gpu_; }
  const SimulatedDeviceOptions& options() const { return options_; }

 private:
  GpuSpec gpu_;
  SimulatedDeviceOptions options_;
  int calls_ = 0;  // measure() calls so far
};

}  // namespace dietcode

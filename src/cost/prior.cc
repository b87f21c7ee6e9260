#include "cost/prior.h"

#include <algorithm>

namespace dietcode {

namespace {

constexpr double kFmaPerSharedLoad = 4.0;    // 128 FMA lanes / 32 shared words per clock
constexpr double kL2ToDramBandwidth = 3.0;   // L2 read bandwidth / DRAM bandwidth
constexpr double kWarpsToHideLatency = 8.0;  // 2 per scheduler, 4 schedulers per SM
constexpr double kAttainableFraction = 0.8;  // best vendor GEMMs reach ~80% of peak

// x86 cores issue two vector FMAs and two loads per clock (Zen 3, Skylake-SP and later), and
// an FMA's result is ready 4 clocks later: 8 independent accumulators keep both pipes busy.
constexpr double kCpuLoadsPerFma = 1.0;
constexpr double kCpuAccumulatorsToHideLatency = 8.0;

// The CPU's ceilings in the same three slots: operand loads (vector loads of B and broadcasts
// of A per vector FMA) for the shared-memory feed, the FMA latency for latency hiding, and
// the L2 feed alike.
PriorCeilings cpu_prior_ceilings(const KernelFeatures& f, double peak_flops_per_us,
                                 double dram_bytes_per_us) {
  PriorCeilings c;
  double loads_per_fma = std::max(1e-6, double(f[Feature::kSharedLoadsPerFma]));
  c.shared_memory = std::min(1.0, kCpuLoadsPerFma / loads_per_fma);
  double intensity = std::max(1e-6, double(f[Feature::kTileIntensity]));
  c.l2 = std::min(1.0, kL2ToDramBandwidth * dram_bytes_per_us * intensity / peak_flops_per_us);
  c.latency = std::clamp(double(f[Feature::kAccumulatorVectors]) / kCpuAccumulatorsToHideLatency,
                         0.0, 1.0);
  return c;
}

}  // namespace

PriorCeilings prior_ceilings(const KernelFeatures& f, double peak_flops_per_us,
                             double dram_bytes_per_us) {
  if (f[Feature::kCpu] == 1) return cpu_prior_ceilings(f, peak_flops_per_us, dram_bytes_per_us);
  PriorCeilings c;
  if (f[Feature::kTensorCore] == 0) {
    double loads_per_fma = std::max(1e-6, double(f[Feature::kSharedLoadsPerFma]));
    c.shared_memory = std::min(1.0, 1.0 / (kFmaPerSharedLoad * loads_per_fma));
  }
  double l2_bytes_per_us = kL2ToDramBandwidth * dram_bytes_per_us;
  double intensity = std::max(1e-6, double(f[Feature::kTileIntensity]));
  double needed_bytes_per_us = peak_flops_per_us / intensity;
  c.l2 = std::min(1.0, l2_bytes_per_us / needed_bytes_per_us);
  double resident_warps = double(f[Feature::kBlocksPerSm]) * f[Feature::kWarps];
  c.latency = std::clamp(resident_warps / kWarpsToHideLatency, 0.0, 1.0);
  return c;
}

double prior_throughput(const KernelFeatures& f, double peak_flops_per_us,
                        double dram_bytes_per_us) {
  return kAttainableFraction * peak_flops_per_us *
         prior_ceilings(f, peak_flops_per_us, dram_bytes_per_us).product();
}

}  // namespace dietcode

#include "cost/prior.h"

#include <algorithm>

namespace dietcode {

namespace {

constexpr double kFmaPerSharedLoad = 4.0;    // 128 FMA lanes / 32 shared words per clock
constexpr double kL2ToDramBandwidth = 3.0;   // L2 read bandwidth / DRAM bandwidth
constexpr double kWarpsToHideLatency = 8.0;  // 2 per scheduler, 4 schedulers per SM
constexpr double kAttainableFraction = 0.8;  // best vendor GEMMs reach ~80% of peak

}  // namespace

PriorCeilings prior_ceilings(const KernelFeatures& f, double peak_flops_per_us,
                             double dram_bytes_per_us) {
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

// A roofline-style estimate of f_MK (a micro-kernel's full-GPU throughput) from its features,
// used to rank candidates before enough have been measured to learn f_MK. It multiplies the
// dtype's peak by three ceilings, each in (0, 1]:
//   - shared-memory feed (SIMT only): an SM reads 32 words per clock from shared memory but
//     issues 128 FP32 FMAs, so a thread needs at least 4 FMAs per operand it loads;
//   - L2 feed: a block tile of arithmetic intensity I (FLOP/byte) at peak P needs P / I bytes
//     per second from L2, which delivers about 3x the DRAM bandwidth on recent GPUs;
//   - latency hiding: fewer than 2 resident warps per scheduler (8 per SM) leave issue slots
//     idle while loads are in flight;
// and by the fraction of peak the best vendor GEMMs reach (~80%). The ceilings order
// candidates sensibly; the absolute value only matters against the memory term.
#pragma once

#include "cost/features.h"

namespace dietcode {

struct PriorCeilings {
  double shared_memory = 1;
  double l2 = 1;
  double latency = 1;
  double product() const { return shared_memory * l2 * latency; }
};

// peak in FLOP/us of the kernel's dtype, DRAM bandwidth in bytes/us.
PriorCeilings prior_ceilings(const KernelFeatures& features, double peak_flops_per_us,
                             double dram_bytes_per_us);

// Prior f_MK in FLOP/us.
double prior_throughput(const KernelFeatures& features, double peak_flops_per_us,
                        double dram_bytes_per_us);

}  // namespace dietcode

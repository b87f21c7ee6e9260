// The CPU target's half of kernel_features: what an x86 micro-kernel's own throughput depends
// on, from its tunables and the CPU's caches. The GPU's occupancy, warps, registers and shared
// memory mean nothing here and stay NaN (missing, to XGBoost); the quantities both targets have
// (register tile, K step, threads, tile intensity, operand loads per FMA) use the same columns.
#include <algorithm>
#include <limits>

#include "cost/features.h"
#include "space/templates.h"
#include "space/x86_space_rules.h"

namespace dietcode {

namespace {

int vector_lanes(const KernelCandidate& c) {
  return c.mk.tmpl.find("avx512") != std::string::npos ? 16 : 8;
}

double ratio(double bytes, int64_t cache_bytes) {
  return cache_bytes > 0 ? bytes / double(cache_bytes) : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace

void set_x86_features(const KernelCandidate& c, KernelFeatures& f) {
  auto set = [&](Feature which, double v) { f.values[size_t(which)] = float(v); };
  const double mr = c.mk.get_or("MR", 1), nr = c.mk.get_or("NR", 1);
  const double kc = c.mk.get_or("KC", 1), mc = c.mk.get_or("MC", 1), nc = c.mk.get_or("NC", 1);
  const int lanes = vector_lanes(c);
  // The dot-product form keeps one vector of partial sums per element of the MR x NR tile
  // and loads MR vectors of A and NR of B per K step of `lanes`; the BLIS form one vector per
  // `lanes` columns, fed by NR / lanes loads of B and MR broadcasts of A.
  const X86Form form = x86_form(c.mk.tmpl);
  const bool dot = form == X86Form::kDot, transposed = form == X86Form::kWbcast;
  const double accumulators = dot ? mr * nr : mr * nr / lanes;
  const double loads_per_step = dot ? mr + nr : nr / lanes + mr;
  constexpr double kBytes = 4;  // fp32

  for (Feature gpu_only : {Feature::kWarps, Feature::kStages, Feature::kSharedMemoryBytes,
                           Feature::kBlocksPerSm, Feature::kOccupancy})
    set(gpu_only, std::numeric_limits<double>::quiet_NaN());
  // The W-broadcast form's tile is C^T's: in C's frame it is NR rows by MR columns.
  set(Feature::kTileM, transposed ? nr : mr);
  set(Feature::kTileN, transposed ? mr : nr);
  set(Feature::kTileK, kc);
  set(Feature::kThreads, x86_kernel_workers(c.mk, c.cpu.threads));
  // The W-broadcast form's kernels logged before PREFETCH_TILE existed had 0; other forms none.
  if (transposed) set(Feature::kTunablePrefetchTile, c.mk.get_or("PREFETCH_TILE", 0));
  // Likewise SHARE_X (X packed once for every worker, blocks handed out), 0 before it existed.
  if (transposed) set(Feature::kTunableShareX, c.mk.get_or("SHARE_X", 0));
  // And the BLIS form's SHARE_W (W packed once for every worker).
  if (form == X86Form::kBlis) set(Feature::kTunableShareW, c.mk.get_or("SHARE_W", 0));
  set(Feature::kOutputsPerThread, mr * nr);
  set(Feature::kThreadTileM, transposed ? nr : mr);
  set(Feature::kThreadTileN, transposed ? mr : nr);
  set(Feature::kVectorWidth, lanes);
  set(Feature::kSplitK, 1);
  // Vector registers: accumulators, one row of B (NR / lanes vectors) and a broadcast of A;
  // the dot form: accumulators, MR vectors of A and one of B.
  set(Feature::kRegisters, dot ? accumulators + mr + 1 : accumulators + nr / lanes + 1);
  set(Feature::kRegistersEstimated, 1);
  set(Feature::kElementBytes, kBytes);
  set(Feature::kTensorCore, 0);
  // Per k the register tile loads MR + NR elements for 2 * MR * NR FLOPs.
  set(Feature::kTileIntensity, 2.0 * mr * nr / ((mr + nr) * kBytes));
  // Per k: NR / lanes vector loads of B and MR broadcasts of A feed MR * NR / lanes vector FMAs.
  set(Feature::kSharedLoadsPerFma, loads_per_step / accumulators);
  set(Feature::kTmaProducer, 0);

  set(Feature::kCpu, 1);
  set(Feature::kVectorLanes, lanes);
  set(Feature::kAccumulatorVectors, accumulators);
  set(Feature::kL1Footprint, ratio(kc * (mr + nr) * kBytes, c.cpu.l1d_bytes));
  set(Feature::kL2Footprint, ratio(mc * kc * kBytes, c.cpu.l2_bytes));
  set(Feature::kL3Footprint, ratio(kc * nc * kBytes, c.cpu.l3_bytes));
  set(Feature::kBInPlace, dot || transposed ? 1 : 0);
  set(Feature::kCTransposed, transposed ? 1 : 0);
}

}  // namespace dietcode

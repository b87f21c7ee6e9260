// Features of a micro-kernel alone, never of a shape: what the learned f_MK (the kernel's own
// full-GPU throughput) is a function of. The list is fixed and ordered (enum Feature), so a
// model trained in one run reads the same columns in the next, whatever templates exist.
//
// Two groups:
//   - the raw tunables, by conventional name (absent ones are NaN, which XGBoost treats as
//     missing and routes by a learned default direction);
//   - derived quantities that hold across templates: block tile, threads, per-thread tile,
//     registers, shared memory, tile arithmetic intensity (FLOPs per byte a block loads),
//     shared-memory loads per FMA of a thread, and the occupancy at a full grid.
#pragma once

#include <string>
#include <vector>

#include "cost/candidate.h"

namespace dietcode {

enum class Feature : int {
  // Tunables as the template names them; NaN when the template has no such tunable.
  kTunableBM,
  kTunableBN,
  kTunableBK,
  kTunableWarpsM,
  kTunableWarpsN,
  kTunableThreadsM,
  kTunableThreadsN,
  kTunableTM,
  kTunableTN,
  kTunableWM,
  kTunableWN,
  kTunableStages,
  kTunableVec,
  kTunableSplitK,
  // Derived, defined for every template.
  kTileM,
  kTileN,
  kTileK,
  kThreads,
  kWarps,
  kOutputsPerThread,
  kThreadTileM,
  kThreadTileN,
  kStages,
  kVectorWidth,
  kSplitK,
  kRegisters,
  kRegistersEstimated,  // 1 when registers is an estimate (not compiled yet)
  kSharedMemoryBytes,
  kElementBytes,
  kTensorCore,         // 1 for fp16/bf16 templates, whose peak is the tensor-core peak
  kTileIntensity,      // FLOPs per byte loaded from global memory by one block tile
  kSharedLoadsPerFma,  // operand loads from shared memory per FMA, per thread
  kBlocksPerSm,
  kOccupancy,    // resident warps / max warps at a full grid
  kTmaProducer,  // 1 when stages are filled by TMA tensor copies (dense_wgmma PRODUCER=1)
  kCount
};

inline constexpr int kFeatureCount = int(Feature::kCount);

// The tunable each kTunable* feature reads, in enum order.
const std::vector<std::string>& feature_tunable_names();

// Names of all features in enum order: the tunables as named, derived ones in snake_case.
const std::vector<std::string>& feature_names();

struct KernelFeatures {
  std::vector<float> values;  // kFeatureCount entries, in enum order
  float operator[](Feature f) const { return values[size_t(f)]; }
};

KernelFeatures kernel_features(const KernelCandidate& c);

// "BM=64 BN=64 ... occupancy=0.5": every feature by name, for logs and debugging.
std::string describe(const KernelFeatures& features);

}  // namespace dietcode

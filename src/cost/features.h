// Features of a micro-kernel alone, never of a shape: what the learned f_MK (the kernel's own
// full-GPU throughput) is a function of. The list is fixed and ordered (enum Feature), so a
// model trained in one run reads the same columns in the next, whatever templates exist.
//
// Two groups:
//   - the raw tunables, by conventional name (absent ones are NaN, which XGBoost treats as
//     missing and routes by a learned default direction); the x86 templates' names too;
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
  kTunablePreload,
  // The x86 templates' tunables (THREADS_M above is theirs too).
  kTunableMR,
  kTunableNR,
  kTunableKC,
  kTunableMC,
  kTunableNC,
  kTunableLoopOrder,
  kTunablePackA,
  kTunablePrefetch,
  kTunableUnroll,
  kTunablePrefetchTile,
  kTunableShareX,
  kTunableShareW,
  // Derived, defined for every template (GPU-only ones are NaN for x86 templates).
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
  kOccupancy,       // resident warps / max warps at a full grid
  kTmaProducer,     // 1 when stages are filled by TMA tensor copies (dense_wgmma PRODUCER=1)
  kStagedStore,     // 1 when outputs leave through shared memory (dense_wgmma EPI_SMEM=1)
  kMFastest,        // 1 when blocks in launch order walk M tiles first (dense_wgmma M_FASTEST=1)
  kMTilesPerBlock,  // M tiles a block computes in turn (dense_wgmma M_TILES; 1 elsewhere)
  kEpilogueWork,    // the fused epilogue's arithmetic per output element, roughly (both targets)
  // The CPU target's (NaN for GPU templates, but kCpu, which is 0 there).
  kCpu,                 // 1 for x86 templates
  kVectorLanes,         // fp32 lanes of a vector register: 8 (AVX2), 16 (AVX-512)
  kAccumulatorVectors,  // MR * NR / lanes vector registers hold the C tile (dot form: MR * NR)
  kL1Footprint,         // KC * (MR + NR) * 4 bytes (the micro-panels of one k loop) / L1d
  kL2Footprint,         // MC * KC * 4 bytes (the packed A block) / L2
  kL3Footprint,         // KC * NC * 4 bytes (the packed B block) / L3
  kBInPlace,            // 1 for the forms that read B (W) in place: dot-product, W-broadcast
  kCTransposed,         // 1 for the W-broadcast form (vectors along M, C tile stored transposed)
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

// Dispatches on c.target: the tunables are read alike, the derived values are the target's.
KernelFeatures kernel_features(const KernelCandidate& c);

// The CPU target's derived features (x86_features.cc), into f (tunables already set).
void set_x86_features(const KernelCandidate& c, KernelFeatures& f);

// "BM=64 BN=64 ... occupancy=0.5": every feature by name, for logs and debugging.
std::string describe(const KernelFeatures& features);

}  // namespace dietcode

#include "cost/features.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "cost/analytic.h"

namespace dietcode {

const std::vector<std::string>& feature_tunable_names() {
  static const std::vector<std::string> names = {
      "BM", "BN", "BK",         "WARPS_M", "WARPS_N",  "THREADS_M", "THREADS_N",    "TM", "TN",
      "WM", "WN", "STAGES",     "VEC",     "SPLITK",   "PRELOAD",   "MR",           "NR", "KC",
      "MC", "NC", "LOOP_ORDER", "PACK_A",  "PREFETCH", "UNROLL",    "PREFETCH_TILE",
      "SHARE_X", "SHARE_W"};
  return names;
}

const std::vector<std::string>& feature_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n = feature_tunable_names();
    for (const char* derived : {"tile_m",
                                "tile_n",
                                "tile_k",
                                "threads",
                                "warps",
                                "outputs_per_thread",
                                "thread_tile_m",
                                "thread_tile_n",
                                "stages",
                                "vector_width",
                                "split_k",
                                "registers",
                                "registers_estimated",
                                "shared_memory_bytes",
                                "element_bytes",
                                "tensor_core",
                                "tile_intensity",
                                "shared_loads_per_fma",
                                "blocks_per_sm",
                                "occupancy",
                                "tma_producer",
                                "staged_store",
                                "m_fastest",
                                "m_tiles_per_block",
                                "epilogue_work",
                                "cpu",
                                "vector_lanes",
                                "accumulator_vectors",
                                "l1_footprint",
                                "l2_footprint",
                                "l3_footprint",
                                "b_in_place",
                                "c_transposed"})
      n.push_back(derived);
    return n;
  }();
  return names;
}

namespace {

// Operations per output element, as a rank the trees can split on, not a cost: a bias is an
// add, a ReLU a max, GELU an erf (a polynomial and an exponential, about a dozen).
double epilogue_work(Epilogue e) {
  switch (e) {
    case Epilogue::kNone: return 0;
    case Epilogue::kBias: return 1;
    case Epilogue::kRelu: return 1;
    case Epilogue::kBiasRelu: return 2;
    case Epilogue::kGelu: return 12;
    case Epilogue::kBiasGelu: return 13;
  }
  return 0;
}

}  // namespace

KernelFeatures kernel_features(const KernelCandidate& c) {
  KernelFeatures f;
  f.values.assign(kFeatureCount, 0.0f);
  auto set = [&](Feature which, double v) { f.values[size_t(which)] = float(v); };

  const auto& tunables = feature_tunable_names();
  for (size_t i = 0; i < tunables.size(); ++i) {
    auto it = c.mk.params.find(tunables[i]);
    f.values[size_t(Feature::kTunableBM) + i] =
        it == c.mk.params.end() ? std::numeric_limits<float>::quiet_NaN() : float(it->second);
  }
  set(Feature::kEpilogueWork, epilogue_work(c.epilogue));
  constexpr float kMissing = std::numeric_limits<float>::quiet_NaN();
  for (int i = int(Feature::kCpu) + 1; i < kFeatureCount; ++i) f.values[size_t(i)] = kMissing;
  if (c.target == Target::kCpu) {
    set_x86_features(c, f);
    return f;
  }

  double tile_m = std::max(1, c.plan.tile_m), tile_n = std::max(1, c.plan.tile_n);
  int threads = std::max(1, c.plan.threads);
  int bytes = element_bytes(c.dtype);
  ThreadTile tt = thread_tile(c);
  int registers = registers_per_thread(c);
  int smem = shared_memory_bytes(c);
  OccupancyLimits occ = occupancy_limits(c.gpu, c.plan.threads, registers, smem);

  set(Feature::kTileM, tile_m);
  set(Feature::kTileN, tile_n);
  set(Feature::kTileK, k_tile(c));
  set(Feature::kThreads, threads);
  set(Feature::kWarps, occ.warps_per_block);
  set(Feature::kOutputsPerThread, tile_m * tile_n / threads);
  set(Feature::kThreadTileM, tt.m);
  set(Feature::kThreadTileN, tt.n);
  set(Feature::kStages, c.mk.get_or("STAGES", 1));
  set(Feature::kVectorWidth, c.mk.get_or("VEC", 1));
  set(Feature::kSplitK, std::max(1, c.plan.split_k));
  set(Feature::kRegisters, registers);
  set(Feature::kRegistersEstimated, registers_are_estimated(c) ? 1 : 0);
  set(Feature::kSharedMemoryBytes, smem);
  set(Feature::kElementBytes, bytes);
  set(Feature::kTensorCore, c.dtype == DType::kFloat32 ? 0 : 1);
  // Per K step a block loads (BM + BN) * BK elements and does 2 * BM * BN * BK FLOPs.
  set(Feature::kTileIntensity, 2.0 * tile_m * tile_n / ((tile_m + tile_n) * bytes));
  // Per K step a thread reads TM + TN operands from shared memory for TM * TN FMAs.
  set(Feature::kSharedLoadsPerFma, (tt.m + tt.n) / (tt.m * tt.n));
  set(Feature::kBlocksPerSm, occ.blocks_per_sm);
  set(Feature::kOccupancy, occ.occupancy);
  set(Feature::kTmaProducer, c.mk.get_or("PRODUCER", 0) == 1 ? 1 : 0);
  set(Feature::kStagedStore, c.mk.get_or("EPI_SMEM", 0) == 1 ? 1 : 0);
  set(Feature::kMFastest, c.mk.get_or("M_FASTEST", 0) == 1 ? 1 : 0);
  set(Feature::kMTilesPerBlock, std::max(1, c.plan.m_tiles_per_block));
  return f;
}

std::string describe(const KernelFeatures& features) {
  std::ostringstream out;
  const auto& names = feature_names();
  for (size_t i = 0; i < names.size() && i < features.values.size(); ++i) {
    if (i) out << ' ';
    out << names[i] << '=' << features.values[i];
  }
  return out.str();
}

}  // namespace dietcode

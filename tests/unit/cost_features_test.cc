// Micro-kernel features: a fixed, named, ordered list computed from the kernel alone.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "cost/features.h"

namespace dietcode {
namespace {

KernelCandidate simt_candidate() {
  KernelCandidate c;
  c.mk = {"dense_f32",
          {{"BM", 64}, {"BN", 128}, {"BK", 16}, {"TM", 8}, {"TN", 4}, {"STAGES", 3}, {"VEC", 4}}};
  c.plan.threads = 256;
  c.plan.tile_m = 64;
  c.plan.tile_n = 128;
  c.plan.dynamic_smem_bytes = 36864;
  c.compiled = KernelResources{"k", 96, 0, 0, 0, 0};
  return c;  // GpuSpec defaults: H100
}

TEST(CostFeatures, NamesAreFixedUniqueAndOrdered) {
  const auto& names = feature_names();
  ASSERT_EQ(names.size(), size_t(kFeatureCount));
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size());
  EXPECT_EQ(names[size_t(Feature::kTunableBM)], "BM");
  EXPECT_EQ(names[size_t(Feature::kTunableSplitK)], "SPLITK");
  EXPECT_EQ(names[size_t(Feature::kTunablePreload)], "PRELOAD");
  EXPECT_EQ(names[size_t(Feature::kTileM)], "tile_m");
  EXPECT_EQ(names[size_t(Feature::kTileIntensity)], "tile_intensity");
  EXPECT_EQ(names[size_t(Feature::kOccupancy)], "occupancy");
  EXPECT_EQ(names[size_t(Feature::kTmaProducer)], "tma_producer");
  EXPECT_EQ(names[size_t(Feature::kStagedStore)], "staged_store");
  EXPECT_EQ(names[size_t(Feature::kMFastest)], "m_fastest");
  EXPECT_EQ(names[size_t(Feature::kMTilesPerBlock)], "m_tiles_per_block");
  EXPECT_EQ(names[size_t(Feature::kTunableMR)], "MR");
  EXPECT_EQ(names.back(), "c_transposed");
}

TEST(CostFeatures, SimtGemmTile) {
  KernelFeatures f = kernel_features(simt_candidate());
  ASSERT_EQ(f.values.size(), size_t(kFeatureCount));
  EXPECT_EQ(f[Feature::kTunableBM], 64);
  EXPECT_EQ(f[Feature::kTunableTN], 4);
  EXPECT_TRUE(std::isnan(f[Feature::kTunableWarpsM]));  // not a tunable of this kernel
  EXPECT_TRUE(std::isnan(f[Feature::kTunableSplitK]));
  EXPECT_EQ(f[Feature::kTileM], 64);
  EXPECT_EQ(f[Feature::kTileN], 128);
  EXPECT_EQ(f[Feature::kTileK], 16);
  EXPECT_EQ(f[Feature::kThreads], 256);
  EXPECT_EQ(f[Feature::kWarps], 8);
  EXPECT_EQ(f[Feature::kOutputsPerThread], 32);  // 64 x 128 / 256
  EXPECT_EQ(f[Feature::kThreadTileM], 8);
  EXPECT_EQ(f[Feature::kThreadTileN], 4);
  EXPECT_EQ(f[Feature::kStages], 3);
  EXPECT_EQ(f[Feature::kVectorWidth], 4);
  EXPECT_EQ(f[Feature::kSplitK], 1);
  EXPECT_EQ(f[Feature::kRegisters], 96);
  EXPECT_EQ(f[Feature::kRegistersEstimated], 0);
  EXPECT_EQ(f[Feature::kSharedMemoryBytes], 36864);
  EXPECT_EQ(f[Feature::kElementBytes], 4);
  EXPECT_EQ(f[Feature::kTensorCore], 0);
  // 2 x 64 x 128 FLOPs per (64 + 128) x 4 bytes, per unit of K.
  EXPECT_FLOAT_EQ(f[Feature::kTileIntensity], 16384.0f / 768.0f);
  // 8 + 4 operands per 8 x 4 FMAs.
  EXPECT_FLOAT_EQ(f[Feature::kSharedLoadsPerFma], 12.0f / 32.0f);
  // Registers: 96 x 32 = 3072 per warp, 5 warps per sub-partition, 20 per SM: 2 blocks of 8
  // warps (shared memory would allow 6): 16 of 64 warps.
  EXPECT_EQ(f[Feature::kBlocksPerSm], 2);
  EXPECT_FLOAT_EQ(f[Feature::kOccupancy], 0.25f);
}

TEST(CostFeatures, TensorCoreKernelWithoutThreadTileTunables) {
  KernelCandidate c;
  c.mk = {"dense_bf16", {{"BM", 128}, {"BN", 128}, {"BK", 32}, {"SPLITK", 2}}};
  c.dtype = DType::kBFloat16;
  c.plan.threads = 128;
  c.plan.tile_m = 128;
  c.plan.tile_n = 128;
  c.plan.split_k = 2;
  KernelFeatures f = kernel_features(c);
  EXPECT_EQ(f[Feature::kTensorCore], 1);
  EXPECT_EQ(f[Feature::kElementBytes], 2);
  EXPECT_EQ(f[Feature::kSplitK], 2);
  EXPECT_EQ(f[Feature::kTunableSplitK], 2);
  EXPECT_EQ(f[Feature::kStages], 1);  // no STAGES tunable: single-stage
  // 128 outputs per thread, spread as a square: sqrt(128) each way.
  EXPECT_FLOAT_EQ(f[Feature::kThreadTileM], std::sqrt(128.0f));
  EXPECT_FLOAT_EQ(f[Feature::kTileIntensity], 2.0f * 128 * 128 / (256 * 2));
  EXPECT_EQ(f[Feature::kRegistersEstimated], 1);
}

// The producer, the staged store and the launch order are tunables only dense_wgmma has; their
// features are 0 for every other kernel.
TEST(CostFeatures, TmaProducerOfWarpgroupKernels) {
  KernelCandidate c;
  c.mk = {"dense_wgmma", {{"WG_M", 2}, {"BN", 128}, {"STAGES", 4}, {"PRODUCER", 1}}};
  c.dtype = DType::kBFloat16;
  c.plan.threads = 384;
  c.plan.tile_m = 128;
  c.plan.tile_n = 128;
  EXPECT_EQ(kernel_features(c)[Feature::kTmaProducer], 1);
  c.mk.params["PRODUCER"] = 0;
  EXPECT_EQ(kernel_features(c)[Feature::kTmaProducer], 0);
  EXPECT_EQ(kernel_features(simt_candidate())[Feature::kTmaProducer], 0);
  EXPECT_EQ(kernel_features(c)[Feature::kStagedStore], 0);
  c.mk.params["EPI_SMEM"] = 1;
  EXPECT_EQ(kernel_features(c)[Feature::kStagedStore], 1);
  EXPECT_EQ(kernel_features(simt_candidate())[Feature::kStagedStore], 0);
  EXPECT_EQ(kernel_features(c)[Feature::kMFastest], 0);
  c.mk.params["M_FASTEST"] = 1;
  EXPECT_EQ(kernel_features(c)[Feature::kMFastest], 1);
  EXPECT_EQ(kernel_features(c)[Feature::kMTilesPerBlock], 1);
  c.plan.m_tiles_per_block = 3;
  EXPECT_EQ(kernel_features(c)[Feature::kMTilesPerBlock], 3);
  EXPECT_EQ(kernel_features(simt_candidate())[Feature::kMTilesPerBlock], 1);
}

// The x86 forms: the BLIS form's tile is MR x NR/lanes vectors fed by NR/lanes loads and MR
// broadcasts; the dot form's is MR x NR vectors (one per C element) fed by MR + NR loads.
TEST(CostFeatures, TheTwoX86FormsCountTheirRegisterTilesTheirOwnWay) {
  KernelCandidate blis;
  blis.target = Target::kCpu;
  blis.mk = {"x86_avx512_f32", {{"MR", 12}, {"NR", 32}, {"KC", 192}, {"MC", 168}, {"NC", 1024}}};
  blis.cpu.threads = 2;
  const KernelFeatures b = kernel_features(blis);
  EXPECT_EQ(b[Feature::kAccumulatorVectors], 24);
  EXPECT_EQ(b[Feature::kRegisters], 24 + 2 + 1);
  EXPECT_FLOAT_EQ(b[Feature::kSharedLoadsPerFma], (2.0f + 12) / 24);
  EXPECT_EQ(b[Feature::kBInPlace], 0);

  KernelCandidate dot = blis;
  dot.mk = {"x86_avx512_dot_f32", {{"MR", 4}, {"NR", 6}, {"KC", 768}, {"THREADS_M", 1}}};
  const KernelFeatures d = kernel_features(dot);
  EXPECT_EQ(d[Feature::kAccumulatorVectors], 24);
  EXPECT_EQ(d[Feature::kRegisters], 24 + 4 + 1);
  EXPECT_FLOAT_EQ(d[Feature::kSharedLoadsPerFma], (4.0f + 6) / 24);
  EXPECT_EQ(d[Feature::kBInPlace], 1);
  EXPECT_TRUE(std::isnan(d[Feature::kTunableMC]));
  EXPECT_TRUE(std::isnan(kernel_features(simt_candidate())[Feature::kBInPlace]));
}

TEST(CostFeatures, DescribeNamesEveryValue) {
  std::string text = describe(kernel_features(simt_candidate()));
  EXPECT_EQ(text.rfind("BM=64 BN=128 BK=16 WARPS_M=nan", 0), 0u) << text;
  EXPECT_NE(text.find(" blocks_per_sm=2 occupancy=0.25 tma_producer=0"), std::string::npos)
      << text;
}

TEST(CostFeatures, CompiledRegistersDriveOccupancy) {
  KernelCandidate c = simt_candidate();
  c.compiled->registers = 200;  // 6400 per warp: 2 warps per sub-partition, 8 per SM
  KernelFeatures f = kernel_features(c);
  EXPECT_EQ(f[Feature::kRegisters], 200);
  EXPECT_EQ(f[Feature::kBlocksPerSm], 1);
  EXPECT_FLOAT_EQ(f[Feature::kOccupancy], 0.125f);
  c.compiled->static_smem = 4096;  // static adds to the plan's dynamic shared memory
  EXPECT_EQ(kernel_features(c)[Feature::kSharedMemoryBytes], 36864 + 4096);
}

}  // namespace
}  // namespace dietcode

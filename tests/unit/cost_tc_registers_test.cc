// The cost model's register estimate for the tensor-core templates before they are compiled:
// mma.sync warp tiles count accumulators and two k16 steps of fragments, warp-specialized
// wgmma kernels count their consumer threads' accumulators, and a ptxas report wins over both.
#include <gtest/gtest.h>

#include "cost/candidate.h"
#include "cost/features.h"

namespace dietcode {
namespace {

KernelCandidate candidate(MicroKernel mk, int threads, int tile_m, int tile_n) {
  KernelCandidate c;
  c.mk = std::move(mk);
  c.dtype = DType::kFloat16;
  c.plan.threads = threads;
  c.plan.tile_m = tile_m;
  c.plan.tile_n = tile_n;
  return c;
}

TEST(CostTensorCoreRegisters, MmaSyncWarpTile) {
  auto c = candidate({"dense_tc", {{"WM", 64}, {"WN", 32}, {"WARPS_M", 2}, {"WARPS_N", 2}}}, 128,
                     128, 64);
  EXPECT_EQ(registers_per_thread(c), 64 + 32 + 16 + 32);
  EXPECT_TRUE(registers_are_estimated(c));
  c.compiled = KernelResources{"dietcode_dense_tc", 154};
  EXPECT_EQ(registers_per_thread(c), 154);
  EXPECT_EQ(kernel_features(c)[Feature::kTunableWM], 64);
  EXPECT_EQ(kernel_features(c)[Feature::kTensorCore], 1);
}

TEST(CostTensorCoreRegisters, WarpgroupConsumers) {
  // 384 threads of which 256 consumers: the block average (128 x 256 / 384 = 85) would
  // understate the 128 accumulators a consumer holds.
  const auto c = candidate({"dense_wgmma", {{"WG_M", 2}, {"BN", 256}}}, 384, 128, 256);
  EXPECT_EQ(registers_per_thread(c), 128 + 32);
  EXPECT_EQ(kernel_features(c)[Feature::kTunableBN], 256);
}

TEST(CostTensorCoreRegisters, Fp32TemplatesKeepTheirEstimate) {
  KernelCandidate c = candidate({"dense_f32", {{"TM", 8}, {"TN", 8}}}, 256, 128, 128);
  c.dtype = DType::kFloat32;
  EXPECT_EQ(registers_per_thread(c), 64 + 2 * 16 + 32);
}

}  // namespace
}  // namespace dietcode

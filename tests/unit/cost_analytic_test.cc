// The analytic cost terms against numbers worked out by hand from the CUDA occupancy rules
// and the formulas in src/cost/analytic.h.
#include <gtest/gtest.h>

#include <cmath>

#include "cost/analytic.h"

namespace dietcode {
namespace {

// H100 SXM limits, spelled out so the hand computations below do not depend on defaults.
GpuSpec h100() {
  GpuSpec g;
  g.cc_major = 9;
  g.cc_minor = 0;
  g.sms = 132;
  g.warp_size = 32;
  g.max_threads_per_block = 1024;
  g.max_threads_per_sm = 2048;
  g.max_blocks_per_sm = 32;
  g.regs_per_sm = 65536;
  g.regs_per_block = 65536;
  g.max_regs_per_thread = 255;
  g.smem_per_block = 48 * 1024;
  g.smem_per_block_optin = 227 * 1024;
  g.smem_per_sm = 228 * 1024;
  g.fp32_tflops = 67.0;
  g.mem_bandwidth_gbs = 3350.0;
  return g;
}

TEST(CostOccupancy, RegistersBindAGemmTile) {
  // 256 threads = 8 warps. Threads: 64 warps / 8 = 8 blocks. Registers: 128 x 32 = 4096 per
  // warp; a sub-partition's 16384 hold 4 warps, the SM 16, so 2 blocks. Shared memory:
  // 32768 + 1024 reserved = 33792 allocated; 233472 / 33792 = 6 blocks.
  OccupancyLimits o = occupancy_limits(h100(), 256, 128, 32768);
  EXPECT_EQ(o.warps_per_block, 8);
  EXPECT_EQ(o.by_threads, 8);
  EXPECT_EQ(o.by_registers, 2);
  EXPECT_EQ(o.by_shared_memory, 6);
  EXPECT_EQ(o.by_hardware, 32);
  EXPECT_EQ(o.blocks_per_sm, 2);
  EXPECT_DOUBLE_EQ(o.occupancy, 16.0 / 64.0);
}

TEST(CostOccupancy, RegistersAreAllocatedPerWarpPerSubPartition) {
  // 33 registers x 32 lanes = 1056, rounded to 256s: 1280 per warp. A sub-partition holds
  // 16384 / 1280 = 12 warps (not 12.8), the SM 48, so 96-thread blocks (3 warps): 16. Counting
  // the SM's registers as one pool would give 65536 / 1280 = 51 warps, 17 blocks.
  OccupancyLimits o = occupancy_limits(h100(), 96, 33, 0);
  EXPECT_EQ(o.by_registers, 16);
  EXPECT_EQ(o.by_threads, 21);
  EXPECT_EQ(o.blocks_per_sm, 16);
}

TEST(CostOccupancy, SharedMemoryBindsLargeTiles) {
  // 102400 + 1024 = 103424 allocated; 233472 / 103424 = 2 blocks.
  OccupancyLimits o = occupancy_limits(h100(), 128, 64, 100 * 1024);
  EXPECT_EQ(o.by_shared_memory, 2);
  EXPECT_EQ(o.by_registers, 8);
  EXPECT_EQ(o.blocks_per_sm, 2);
}

TEST(CostOccupancy, LimitsOfOneBlock) {
  // The whole opt-in limit fits one block; one byte more does not launch.
  EXPECT_EQ(occupancy_limits(h100(), 128, 64, 227 * 1024).blocks_per_sm, 1);
  EXPECT_EQ(occupancy_limits(h100(), 128, 64, 227 * 1024 + 1).blocks_per_sm, 0);
  // 255 registers x 1024 threads needs 8192 x 32 = 262144 registers in one block.
  EXPECT_EQ(occupancy_limits(h100(), 1024, 255, 0).blocks_per_sm, 0);
  EXPECT_EQ(occupancy_limits(h100(), 1025, 32, 0).blocks_per_sm, 0);
  EXPECT_EQ(occupancy_limits(h100(), 0, 32, 0).blocks_per_sm, 0);
  // Unknown registers (0) do not limit; tiny blocks hit the hardware's 32 blocks per SM.
  EXPECT_EQ(occupancy_limits(h100(), 32, 0, 0).blocks_per_sm, 32);
}

TEST(CostOccupancy, TuringHasCoarserSharedMemoryAndNoReserve) {
  GpuSpec t4 = h100();
  t4.cc_major = 7;
  t4.cc_minor = 5;
  t4.max_threads_per_sm = 1024;
  t4.max_blocks_per_sm = 16;
  t4.smem_per_sm = t4.smem_per_block_optin = 64 * 1024;
  // 1000 bytes round to 1024 (256-byte units, no reserve): 64 blocks by shared memory.
  OccupancyLimits o = occupancy_limits(t4, 64, 32, 1000);
  EXPECT_EQ(o.by_shared_memory, 64);
  EXPECT_EQ(o.blocks_per_sm, 16);
}

TEST(CostWaveOccupancy, GammaOneIsGridOverRoundedUpSlots) {
  // slots = 132 x 2 = 264. G / roundup(G, slots):
  EXPECT_DOUBLE_EQ(wave_occupancy_factor(264, 2, 132, 1.0), 1.0);
  EXPECT_DOUBLE_EQ(wave_occupancy_factor(265, 2, 132, 1.0), 265.0 / 528.0);
  EXPECT_DOUBLE_EQ(wave_occupancy_factor(300, 2, 132, 1.0), 300.0 / 528.0);
  EXPECT_DOUBLE_EQ(wave_occupancy_factor(66, 2, 132, 1.0), 66.0 / 264.0);
}

TEST(CostWaveOccupancy, LoneBlocksGetMoreOfAnSm) {
  // 66 blocks, one per SM on half the SMs, each at (1/2)^0.5 of an SM's throughput.
  EXPECT_NEAR(wave_occupancy_factor(66, 2, 132, 0.5), 0.35355339059327373, 1e-15);
  // 300 blocks: one full wave of 264, then 36 on SMs holding 1 of 2.
  EXPECT_NEAR(wave_occupancy_factor(300, 2, 132, 0.5), 0.6656664063942103, 1e-15);
  // gamma 0: an SM is as fast with 2 of 4 blocks as with 4. 200 blocks put 2 on the busiest SM.
  EXPECT_DOUBLE_EQ(wave_occupancy_factor(200, 4, 132, 0.0), (200.0 / 528.0) / 0.5);
}

TEST(CostWaveOccupancy, SmallGridNeverUsesMoreThanItsSms) {
  // One block per SM fits: 66 blocks use 66 of 132 SMs whatever gamma says.
  for (double gamma : {0.0, 0.5, 1.0})
    EXPECT_DOUBLE_EQ(wave_occupancy_factor(66, 1, 132, gamma), 0.5);
  EXPECT_EQ(wave_occupancy_factor(10, 0, 132, 0.5), 0.0);  // cannot launch
  EXPECT_EQ(wave_occupancy_factor(0, 2, 132, 0.5), 1.0);
}

TEST(CostPadding, KIsPaddedToBkWithinEachSplit) {
  EXPECT_EQ(padded_k(768, 32, 1), 768);
  EXPECT_EQ(padded_k(770, 32, 1), 800);  // 25 K tiles
  EXPECT_EQ(padded_k(768, 32, 5), 800);  // 24 tiles in 5 slices of 5
  EXPECT_EQ(padded_k(768, 1, 1), 768);
}

TEST(CostPadding, UsefulFractionOfTheComputedTiles) {
  LaunchPlan plan;
  plan.tile_m = 64;
  plan.tile_n = 128;
  GemmShape shape{1, 100, 768, 770};
  // M 100 -> 128, N 768 stays, K 770 -> 800.
  EXPECT_DOUBLE_EQ(padding_factor(plan, 32, shape), 100.0 * 768 * 770 / (128.0 * 768 * 800));
  EXPECT_DOUBLE_EQ(padding_factor(plan, 32, {1, 128, 768, 768}), 1.0);
}

TEST(CostGrid, CeilDivisionsAndSplitK) {
  LaunchPlan plan;
  plan.tile_m = 64;
  plan.tile_n = 128;
  plan.split_k = 3;
  GridDims g = main_grid(plan, {2, 100, 768, 770});
  EXPECT_EQ(g.x, 6);
  EXPECT_EQ(g.y, 2);
  EXPECT_EQ(g.z, 6);
  EXPECT_EQ(g.blocks(), 72);
}

KernelCandidate gemm_candidate() {
  KernelCandidate c;
  c.mk = {"dense_f32", {{"BM", 128}, {"BN", 128}, {"BK", 32}}};
  c.plan.threads = 256;
  c.plan.tile_m = 128;
  c.plan.tile_n = 128;
  c.plan.dynamic_smem_bytes = 32768;
  c.compiled = KernelResources{"k", 128, 0, 0, 0, 0};
  c.gpu = h100();
  return c;
}

// M tiles per block (dense_wgmma's M_TILES): fewer block rows, and the slots of blocks whose
// walk is shorter than the longest idle for the difference.
TEST(CostGrid, BlocksThatWalkSeveralMTiles) {
  LaunchPlan plan;
  plan.tile_m = 128;
  plan.tile_n = 128;
  plan.m_tiles_per_block = 2;
  EXPECT_EQ(main_grid(plan, {1, 1808, 2304, 768}).y, 8);  // 15 M tiles
  plan.m_tiles_per_block = 4;
  EXPECT_EQ(main_grid(plan, {1, 1808, 2304, 768}).y, 4);
  KernelCandidate c = gemm_candidate();
  c.plan.m_tiles_per_block = 2;
  AnalyticTerms t = analytic_terms(make_profile(c), {1, 1808, 2304, 768}, AnalyticParams{});
  EXPECT_EQ(t.grid_blocks, 18 * 8);
  EXPECT_DOUBLE_EQ(t.split_balance, 15.0 / 16.0);  // 8 rows walk 2 tiles but there are 15
  c.plan.m_tiles_per_block = 4;                    // 4 rows: walks of 4, 4, 4, 3
  EXPECT_DOUBLE_EQ(analytic_terms(make_profile(c), {1, 1808, 2304, 768}, {}).split_balance,
                   15.0 / 16.0);
  c.plan.m_tiles_per_block = 1;
  EXPECT_DOUBLE_EQ(analytic_terms(make_profile(c), {1, 1808, 2304, 768}, {}).split_balance, 1.0);
}

TEST(CostBytes, OperandsOnceAndSplitKWorkspace) {
  KernelCandidate c = gemm_candidate();
  c.plan.tile_m = 64;
  GemmShape shape{1, 100, 768, 770};
  KernelProfile p = make_profile(c);
  EXPECT_DOUBLE_EQ(main_kernel_bytes(p, shape), 308000 + 2365440 + 307200);
  EXPECT_DOUBLE_EQ(reduce_kernel_bytes(p, shape), 0);
  c.plan.split_k = 3;
  c.plan.reduce_entry = "reduce";
  p = make_profile(c);
  EXPECT_DOUBLE_EQ(main_kernel_bytes(p, shape), 308000 + 2365440 + 921600);
  EXPECT_DOUBLE_EQ(reduce_kernel_bytes(p, shape), 921600 + 307200);
}

TEST(CostLatency, ComputeBoundSmallGrid) {
  KernelCandidate c = gemm_candidate();
  AnalyticParams params;  // gamma 0.5, overhead 2 us, bandwidth efficiency 0.9
  AnalyticTerms t = analytic_terms(make_profile(c), {1, 1024, 768, 768}, params);
  // 6 x 8 = 48 blocks, 2 per SM: f_occ = (48 / 264) / sqrt(1/2).
  EXPECT_EQ(t.grid_blocks, 48);
  EXPECT_EQ(t.blocks_per_sm, 2);
  EXPECT_NEAR(t.f_occ, 0.25712973861328997, 1e-15);
  EXPECT_DOUBLE_EQ(t.f_pad, 1.0);
  EXPECT_NEAR(t.memory_us(), 2.8692378109452736, 1e-12);
  EXPECT_EQ(t.reduce_us(), 0);
  double latency = model_latency_us(t, 40e6);  // f_MK = 40 TFLOP/s
  EXPECT_NEAR(latency, 119.44650371001131, 1e-9);
  // The label inverts the prediction.
  EXPECT_NEAR(implied_throughput(t, latency), 40e6, 1e-3);
}

TEST(CostLatency, SplitKAddsTheReductionKernel) {
  KernelCandidate c = gemm_candidate();
  c.plan.split_k = 4;
  c.plan.reduce_entry = "reduce";
  AnalyticTerms t = analytic_terms(make_profile(c), {1, 1024, 768, 768}, AnalyticParams{});
  // 192 blocks: the busiest SM holds 2 of 2, so f_occ = 192 / 264; the reduction reads 4
  // fp32 partials and writes one output per element, after its own 2 us launch.
  EXPECT_EQ(t.grid_blocks, 192);
  EXPECT_DOUBLE_EQ(t.f_occ, 192.0 / 264.0);
  EXPECT_NEAR(model_latency_us(t, 40e6), 50.7404056199005, 1e-9);
  EXPECT_NEAR(implied_throughput(t, model_latency_us(t, 40e6)), 40e6, 1e-3);
}

TEST(CostLatency, MemoryBoundAndLaunchFloor) {
  KernelCandidate c = gemm_candidate();
  AnalyticParams params;
  AnalyticTerms t = analytic_terms(make_profile(c), {1, 1024, 768, 768}, params);
  // At an absurd f_MK the compute term vanishes and memory plus the launch remain.
  EXPECT_NEAR(model_latency_us(t, 1e15), 2.0 + 2.8692378109452736, 1e-6);
  EXPECT_TRUE(std::isinf(model_latency_us(t, 0)));
  // A measurement under the overhead keeps 5% of its time for the compute term.
  EXPECT_DOUBLE_EQ(compute_time_us(t, 1.0), 0.05);
  params.launch_overhead_us = 0;
  EXPECT_DOUBLE_EQ(compute_time_us(with_params(t, params), 1.0), 1.0);
}

TEST(CostLatency, UnlaunchableKernelIsInfinitelySlow) {
  KernelCandidate c = gemm_candidate();
  c.plan.dynamic_smem_bytes = 300 * 1024;
  AnalyticTerms t = analytic_terms(make_profile(c), {1, 1024, 768, 768}, AnalyticParams{});
  EXPECT_EQ(t.blocks_per_sm, 0);
  EXPECT_TRUE(std::isinf(model_latency_us(t, 40e6)));
  EXPECT_EQ(implied_throughput(t, 10.0), 0);
}

TEST(CostCandidate, RegisterEstimateBeforeCompiling) {
  KernelCandidate c = gemm_candidate();
  EXPECT_EQ(registers_per_thread(c), 128);
  EXPECT_FALSE(registers_are_estimated(c));
  c.compiled.reset();
  // 128 x 128 / 256 = 64 accumulators; square 8 x 8 thread tile: 2 x (8 + 8) fragment
  // registers; 32 for bookkeeping.
  EXPECT_EQ(registers_per_thread(c), 64 + 32 + 32);
  EXPECT_TRUE(registers_are_estimated(c));
  c.plan.tile_m = c.plan.tile_n = 512;  // 1024 accumulators: capped at the hardware's 255
  EXPECT_EQ(registers_per_thread(c), 255);
}

}  // namespace
}  // namespace dietcode

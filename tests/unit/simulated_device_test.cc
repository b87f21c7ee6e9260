#include "measure/simulated_device.h"

#include <gtest/gtest.h>

#include <cmath>

namespace dietcode {
namespace {

// H100 limits as GpuSpec's defaults give them (configs/gpus/h100.json carries the same).
GpuSpec h100() {
  GpuSpec gpu;
  gpu.id = "h100";
  gpu.name = "NVIDIA H100 80GB HBM3";
  return gpu;
}

OpSpec make_op(DType dtype = DType::kFloat32) {
  OpSpec op;
  op.name = "fc1";
  op.dtype = dtype;
  return op;
}

struct Tile {
  int bm = 128, bn = 128, threads = 256, bk = 16, stages = 2, split_k = 1;
};

MeasureInput make_input(const OpSpec& op, Tile tile) {
  MeasureInput input;
  input.op = &op;
  int eb = op.dtype == DType::kFloat32 ? 4 : 2;
  input.mk.tmpl = "dense_f32";
  input.mk.params = {{"BM", tile.bm},         {"BN", tile.bn},          {"BK", tile.bk},
                     {"STAGES", tile.stages}, {"SPLITK", tile.split_k}, {"THREADS", tile.threads}};
  LaunchPlan& plan = input.kernel.plan;
  plan.entry = "dense_f32_kernel";
  plan.threads = tile.threads;
  plan.tile_m = tile.bm;
  plan.tile_n = tile.bn;
  plan.split_k = tile.split_k;
  plan.dynamic_smem_bytes = tile.stages * (tile.bm + tile.bn) * tile.bk * eb;
  if (tile.split_k > 1) plan.reduce_entry = "dense_f32_reduce";
  input.compiled.ok = true;
  return input;
}

Instance instance(int64_t M, int64_t N = 3072, int64_t K = 768) {
  Instance inst;
  inst.values = {M / 16};
  inst.gemm = {1, M, N, K};
  inst.flops = inst.gemm.flops();
  return inst;
}

double latency(SimulatedDevice& device, const MeasureInput& input, const GemmShape& shape) {
  SimulatedTiming t = device.model(input, shape);
  EXPECT_EQ(t.status, MeasureStatus::kOk) << t.error;
  return t.latency_us;
}

TEST(SimulatedDevice, IsLabelledAsSimulated) {
  SimulatedDevice device(h100());
  DeviceIdentity id = device.device();
  EXPECT_EQ(id.name, "simulated NVIDIA H100 80GB HBM3");
  EXPECT_EQ(id.arch, "sm_90");
  EXPECT_TRUE(id.simulated);
}

TEST(SimulatedDevice, WithoutNoiseMeasuresExactlyTheModel) {
  SimulatedDevice device(h100());
  OpSpec op = make_op();
  MeasureInput input = make_input(op, {});
  input.instances = {instance(16), instance(592), instance(2048)};
  auto results = device.measure({input});
  ASSERT_EQ(results.size(), 1u);
  ASSERT_EQ(results[0].status, MeasureStatus::kOk);
  ASSERT_EQ(results[0].latency_us.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    SimulatedTiming t = device.model(input, input.instances[i].gemm);
    EXPECT_EQ(results[0].latency_us[i], t.latency_us);
    EXPECT_DOUBLE_EQ(t.latency_us, t.launch_us + std::max(t.compute_us, t.memory_us) + t.reduce_us);
    EXPECT_EQ(t.launch_us, 3.0);
  }
}

TEST(SimulatedDevice, NoiseIsDeterministicForASeedAndVariesAcrossSeeds) {
  OpSpec op = make_op();
  MeasureInput input = make_input(op, {});
  for (int64_t t = 1; t <= 64; ++t) input.instances.push_back(instance(16 * t));
  SimulatedDevice a(h100(), {0.1, 7}), b(h100(), {0.1, 7}), c(h100(), {0.1, 8});
  auto first = a.measure({input})[0].latency_us;
  EXPECT_EQ(a.measure({input})[0].latency_us, first);  // re-measuring reproduces
  EXPECT_EQ(b.measure({input})[0].latency_us, first);  // another device, same seed
  EXPECT_NE(c.measure({input})[0].latency_us, first);

  // The noise is lognormal with the configured sigma around the model value.
  SimulatedDevice exact(h100());
  auto model = exact.measure({input})[0].latency_us;
  double sum = 0, sum_sq = 0;
  for (size_t i = 0; i < first.size(); ++i) {
    double log_ratio = std::log(first[i] / model[i]);
    sum += log_ratio;
    sum_sq += log_ratio * log_ratio;
  }
  double n = double(first.size());
  double sd = std::sqrt(sum_sq / n - (sum / n) * (sum / n));
  EXPECT_NEAR(sum / n, 0.0, 0.05);
  EXPECT_NEAR(sd, 0.1, 0.04);
}

TEST(SimulatedDevice, BestFp32KernelsReachTwoThirdsOfPeakAtLargeM) {
  SimulatedDevice device(h100());
  OpSpec op = make_op();
  double best_tflops = 0;
  for (Tile tile : {Tile{128, 128, 256, 16}, Tile{128, 128, 256, 32}, Tile{128, 64, 128, 16},
                    Tile{64, 64, 64, 16}, Tile{64, 128, 128, 32}}) {
    GemmShape shape{1, 2048, 3072, 768};
    double us = latency(device, make_input(op, tile), shape);
    best_tflops = std::max(best_tflops, shape.flops() / us / 1e6);
  }
  EXPECT_GT(best_tflops, 0.5 * 67.0);
  EXPECT_LT(best_tflops, 0.72 * 67.0);
}

TEST(SimulatedDevice, LatencyNeverFallsAsMGrows) {
  SimulatedDevice device(h100());
  OpSpec op = make_op();
  for (Tile tile : {Tile{128, 128, 256, 16}, Tile{32, 64, 64, 8, 1}, Tile{64, 64, 128, 32, 3, 4}}) {
    MeasureInput input = make_input(op, tile);
    double previous = 0;
    for (int64_t M = 1; M <= 4096; M += 7) {
      double us = latency(device, input, {1, M, 768, 3072});
      EXPECT_GE(us, previous) << "M=" << M << " tile " << tile.bm << "x" << tile.bn;
      previous = us;
    }
  }
}

TEST(SimulatedDevice, PaddedRowsCostLikeFullTiles) {
  SimulatedDevice device(h100());
  OpSpec op = make_op();
  MeasureInput input = make_input(op, {128, 128, 256, 16});
  double m129 = latency(device, input, {1, 129, 768, 768});
  double m256 = latency(device, input, {1, 256, 768, 768});
  EXPECT_NEAR(m129 / m256, 1.0, 0.02);
  // On a full GPU one more row costs a whole row of tiles, and a later wave.
  double m2048 = latency(device, input, {1, 2048, 3072, 768});
  double m2049 = latency(device, input, {1, 2049, 3072, 768});
  double m2176 = latency(device, input, {1, 2176, 3072, 768});
  EXPECT_NEAR(m2049 / m2176, 1.0, 0.02);
  EXPECT_GT(m2049, 1.2 * m2048);
}

TEST(SimulatedDevice, EfficiencyGrowsWithTheRegisterTileUntilTheKnee) {
  SimulatedDevice device(h100());
  OpSpec op = make_op();
  GemmShape shape{1, 4096, 4096, 4096};
  // Same 128x128 block tile spread over fewer threads: 2x2, 4x4, 8x8 per thread.
  double e2 = device.model(make_input(op, {128, 128, 1024, 16}), shape).tile_efficiency;
  double e4 = device.model(make_input(op, {128, 128, 1024 / 4, 16}), shape).tile_efficiency;
  double e8 = device.model(make_input(op, {128, 128, 256, 16}), shape).tile_efficiency;
  EXPECT_LT(e2, e4);
  EXPECT_LE(e4, e8);
  // 16x16 per thread: past the register knee.
  double e16 = device.model(make_input(op, {256, 256, 256, 8}), shape).tile_efficiency;
  double e8_bk8 = device.model(make_input(op, {128, 128, 256, 8}), shape).tile_efficiency;
  EXPECT_LT(e16, e8_bk8);
  // Longer k-tiles amortise the per-tile barrier.
  double bk8 = device.model(make_input(op, {128, 128, 256, 8}), shape).tile_efficiency;
  double bk32 = device.model(make_input(op, {128, 128, 256, 32}), shape).tile_efficiency;
  EXPECT_LT(bk8, e8);
  EXPECT_LT(e8, bk32);
}

TEST(SimulatedDevice, UsesPtxasRegistersAndPenalisesSpills) {
  SimulatedDevice device(h100());
  OpSpec op = make_op();
  GemmShape shape{1, 2048, 3072, 768};
  MeasureInput input = make_input(op, {});
  SimulatedTiming estimated = device.model(input, shape);
  EXPECT_TRUE(estimated.registers_estimated);

  input.compiled.binaries = {{"sm_80", "", {{"dense_f32_kernel", 96, 0, 0, 0, 0}}},
                             {"sm_90", "", {{"dense_f32_kernel", 128, 0, 0, 0, 0}}}};
  SimulatedTiming reported = device.model(input, shape);
  EXPECT_FALSE(reported.registers_estimated);
  EXPECT_EQ(reported.registers, 128);             // the device's own arch wins
  EXPECT_EQ(reported.resident_blocks_per_sm, 2);  // 65536 / (128 x 256)

  input.compiled.binaries[1].resources[0].spill_stores = 64;
  SimulatedTiming spilled = device.model(input, shape);
  EXPECT_LT(spilled.tile_efficiency, reported.tile_efficiency);
  EXPECT_GT(spilled.latency_us, reported.latency_us);
}

TEST(SimulatedDevice, SplitKHelpsSmallMWithLongK) {
  SimulatedDevice device(h100());
  OpSpec op = make_op();
  GemmShape shape{1, 16, 768, 3072};
  SimulatedTiming whole = device.model(make_input(op, {32, 64, 64, 32, 3, 1}), shape);
  SimulatedTiming split = device.model(make_input(op, {32, 64, 64, 32, 3, 8}), shape);
  EXPECT_EQ(whole.reduce_us, 0.0);
  EXPECT_GT(split.reduce_us, 0.0);
  EXPECT_LT(split.latency_us, whole.latency_us);
  EXPECT_EQ(split.blocks, 8 * whole.blocks);
}

TEST(SimulatedDevice, ReportsLimitsExceededWithTheLimit) {
  SimulatedDevice device(h100());
  OpSpec op = make_op();
  MeasureInput too_many_threads = make_input(op, {128, 128, 2048, 16});
  MeasureInput too_much_smem = make_input(op, {256, 256, 256, 64, 2});
  MeasureInput too_many_regs = make_input(op, {128, 128, 1024, 16});
  too_many_regs.compiled.binaries = {{"sm_90", "", {{"dense_f32_kernel", 255, 0, 0, 0, 0}}}};
  MeasureInput fine = make_input(op, {});
  for (auto* input : {&too_many_threads, &too_much_smem, &too_many_regs, &fine})
    input->instances = {instance(16), instance(32)};

  auto results = device.measure({too_many_threads, too_much_smem, too_many_regs, fine});
  ASSERT_EQ(results.size(), 4u);
  EXPECT_EQ(results[0].status, MeasureStatus::kDeviceLimitsExceeded);
  EXPECT_EQ(results[0].error, "2048 threads per block exceed the GPU's 1024");
  EXPECT_EQ(results[1].status, MeasureStatus::kDeviceLimitsExceeded);
  EXPECT_EQ(results[1].error, "262144 bytes of shared memory per block exceed the GPU's 232448");
  EXPECT_EQ(results[2].status, MeasureStatus::kDeviceLimitsExceeded);
  EXPECT_EQ(results[2].error,
            "262144 registers per block (255 per thread x 1024 threads) exceed the GPU's 65536");
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(results[i].latency_us.size(), 2u);
    EXPECT_TRUE(std::isnan(results[i].latency_us[0]) && std::isnan(results[i].latency_us[1]));
  }
  EXPECT_EQ(results[3].status, MeasureStatus::kOk);
  EXPECT_TRUE(results[3].error.empty());
}

TEST(SimulatedDevice, FailedCompileAndUnlaunchablePlanAreResults) {
  SimulatedDevice device(h100());
  OpSpec op = make_op();
  MeasureInput broken = make_input(op, {});
  broken.compiled.ok = false;
  broken.compiled.log = "\ndense_f32.cu(12): error: identifier \"BM\" is undefined\n1 error\n";
  MeasureInput silent = broken;
  silent.compiled.log = "";
  MeasureInput no_threads = make_input(op, {});
  no_threads.kernel.plan.threads = 0;
  for (auto* input : {&broken, &silent, &no_threads}) input->instances = {instance(16)};

  auto results = device.measure({broken, silent, no_threads});
  EXPECT_EQ(results[0].status, MeasureStatus::kCompileError);
  EXPECT_EQ(results[0].error, "dense_f32.cu(12): error: identifier \"BM\" is undefined");
  EXPECT_EQ(results[1].error, "the compiler gave no reason");
  EXPECT_EQ(results[2].status, MeasureStatus::kLaunchError);
  EXPECT_EQ(results[2].error,
            "launch plan of dense_f32_kernel cannot be launched: threads 0, tile 128x128, "
            "split_k 1");
  EXPECT_TRUE(std::isnan(results[0].latency_us[0]));
}

TEST(SimulatedDevice, TensorCoreKernelsUseTheTensorPeak) {
  SimulatedDevice device(h100());
  OpSpec f32 = make_op(DType::kFloat32), bf16 = make_op(DType::kBFloat16);
  GemmShape shape{1, 4096, 4096, 4096};
  double t32 = latency(device, make_input(f32, {128, 128, 256, 32}), shape);
  double t16 = latency(device, make_input(bf16, {128, 128, 256, 32}), shape);
  EXPECT_LT(t16 * 4, t32);
  EXPECT_LT(shape.flops() / t16 / 1e6, 989.0);
}

}  // namespace
}  // namespace dietcode

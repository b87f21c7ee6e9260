// The simulated device (a TEST DOUBLE) on batch_matmul and conv2d: the batch multiplies the grid
// (grid z = batch * split-K), and a convolution's DRAM traffic counts its real input, not the
// implicit GEMM's M x K, which overstates it R*S/stride^2-fold.
#include <gtest/gtest.h>

#include "measure/simulated_device.h"

namespace dietcode {
namespace {

MeasureInput make_input(const OpSpec& op, const std::string& tmpl) {
  MeasureInput input;
  input.op = &op;
  input.mk = {tmpl, {{"TM", 8}, {"TN", 8}, {"BK", 16}, {"STAGES", 2}}};
  LaunchPlan& plan = input.kernel.plan;
  plan.entry = "dietcode_" + tmpl;
  plan.threads = 256;
  plan.tile_m = plan.tile_n = 128;
  plan.dynamic_smem_bytes = 2 * 16 * (132 + 132) * 4;
  input.compiled.ok = true;
  return input;
}

TEST(SimulatedDeviceOps, BatchMultipliesTheBlocks) {
  SimulatedDevice device{GpuSpec{}};
  OpSpec op;
  op.name = "qk";
  op.kind = OpKind::kBatchMatmul;
  const MeasureInput input = make_input(op, "batch_matmul_f32");
  const SimulatedTiming one = device.model(input, {1, 128, 128, 64});
  const SimulatedTiming many = device.model(input, {192, 128, 128, 64});
  EXPECT_EQ(one.blocks, 1);
  EXPECT_EQ(many.blocks, 192);
  EXPECT_GT(many.latency_us, one.latency_us);
}

TEST(SimulatedDeviceOps, ConvolutionDramCountsTheRealInput) {
  SimulatedDevice device{GpuSpec{}};
  OpSpec op;
  op.name = "conv3x3";
  op.kind = OpKind::kConv2d;
  op.dims = {{"N", Expr::parse("N")},    {"H", Expr::constant(56)}, {"W", Expr::constant(56)},
             {"C", Expr::constant(256)}, {"K", Expr::constant(64)}, {"R", Expr::constant(3)},
             {"S", Expr::constant(3)}};
  op.pad[0] = op.pad[1] = 1;
  op.vars = {"N"};
  MeasureInput input = make_input(op, "conv2d_f32");
  Instance inst;
  inst.values = {32};
  inst.gemm = gemm_shape(op, inst.values);
  input.instances = {inst};
  const SimulatedTiming conv = device.model(input, inst.gemm);
  // The same GEMM as a dense layer reads an A of M x K = 9 x the conv's input.
  OpSpec dense = op;
  dense.kind = OpKind::kDense;
  MeasureInput as_gemm = make_input(dense, "dense_f32");
  const SimulatedTiming gemm = device.model(as_gemm, inst.gemm);
  EXPECT_EQ(conv.blocks, gemm.blocks);
  EXPECT_DOUBLE_EQ(conv.compute_us, gemm.compute_us);
  // DRAM bytes bound the memory time from below: the conv moves its input 32*56*56*256, the
  // weights 64*2304 and the output 32*56*56*64 floats; the GEMM view 9x that input.
  const double dram_per_us = GpuSpec{}.mem_bandwidth_gbs * 1e3 * 0.9;
  const double conv_us =
      (32.0 * 56 * 56 * 256 + 64.0 * 2304 + 32.0 * 56 * 56 * 64) * 4 / dram_per_us;
  const double gemm_us =
      (32.0 * 56 * 56 * 2304 + 64.0 * 2304 + 32.0 * 56 * 56 * 64) * 4 / dram_per_us;
  EXPECT_GE(conv.memory_us, conv_us * 0.999);
  EXPECT_GE(gemm.memory_us, gemm_us * 0.999);
  EXPECT_LT(conv.memory_us, gemm_us);
  // A shape that is not one of the instances falls back to the GEMM view.
  EXPECT_DOUBLE_EQ(device.model(input, {1, 100000, 64, 2304}).memory_us,
                   device.model(as_gemm, {1, 100000, 64, 2304}).memory_us);
}

}  // namespace
}  // namespace dietcode

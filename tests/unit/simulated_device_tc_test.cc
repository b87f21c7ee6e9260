// The simulated device (a TEST DOUBLE) on the tensor-core templates: kernels of 16-bit ops run
// against the tensor peak, warpgroup MMA (dense_wgmma) beats warp-level mma.sync (dense_tc) on
// sm_90 whose tensor peak is wgmma's, mma.sync pays that only on sm_90, and a warp-specialized
// kernel's registers are estimated for its consumer threads; a TMA producer hands stages over
// for less than the cp.async one; a 16-bit batch_matmul counts every batch element (the
// simulated device's model, not a measurement).
#include <gtest/gtest.h>

#include "codegen/generated_kernel.h"
#include "measure/simulated_device.h"

namespace dietcode {
namespace {

OpSpec bf16_op() {
  OpSpec op;
  op.name = "mlp";
  op.kind = OpKind::kDense;
  op.dtype = DType::kBFloat16;
  op.dims = {{"M", Expr::parse("M")}, {"N", Expr::constant(4096)}, {"K", Expr::constant(4096)}};
  op.vars = {"M"};
  return op;
}

MeasureInput input_for(const OpSpec& op, MicroKernel mk) {
  MeasureInput input;
  input.op = &op;
  input.kernel = generate_kernel(op, mk);
  input.mk = std::move(mk);
  input.compiled.ok = true;
  return input;
}

const MicroKernel kMmaSync{
    "dense_tc",
    {{"WARPS_M", 2}, {"WARPS_N", 4}, {"WM", 64}, {"WN", 32}, {"BK", 32}, {"STAGES", 4}}};
const MicroKernel kWarpgroup{"dense_wgmma", {{"WG_M", 2}, {"BN", 128}, {"STAGES", 4}}};

double tflops(const SimulatedDevice& device, const MeasureInput& input, const GemmShape& shape) {
  const SimulatedTiming t = device.model(input, shape);
  EXPECT_EQ(t.status, MeasureStatus::kOk) << t.error;
  return shape.flops() / t.latency_us / 1e6;
}

TEST(SimulatedDeviceTensorCores, WarpgroupMmaBeatsMmaSyncOnHopper) {
  const SimulatedDevice h100(GpuSpec{});  // GpuSpec's defaults are H100's
  const OpSpec op = bf16_op();
  const GemmShape shape{1, 4096, 4096, 4096};
  const double mma_sync = tflops(h100, input_for(op, kMmaSync), shape);
  const double warpgroup = tflops(h100, input_for(op, kWarpgroup), shape);
  EXPECT_GT(warpgroup, 1.2 * mma_sync);
  EXPECT_LT(warpgroup, 989.0);
  EXPECT_LT(mma_sync, 0.65 * 989.0);
  EXPECT_GT(mma_sync, 2 * 67.0);  // still far above the fp32 SIMT peak
}

TEST(SimulatedDeviceTensorCores, TmaProducerHandsStagesOverCheaper) {
  const SimulatedDevice h100(GpuSpec{});
  const OpSpec op = bf16_op();
  MicroKernel copy = kWarpgroup;
  copy.params["BK"] = 64;  // the template's one K depth, spelled out as a log records it
  MicroKernel tma = copy;
  tma.params["PRODUCER"] = 1;
  const GemmShape shape{1, 4096, 4096, 4096};
  const double copying = h100.model(input_for(op, copy), shape).tile_efficiency;
  const double with_tma = h100.model(input_for(op, tma), shape).tile_efficiency;
  // A 64-deep K tile pays 2 instead of 4 columns of handover: 64/66 against 64/68.
  EXPECT_NEAR(with_tma / copying, (64.0 / 66.0) / (64.0 / 68.0), 1e-12);
}

TEST(SimulatedDeviceTensorCores, MmaSyncPaysOnlyOnSm90) {
  GpuSpec hopper;
  GpuSpec same_but_sm80 = hopper;
  same_but_sm80.cc_major = 8;
  const OpSpec op = bf16_op();
  const MeasureInput input = input_for(op, kMmaSync);
  const GemmShape shape{1, 4096, 4096, 4096};
  const double on_90 = SimulatedDevice(hopper).model(input, shape).tile_efficiency;
  const double on_80 = SimulatedDevice(same_but_sm80).model(input, shape).tile_efficiency;
  EXPECT_NEAR(on_90 / on_80, 0.65, 1e-12);
  const MeasureInput wg = input_for(op, kWarpgroup);
  EXPECT_EQ(SimulatedDevice(hopper).model(wg, shape).tile_efficiency,
            SimulatedDevice(same_but_sm80).model(wg, shape).tile_efficiency);
}

TEST(SimulatedDeviceTensorCores, WarpgroupRegistersAreTheConsumers) {
  const OpSpec op = bf16_op();
  const SimulatedTiming t =
      SimulatedDevice(GpuSpec{}).model(input_for(op, kWarpgroup), GemmShape{1, 256, 4096, 4096});
  EXPECT_TRUE(t.registers_estimated);
  EXPECT_EQ(t.registers, 64 + 32);         // BN / 2 accumulators plus bookkeeping
  EXPECT_EQ(t.resident_blocks_per_sm, 1);  // 133 KB of shared memory per block
}

// A 16-bit batch_matmul (BERT attention's scores, 192 heads) is modelled with the same
// tensor-core rates as a dense layer: blocks = tiles x batch, and each batch element reads its
// own B, so a 12-head slice of the same problem moves a sixteenth of the bytes.
TEST(SimulatedDeviceTensorCores, BatchMatmulCountsEveryBatchElement) {
  OpSpec qk;
  qk.name = "qk";
  qk.kind = OpKind::kBatchMatmul;
  qk.dtype = DType::kBFloat16;
  qk.transpose_b = true;
  qk.dims = {{"B", Expr::constant(192)},
             {"M", Expr::parse("T")},
             {"N", Expr::parse("T")},
             {"K", Expr::constant(64)}};
  qk.vars = {"T"};
  const SimulatedDevice h100(GpuSpec{});
  const MicroKernel tile{"dense_tc", {{"WARPS_M", 2}, {"WARPS_N", 2}, {"WM", 32}, {"WN", 32}}};
  const MeasureInput input = input_for(qk, tile);
  const SimulatedTiming all = h100.model(input, GemmShape{192, 128, 128, 64});
  const SimulatedTiming slice = h100.model(input, GemmShape{12, 128, 128, 64});
  ASSERT_EQ(all.status, MeasureStatus::kOk) << all.error;
  EXPECT_EQ(all.blocks, 192 * 2 * 2);  // 64 x 64 tiles of a 128 x 128 output, per element
  EXPECT_EQ(slice.blocks, 12 * 2 * 2);
  EXPECT_GT(all.latency_us, slice.latency_us);
  // Operands, output and tiles all scale with the batch: 16 times the traffic.
  EXPECT_NEAR(all.memory_us / slice.memory_us, 192.0 / 12.0, 1e-9);
  // probs.V on dense_tc (B stored [K,N]) is modelled alike.
  OpSpec av = qk;
  av.transpose_b = false;
  av.dims["N"] = Expr::constant(64), av.dims["K"] = Expr::parse("T");
  EXPECT_EQ(h100.model(input_for(av, tile), GemmShape{192, 128, 64, 128}).status,
            MeasureStatus::kOk);
}

}  // namespace
}  // namespace dietcode

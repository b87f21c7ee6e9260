#include "cuda/peak_figures.h"

#include <gtest/gtest.h>

#include "cuda/device_query.h"

namespace dietcode {
namespace {

// The limits a device query would report, without peak figures.
GpuSpec device(const std::string& name, int major, int minor, int sms, double clock_ghz) {
  GpuSpec d;
  d.id = "device0";
  d.name = name;
  d.cc_major = major, d.cc_minor = minor;
  d.sms = sms;
  d.clock_ghz = clock_ghz;
  d.fp32_tflops = d.fp16_tensor_tflops = d.bf16_tensor_tflops = d.mem_bandwidth_gbs = -1;
  d.queried = true;
  return d;
}

std::vector<GpuSpec> shipped() {
  std::vector<GpuSpec> specs;
  for (const std::string& id : list_gpu_specs()) specs.push_back(load_gpu_spec(id));
  return specs;
}

TEST(PeakFigures, TheSameBoardTakesTheShippedFiguresUnchanged) {
  GpuSpec d = device("NVIDIA H100 80GB HBM3", 9, 0, 132, 1.98);
  fill_peak_figures(d, shipped(), 0);
  EXPECT_DOUBLE_EQ(d.fp16_tensor_tflops, 989.4);
  EXPECT_DOUBLE_EQ(d.fp32_tflops, 66.9);
  EXPECT_DOUBLE_EQ(d.mem_bandwidth_gbs, 3350);  // nothing measured: the config's
}

TEST(PeakFigures, AnotherBoardOfTheModelIsScaledBySmsAndClock) {
  // An H100 PCIe: 114 SMs at 1.755 GHz; NVIDIA publishes 756 dense fp16 TFLOP/s for it.
  GpuSpec d = device("NVIDIA H100 PCIe", 9, 0, 114, 1.755);
  const std::vector<GpuSpec> configs = shipped();
  ASSERT_NE(match_shipped_config(d, configs), nullptr);
  EXPECT_EQ(match_shipped_config(d, configs)->id, "h100");
  fill_peak_figures(d, configs, 2039.0);
  EXPECT_NEAR(d.fp16_tensor_tflops, 757.4, 0.1);
  EXPECT_DOUBLE_EQ(d.mem_bandwidth_gbs, 2039.0);  // measured wins
}

TEST(PeakFigures, ModelIdsMatchWholeWordsOnly) {
  const std::vector<GpuSpec> configs = shipped();
  const GpuSpec* m =
      match_shipped_config(device("NVIDIA GeForce RTX 4090", 8, 9, 128, 2.52), configs);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->id, "rtx4090");
  m = match_shipped_config(device("NVIDIA A100-SXM4-40GB", 8, 0, 108, 1.41), configs);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->id, "a100");
  // "L40S" holds "L4" but is another GPU; and a name match with another arch is no match.
  EXPECT_EQ(match_shipped_config(device("NVIDIA L40S", 8, 9, 142, 2.52), configs), nullptr);
  EXPECT_EQ(match_shipped_config(device("NVIDIA H100 lookalike", 8, 0, 100, 1.5), configs),
            nullptr);
}

TEST(PeakFigures, UnknownGpusAreEstimatedFromTheirComputeCapability) {
  // L40S: published 91.6 FP32 and 362 dense fp16 tensor TFLOP/s.
  GpuSpec l40s = device("NVIDIA L40S", 8, 9, 142, 2.52);
  fill_peak_figures(l40s, shipped(), 864.0);
  EXPECT_NEAR(l40s.fp32_tflops, 91.6, 0.1);
  EXPECT_NEAR(l40s.fp16_tensor_tflops, 366.4, 0.1);
  EXPECT_NEAR(l40s.bf16_tensor_tflops, 366.4, 0.1);
  EXPECT_DOUBLE_EQ(l40s.mem_bandwidth_gbs, 864.0);

  // GeForce runs fp16 with fp32 accumulation at half rate: RTX 3090, published 71.
  GpuSpec rtx3090 = device("NVIDIA GeForce RTX 3090", 8, 6, 82, 1.695);
  estimate_peak_figures(rtx3090);
  EXPECT_NEAR(rtx3090.fp16_tensor_tflops, 71.2, 0.1);
  EXPECT_NEAR(rtx3090.fp32_tflops, 35.6, 0.1);

  // Volta: 64 FP32 lanes per SM and no bfloat16 tensor cores. V100 SXM2: 15.7 and 125.
  GpuSpec v100 = device("Tesla V100-SXM2-16GB", 7, 0, 80, 1.53);
  estimate_peak_figures(v100);
  EXPECT_NEAR(v100.fp32_tflops, 15.7, 0.1);
  EXPECT_NEAR(v100.fp16_tensor_tflops, 125.3, 0.1);
  EXPECT_EQ(v100.bf16_tensor_tflops, 0);
}

TEST(PeakFigures, MemoryBandwidthCountsTwoTransfersPerClock) {
  EXPECT_NEAR(memory_bandwidth_gbs(2619000, 5120), 3352.3, 0.1);  // H100 SXM, HBM3
  EXPECT_NEAR(memory_bandwidth_gbs(10501000, 384), 1008.1, 0.1);  // RTX 4090, GDDR6X
  EXPECT_EQ(memory_bandwidth_gbs(0, 5120), 0.0);
}

}  // namespace
}  // namespace dietcode

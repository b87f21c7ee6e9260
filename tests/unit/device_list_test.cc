// The GPUs a run measures on: `--devices` lists ("all", ordinals, and what is wrong with a bad
// one), the one-model rule, the simulated host's description (a TEST DOUBLE), and asking a
// measurement worker how many GPUs its driver sees.
#include "measure/device_list.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/error.h"
#include "measure/gpu_measurer.h"
#include "measure/worker_process.h"

namespace dietcode {
namespace {

std::string error_of(const std::string& list, int count) {
  try {
    parse_device_list(list, count);
  } catch (const UserError& e) {
    return e.what();
  }
  return "no error";
}

TEST(DeviceList, AllOrDistinctOrdinalsInTheGivenOrder) {
  EXPECT_EQ(parse_device_list("all", 4), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(parse_device_list("0", 1), (std::vector<int>{0}));
  EXPECT_EQ(parse_device_list("3,0,1", 4), (std::vector<int>{3, 0, 1}));
}

TEST(DeviceList, BadListsSayWhatIsWrong) {
  const std::string expected =
      "expected \"all\" or GPU ordinals separated by commas (such as 0,1,3), got ";
  EXPECT_EQ(error_of("x", 4), expected + "\"x\"");
  EXPECT_EQ(error_of("", 4), expected + "\"\"");
  EXPECT_EQ(error_of("0,,1", 4), expected + "\"0,,1\"");
  EXPECT_EQ(error_of("0,", 4), expected + "\"0,\"");
  EXPECT_EQ(error_of("-1", 4), expected + "\"-1\"");
  EXPECT_EQ(error_of("1.5", 4), expected + "\"1.5\"");
  EXPECT_EQ(error_of("ALL", 4), expected + "\"ALL\"");
  EXPECT_EQ(error_of("0,0", 4), "GPU 0 is listed twice");
  EXPECT_EQ(error_of("2,1,2", 4), "GPU 2 is listed twice");
  EXPECT_EQ(error_of("5", 2), "no GPU 5: this host has 2 GPUs (0 to 1)");
  EXPECT_EQ(error_of("0,1", 1), "no GPU 1: this host has 1 GPU (0)");
  EXPECT_EQ(error_of("0", 0), "no GPU 0: this host has no GPU");
  EXPECT_EQ(error_of("all", 0), "this host has no GPU");
}

GpuSpec model(const std::string& name, int major, int sms) {
  GpuSpec gpu;
  gpu.name = name;
  gpu.cc_major = major;
  gpu.cc_minor = 0;
  gpu.sms = sms;
  return gpu;
}

TEST(DeviceList, OneModelPerRunNamingTheFirstTwoThatDiffer) {
  const GpuSpec h100 = model("NVIDIA H100 80GB HBM3", 9, 132);
  EXPECT_NO_THROW(check_same_model({{0, h100}, {1, h100}, {5, h100}}));
  EXPECT_NO_THROW(check_same_model({{2, h100}}));
  auto error = [](const std::vector<std::pair<int, GpuSpec>>& gpus) {
    try {
      check_same_model(gpus);
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error({{0, h100}, {1, h100}, {3, model("NVIDIA A100-SXM4-80GB", 8, 108)}}),
            "GPU 0 (NVIDIA H100 80GB HBM3, sm_90, 132 SMs) and GPU 3 (NVIDIA A100-SXM4-80GB, "
            "sm_80, 108 SMs) are different GPU models; a run tunes one model: start one run per "
            "model, each with its own log");
  // Same name, fewer SMs enabled (a partitioned board): not the same machine to measure on.
  EXPECT_EQ(error({{1, h100}, {0, model("NVIDIA H100 80GB HBM3", 9, 114)}}),
            "GPU 1 (NVIDIA H100 80GB HBM3, sm_90, 132 SMs) and GPU 0 (NVIDIA H100 80GB HBM3, "
            "sm_90, 114 SMs) are different GPU models; a run tunes one model: start one run per "
            "model, each with its own log");
}

TEST(SimulatedHost, EightPlainGpusUnlessDescribed) {
  const auto host = simulated_host("h100", nullptr);
  ASSERT_EQ(host.size(), 8u);
  for (const SimulatedGpuSetup& g : host) {
    EXPECT_EQ(g.gpu, "h100");
    EXPECT_EQ(g.delay_seconds, 0);
    EXPECT_EQ(g.fail_after_calls, -1);
  }
  const auto described = simulated_host("h100", "delay_ms=5;gpu=a100,fail_after=3;;delay_ms=0.5");
  ASSERT_EQ(described.size(), 4u);
  EXPECT_DOUBLE_EQ(described[0].delay_seconds, 0.005);
  EXPECT_EQ(described[0].gpu, "h100");
  EXPECT_EQ(described[1].gpu, "a100");
  EXPECT_EQ(described[1].fail_after_calls, 3);
  EXPECT_EQ(described[2].gpu, "h100");
  EXPECT_DOUBLE_EQ(described[3].delay_seconds, 0.0005);
  EXPECT_EQ(simulated_host("h100", ";").size(), 2u);
}

TEST(SimulatedHost, SettingsItCannotReadAreUserErrors) {
  auto error = [](const char* text) {
    try {
      simulated_host("h100", text);
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string expected = " (expected gpu=ID, delay_ms=MS or fail_after=N)";
  EXPECT_EQ(error("speed=2"), "DIETCODE_SIMULATED_GPUS: GPU 0: cannot read \"speed=2\"" + expected);
  EXPECT_EQ(error(";delay_ms=-1"),
            "DIETCODE_SIMULATED_GPUS: GPU 1: cannot read \"delay_ms=-1\"" + expected);
  EXPECT_EQ(error("fail_after=x"),
            "DIETCODE_SIMULATED_GPUS: GPU 0: cannot read \"fail_after=x\"" + expected);
  EXPECT_EQ(error("gpu="), "DIETCODE_SIMULATED_GPUS: GPU 0: cannot read \"gpu=\"" + expected);
  EXPECT_EQ(error(""), "DIETCODE_SIMULATED_GPUS: describes no GPU");
}

TEST(GpuCount, TheWorkerSaysHowManyGpusItsDriverSees) {
  WorkerProcess worker([](const nlohmann::json& request) -> nlohmann::json {
    if (request.at("action") == "count") return {{"count", 3}};
    throw std::invalid_argument("unexpected request");
  });
  EXPECT_EQ(gpu_count(worker), 3);

  WorkerProcess no_driver([](const nlohmann::json&) -> nlohmann::json {
    throw EnvironmentError("no CUDA driver: libcuda.so.1 is not installed");
  });
  try {
    gpu_count(no_driver);
    FAIL() << "expected EnvironmentError";
  } catch (const EnvironmentError& e) {
    EXPECT_STREQ(e.what(),
                 "the measurement worker cannot count the GPUs: no CUDA driver: libcuda.so.1 is "
                 "not installed");
  }
}

}  // namespace
}  // namespace dietcode

// The exec'ed GPU measurement worker, `dietcode __measure-worker`: hidden from --help, refuses
// to run by hand, and serves GpuMeasurer over file descriptor 3. With the stand-in driver
// (tests/data/fake_driver, a TEST DOUBLE) on the library path, the worker identifies its GPU
// through the driver while this test process never loads one.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <optional>

#include "common/error.h"
#include "e2e/cli_util.h"
#include "measure/gpu_measurer.h"

namespace dietcode {
namespace {

using test::CommandResult;
using test::run_cli;
using ::testing::HasSubstr;
using ::testing::Not;

// Sets environment variables for the scope (the exec'ed worker inherits them), then restores.
class ScopedEnv {
 public:
  void set(const std::string& name, const std::string& value) {
    const char* old = ::getenv(name.c_str());
    saved_.push_back({name, old ? std::optional<std::string>(old) : std::nullopt});
    ::setenv(name.c_str(), value.c_str(), 1);
  }
  ~ScopedEnv() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second)
        ::setenv(it->first.c_str(), it->second->c_str(), 1);
      else
        ::unsetenv(it->first.c_str());
    }
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

void use_fake_driver(ScopedEnv& env) {
  env.set("LD_LIBRARY_PATH", std::filesystem::path(DIETCODE_FAKE_CUDA).parent_path().string());
}

std::unique_ptr<WorkerProcess> execed_worker() {
  return std::make_unique<WorkerProcess>(
      std::vector<std::string>{test::cli_path(), kMeasureWorkerSubcommand});
}

TEST(MeasureWorker, IsHiddenFromHelp) {
  CommandResult run = run_cli({"--help"});
  ASSERT_EQ(run.exit_code, 0) << run.summary();
  EXPECT_THAT(run.out, HasSubstr("devices"));
  EXPECT_THAT(run.out, Not(HasSubstr("measure-worker")));
}

TEST(MeasureWorker, RunByHandItSaysWhatItIs) {
  CommandResult run = run_cli({"__measure-worker"});
  EXPECT_EQ(run.exit_code, 1) << run.summary();
  EXPECT_EQ(run.err,
            "__measure-worker: an internal command of dietcode tune; it serves a socket on file "
            "descriptor 3\n");
  EXPECT_EQ(run.out, "");
}

TEST(MeasureWorker, ServesGpuMeasurerThroughTheDriver) {
  ScopedEnv env;
  use_fake_driver(env);
  env.set("FAKE_CUDA_KERNELS", "1");  // identify makes the context, which needs this much
  GpuMeasurer measurer(execed_worker(), GpuMeasurerOptions());
  DeviceIdentity id = measurer.device();
  EXPECT_EQ(id.name, "Test double of an NVIDIA H100 PCIe");
  EXPECT_EQ(id.arch, "sm_90");
  EXPECT_FALSE(id.simulated);
  EXPECT_EQ(measurer.gpu().sms, 114);
  EXPECT_TRUE(measurer.gpu().queried);
}

TEST(MeasureWorker, NoDeviceIsAnEnvironmentErrorInTheTuner) {
  ScopedEnv env;
  use_fake_driver(env);
  env.set("FAKE_CUDA_INIT_RESULT", "100");
  try {
    GpuMeasurer measurer(execed_worker(), GpuMeasurerOptions());
    FAIL() << "expected EnvironmentError";
  } catch (const EnvironmentError& e) {
    EXPECT_STREQ(e.what(), "no CUDA device: cuInit failed: CUDA_ERROR_NO_DEVICE");
  }
}

}  // namespace
}  // namespace dietcode

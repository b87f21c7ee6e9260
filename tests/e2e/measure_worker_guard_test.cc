// The measurement worker (`dietcode __measure-worker`) before the clock and around the output,
// on the stand-in driver (a TEST DOUBLE, tests/data/fake_driver, where kernels run nothing
// unless their image asks the double to act out a fault, and latencies are host time):
//   - identify makes the CUDA context (and says which driver), so no candidate's time limit
//     pays for it;
//   - a check launch that writes outside its output, before it or after it, is a wrong
//     result, caught by the guard bands around the output buffer;
//   - timings go through the queue-hold path and still answer for every shape.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "e2e/cli_util.h"
#include "measure/gpu_measurer.h"
#include "measure/gpu_protocol.h"
#include "measure/worker_process.h"

namespace dietcode {
namespace {

using ::testing::HasSubstr;

// An image the double reads like PTX: an entry taking DietcodeArgs, and maybe a marker.
std::string image(const std::string& marker) {
  return ".visible .entry dietcode_dense_f32(.param .align 8 .b8 dietcode_dense_f32_param_0[160])"
         " { ret; }\n// " +
         marker + "\n";
}

WorkerCandidate candidate(const std::string& marker) {
  WorkerCandidate c;
  c.kernel.id = "guard|" + marker;
  c.kernel.image = image(marker);
  LaunchPlan& p = c.kernel.plan;
  p.entry = "dietcode_dense_f32";
  p.threads = 256;
  p.tile_m = 64;
  p.tile_n = 64;
  c.op.name = "proj";
  c.op.kind = OpKind::kDense;
  c.op.dtype = DType::kFloat32;
  c.shapes = {{1, 33, 65, 64}, {1, 128, 128, 64}};
  c.check_shapes = {0, 1};
  return c;  // no reference kernel: only the guard bands decide
}

class MeasureWorkerGuard : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("LD_LIBRARY_PATH",
           std::filesystem::path(DIETCODE_FAKE_CUDA).parent_path().string().c_str(), 1);
    setenv("FAKE_CUDA_KERNELS", "1", 1);
  }
  void TearDown() override {
    unsetenv("LD_LIBRARY_PATH");
    unsetenv("FAKE_CUDA_KERNELS");
  }

  WorkerProcess worker_{std::vector<std::string>{test::cli_path(), kMeasureWorkerSubcommand}};

  WorkerResult check(const WorkerCandidate& c) {
    WorkerReply reply = worker_.call(
        {{"action", "check"}, {"device", 0}, {"seed", 1}, {"candidate", to_json(c)}}, 60);
    EXPECT_EQ(reply.outcome, WorkerOutcome::kOk) << reply.error;
    return reply.outcome == WorkerOutcome::kOk ? result_from_json(reply.value) : WorkerResult{};
  }
};

TEST_F(MeasureWorkerGuard, IdentifyMakesTheContextAndNamesTheDriver) {
  WorkerReply reply = worker_.call({{"action", "identify"}, {"device", 0}}, 60);
  ASSERT_EQ(reply.outcome, WorkerOutcome::kOk) << reply.error;
  EXPECT_EQ(reply.value.at("driver").at("cuda_version"), 13000);
}

// The double without FAKE_CUDA_KERNELS cannot make contexts: identify now fails there, which
// shows it makes one (before, only the first check did).
TEST_F(MeasureWorkerGuard, IdentifyFailsWhereNoContextCanBeMade) {
  unsetenv("FAKE_CUDA_KERNELS");
  WorkerReply reply = worker_.call({{"action", "identify"}, {"device", 0}}, 60);
  EXPECT_EQ(reply.outcome, WorkerOutcome::kHandlerError);
  EXPECT_TRUE(reply.environment_error) << reply.error;
}

TEST_F(MeasureWorkerGuard, AKernelThatStaysInsideItsOutputPasses) {
  WorkerResult r = check(candidate("fake:no-stray-writes"));
  EXPECT_EQ(r.status, MeasureStatus::kOk) << r.error;
}

TEST_F(MeasureWorkerGuard, AWritePastTheOutputIsAWrongResult) {
  WorkerResult r = check(candidate("fake:write-after-output"));
  EXPECT_EQ(r.status, MeasureStatus::kWrongResult);
  EXPECT_EQ(r.error,
            "wrote outside its output: 4 bytes changed past the end of C, the first at end + 0 "
            "(M=33, N=65, K=64, batch=1)");
}

TEST_F(MeasureWorkerGuard, AWriteBeforeTheOutputIsAWrongResult) {
  WorkerResult r = check(candidate("fake:write-before-output"));
  EXPECT_EQ(r.status, MeasureStatus::kWrongResult);
  EXPECT_THAT(r.error, HasSubstr("4 bytes changed before the start of C, the nearest at start - 1"));
}

TEST_F(MeasureWorkerGuard, TimingBehindTheQueueHoldAnswersForEveryShape) {
  WorkerCandidate c = candidate("fake:no-stray-writes");
  // More shapes than one hold covers, so several holds are paced.
  c.shapes.assign(150, GemmShape{1, 64, 64, 64});
  WorkerReply reply = worker_.call({{"action", "time"},
                                    {"device", 0},
                                    {"seed", 1},
                                    {"warmup", 1},
                                    {"repeats", 3},
                                    {"flush_l2", false},
                                    {"candidates", nlohmann::json::array({to_json(c)})}},
                                   60);
  ASSERT_EQ(reply.outcome, WorkerOutcome::kOk) << reply.error;
  WorkerResult r = result_from_json(reply.value.at("results").at(0));
  EXPECT_EQ(r.status, MeasureStatus::kOk) << r.error;
  ASSERT_EQ(r.latency_us.size(), 150u);
  for (double us : r.latency_us) EXPECT_GE(us, 0);
}

}  // namespace
}  // namespace dietcode

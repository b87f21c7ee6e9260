// The measurement worker (`dietcode __measure-worker`) times and checks kernels with a TMA
// producer the way a pack launches them: with tensor maps of A and B encoded for each shape.
// It runs on the stand-in driver (a TEST DOUBLE, tests/data/fake_driver, where nothing runs and
// latencies are host time, not GPU figures). The double rejects a launch of a kernel that
// declares tensor-map parameters without valid maps, so a candidate measured "ok" got them;
// shapes the TMA cannot address and drivers without cuTensorMapEncodeTiled are recorded as the
// candidate's launch errors, and the worker keeps serving.
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

// A kernel image the double reads like PTX: an entry taking DietcodeArgs and two tensor maps.
const char kTmaImage[] =
    ".visible .entry dietcode_dense_wgmma(.param .align 8 .b8 dietcode_dense_wgmma_param_0[160],"
    " .param .align 64 .b8 dietcode_dense_wgmma_param_1[128],"
    " .param .align 64 .b8 dietcode_dense_wgmma_param_2[128]) { ret; }\n";

WorkerCandidate tma_candidate(int tma_box_k, std::vector<GemmShape> shapes) {
  WorkerCandidate c;
  c.kernel.id = "tma" + std::to_string(tma_box_k);
  c.kernel.image = kTmaImage;
  LaunchPlan& p = c.kernel.plan;
  p.entry = "dietcode_dense_wgmma";
  p.threads = 384;
  p.dynamic_smem_bytes = 98304;
  p.tile_m = 128;
  p.tile_n = 256;
  p.min_alignment_bytes = 16;
  p.tma_box_k = tma_box_k;
  c.op.name = "proj";
  c.op.kind = OpKind::kDense;
  c.op.dtype = DType::kBFloat16;
  c.shapes = std::move(shapes);
  return c;
}

class MeasureWorkerTma : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("LD_LIBRARY_PATH",
           std::filesystem::path(DIETCODE_FAKE_CUDA).parent_path().string().c_str(), 1);
    setenv("FAKE_CUDA_KERNELS", "1", 1);
  }
  void TearDown() override {
    unsetenv("LD_LIBRARY_PATH");
    unsetenv("FAKE_CUDA_KERNELS");
    unsetenv("FAKE_CUDA_MISSING");
  }

  // The worker's results for one "time" request over these candidates.
  static std::vector<WorkerResult> time(const std::vector<WorkerCandidate>& candidates,
                                        bool* context_lost = nullptr) {
    WorkerProcess worker(std::vector<std::string>{test::cli_path(), kMeasureWorkerSubcommand});
    nlohmann::json list = nlohmann::json::array();
    for (const WorkerCandidate& c : candidates) list.push_back(to_json(c));
    WorkerReply reply = worker.call({{"action", "time"},
                                     {"device", 0},
                                     {"seed", 1},
                                     {"warmup", 1},
                                     {"repeats", 3},
                                     {"flush_l2", false},
                                     {"candidates", list}},
                                    60);
    EXPECT_EQ(reply.outcome, WorkerOutcome::kOk) << reply.error;
    std::vector<WorkerResult> out;
    if (reply.outcome != WorkerOutcome::kOk) return out;
    for (const auto& r : reply.value.at("results")) out.push_back(result_from_json(r));
    if (context_lost) *context_lost = reply.value.at("context_lost").get<bool>();
    return out;
  }
};

TEST_F(MeasureWorkerTma, TheProtocolCarriesTheBox) {
  WorkerCandidate c = tma_candidate(64, {{1, 128, 256, 512}});
  EXPECT_EQ(candidate_from_json(to_json(c)).kernel.plan.tma_box_k, 64);
  EXPECT_EQ(candidate_from_json(to_json(tma_candidate(0, {}))).kernel.plan.tma_box_k, 0);
}

TEST_F(MeasureWorkerTma, TmaKernelsAreTimedWithTheirTensorMaps) {
  bool lost = true;
  WorkerCandidate batched = tma_candidate(64, {{4, 33, 65, 64}, {2, 128, 128, 128}});
  batched.op.kind = OpKind::kBatchMatmul;
  batched.op.name = "bmm";
  std::vector<WorkerResult> r =
      time({tma_candidate(64, {{1, 128, 256, 512}, {1, 1000, 3000, 4096}}), batched}, &lost);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].status, MeasureStatus::kOk) << r[0].error;
  EXPECT_EQ(r[0].latency_us.size(), 2u);
  EXPECT_EQ(r[1].status, MeasureStatus::kOk) << r[1].error;
  EXPECT_EQ(r[1].latency_us.size(), 2u);
  EXPECT_FALSE(lost);
}

// Without the maps (a plan that forgot its box) the double refuses the launch, as the
// kernel's parameters would be missing: the test above can fail.
TEST_F(MeasureWorkerTma, WithoutTheMapsTheDoubleRefusesTheLaunch) {
  std::vector<WorkerResult> r = time({tma_candidate(0, {{1, 128, 256, 512}})});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_NE(r[0].status, MeasureStatus::kOk);
  EXPECT_THAT(r[0].error, HasSubstr("cuLaunchKernel: CUDA_ERROR_INVALID_VALUE"));
}

TEST_F(MeasureWorkerTma, AShapeTheTmaCannotAddressIsTheCandidatesLaunchError) {
  bool lost = true;
  std::vector<WorkerResult> r =
      time({tma_candidate(64, {{1, 128, 256, 500}}), tma_candidate(64, {{1, 64, 64, 64}})}, &lost);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].status, MeasureStatus::kLaunchError);
  EXPECT_EQ(r[0].error,
            "the TMA cannot read operand A (M=128, N=256, K=500, batch=1): rows are not a "
            "multiple of 16 bytes apart (K % 8 != 0)");
  EXPECT_EQ(r[1].status, MeasureStatus::kOk) << r[1].error;  // the context is intact
  EXPECT_FALSE(lost);
}

TEST_F(MeasureWorkerTma, ADriverWithoutTheEncoderFailsOnlyTmaCandidates) {
  setenv("FAKE_CUDA_MISSING", "cuTensorMapEncodeTiled", 1);
  std::vector<WorkerResult> r = time({tma_candidate(64, {{1, 128, 256, 512}})});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].status, MeasureStatus::kLaunchError);
  EXPECT_EQ(r[0].error,
            "the kernel copies with the TMA, but the NVIDIA driver has no cuTensorMapEncodeTiled "
            "(a driver for CUDA 12.0 or newer is needed)");
}

}  // namespace
}  // namespace dietcode

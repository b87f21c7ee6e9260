// GpuMeasurer on a real GPU: hand-written kernels that are right, wrong, crash, hang or ask
// for too much shared memory, each compiled with NVRTC, must come back with the matching
// status, and the right ones with plausible latencies. Skips itself without a driver or GPU.
//
// The test process never touches CUDA itself: the worker does, an exec'ed
// `dietcode __measure-worker` as under tune. A worker forked without exec is not enough here:
// on an H200 with CUDA 13.0 (2026-11-26), a worker forked again after a fault, once this
// process had compiled with NVRTC, failed cuInit with CUDA_ERROR_NOT_INITIALIZED. The last
// test also checks against the default reference (reference_gemm.cu through the measurer's
// own NVRTC).
#include "measure/gpu_measurer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "codegen/generated_kernel.h"
#include "common/error.h"
#include "nvrtc/nvrtc_compiler.h"

namespace dietcode {
namespace {

// One naive kernel, one output element per thread in 16 x 16 tiles; VARIANT selects a fault.
const char* kSource = R"(
#include "dietcode_args.h"
extern "C" __global__ void naive(DietcodeArgs args) {
  const long long m = blockIdx.y * 16 + threadIdx.x / 16, n = blockIdx.x * 16 + threadIdx.x % 16;
  if (m >= args.m || n >= args.n) return;
  const float* a = static_cast<const float*>(args.a);
  const float* b = static_cast<const float*>(args.b);
  float acc = 0.0f;
#if VARIANT == 1  /* the same sums in reverse order: must still agree */
  for (long long k = args.k - 1; k >= 0; --k) acc += a[m * args.k + k] * b[n * args.k + k];
#else
  for (long long k = 0; k < args.k; ++k) acc += a[m * args.k + k] * b[n * args.k + k];
#endif
#if VARIANT == 2  /* one element off by one */
  if (m == args.m - 1 && n == 3) acc += 1.0f;
#endif
#if VARIANT == 3  /* writes far outside any allocation */
  static_cast<float*>(args.c)[(1ll << 40) + m] = acc;
#endif
#if VARIANT == 4  /* never finishes */
  while (args.m > 0) __nanosleep(1000);
#endif
  static_cast<float*>(args.c)[m * args.n + n] = acc;
}
)";

class GpuMeasurerOnDevice : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    GpuMeasurerOptions options;
    options.measure.timeout_seconds = 5;
    options.measure.repeats = 5;
    options.reference = [](const OpSpec&, const std::string& arch) {
      ReferenceBuild build;
      build.kernel.plan = naive_plan();
      build.compiled = compile(0, arch);
      return build;
    };
    try {
      measurer_ = std::make_unique<GpuMeasurer>(
          std::make_unique<WorkerProcess>(
              std::vector<std::string>{DIETCODE_CLI_PATH, kMeasureWorkerSubcommand}),
          options);
    } catch (const EnvironmentError& e) {
      skip_reason_ = e.what();
    }
  }
  static void TearDownTestSuite() { measurer_.reset(); }

  void SetUp() override {
    if (!measurer_) GTEST_SKIP() << "no GPU: " << skip_reason_;
    op_.name = "naive_dense";
    op_.vars = {"T"};
  }

  static LaunchPlan naive_plan() {
    LaunchPlan plan;
    plan.entry = "naive";
    plan.threads = 256;
    plan.tile_m = plan.tile_n = 16;
    return plan;
  }

  static CompileResult compile(int variant, const std::string& arch) {
    static NvrtcCompiler compiler;
    CompileRequest request;
    request.name = "naive.cu";
    request.source = kSource;
    request.options = {"-I" DIETCODE_SOURCE_DIR "/templates",
                       "-DVARIANT=" + std::to_string(variant)};
    request.archs = {arch};
    request.want_ptx = false;
    return compiler.compile(request);
  }

  MeasureInput input(int variant, std::vector<GemmShape> shapes) {
    MeasureInput in;
    in.op = &op_;
    in.mk = {"naive", {{"VARIANT", variant}}};
    in.kernel.plan = naive_plan();
    in.compiled = compile(variant, measurer_->device().arch);
    EXPECT_TRUE(in.compiled.ok) << in.compiled.log;
    for (const GemmShape& s : shapes) {
      Instance inst;
      inst.values = {s.M};
      inst.gemm = s;
      in.instances.push_back(inst);
    }
    return in;
  }

  static std::unique_ptr<GpuMeasurer> measurer_;
  static std::string skip_reason_;
  OpSpec op_;
};

std::unique_ptr<GpuMeasurer> GpuMeasurerOnDevice::measurer_;
std::string GpuMeasurerOnDevice::skip_reason_;

TEST_F(GpuMeasurerOnDevice, IdentifiesTheGpu) {
  DeviceIdentity id = measurer_->device();
  EXPECT_FALSE(id.simulated);
  EXPECT_EQ(id.arch.rfind("sm_", 0), 0u);
  EXPECT_EQ(id.name, measurer_->gpu().name);
  EXPECT_GT(measurer_->gpu().sms, 0);
}

TEST_F(GpuMeasurerOnDevice, CorrectKernelsPassAndLargerShapesTakeLonger) {
  std::vector<GemmShape> shapes = {
      {1, 1, 96, 64}, {1, 17, 96, 64}, {1, 130, 96, 64}, {1, 2048, 1024, 1024}};
  auto results = measurer_->measure({input(0, shapes), input(1, shapes)});
  for (const MeasureResult& r : results) {
    ASSERT_EQ(r.status, MeasureStatus::kOk) << r.error;
    ASSERT_EQ(r.latency_us.size(), shapes.size());
    for (double us : r.latency_us) {
      EXPECT_TRUE(std::isfinite(us));
      EXPECT_GT(us, 0.0);
    }
    EXPECT_GT(r.latency_us[3], 10 * r.latency_us[0]);  // 2 GFLOP naive vs 12 KFLOP
  }
}

TEST_F(GpuMeasurerOnDevice, FaultsComeBackAsStatusesAndTheNextCandidateRuns) {
  std::vector<GemmShape> shapes = {{1, 16, 96, 64}, {1, 37, 96, 64}};
  MeasureInput too_much_smem = input(5, shapes);
  too_much_smem.kernel.plan.dynamic_smem_bytes = 1 << 20;
  auto results = measurer_->measure(
      {input(2, shapes), input(3, shapes), input(4, shapes), too_much_smem, input(0, shapes)});
  EXPECT_EQ(results[0].status, MeasureStatus::kWrongResult) << results[0].error;
  EXPECT_EQ(results[0].error.rfind("C[0,15,3] = ", 0), 0u) << results[0].error;
  EXPECT_EQ(results[1].status, MeasureStatus::kLaunchError) << results[1].error;
  EXPECT_NE(results[1].error.find("CUDA_ERROR_ILLEGAL_ADDRESS"), std::string::npos)
      << results[1].error;
  EXPECT_EQ(results[2].status, MeasureStatus::kTimeout) << results[2].error;
  EXPECT_EQ(results[3].status, MeasureStatus::kDeviceLimitsExceeded) << results[3].error;
  EXPECT_EQ(results[4].status, MeasureStatus::kOk) << results[4].error;
}

TEST_F(GpuMeasurerOnDevice, TheTunersSetupChecksGeneratedKernelsAgainstReferenceGemm) {
  GpuMeasurerOptions options;
  options.measure.timeout_seconds = 10;
  options.measure.repeats = 3;
  GpuMeasurer tuner_like(std::make_unique<WorkerProcess>(
                             std::vector<std::string>{DIETCODE_CLI_PATH, kMeasureWorkerSubcommand}),
                         options);
  ASSERT_EQ(tuner_like.device().arch, measurer_->device().arch);

  OpSpec fc;
  fc.name = "fc";
  fc.epilogue = Epilogue::kBiasRelu;
  fc.dims = {{"M", Expr::parse("T")}, {"N", Expr::constant(768)}, {"K", Expr::constant(768)}};
  fc.vars = {"T"};
  std::vector<MeasureInput> inputs;
  for (int split_k : {1, 2}) {  // 2: the reduction kernel, its grid and the workspace
    MeasureInput in;
    in.op = &fc;
    in.mk = {"dense_f32", {{"SPLITK", split_k}}};
    in.kernel = generate_kernel(fc, in.mk);
    CompileRequest request;
    request.name = "dense_f32.cu";
    request.source = in.kernel.source;
    request.options = in.kernel.options;
    request.archs = {tuner_like.device().arch};
    request.want_ptx = false;
    static NvrtcCompiler compiler;
    in.compiled = compiler.compile(request);
    ASSERT_TRUE(in.compiled.ok) << in.compiled.log;
    for (int64_t m : {1, 130}) {
      Instance inst;
      inst.values = {m};
      inst.gemm = {1, m, 768, 768};
      in.instances.push_back(inst);
    }
    inputs.push_back(std::move(in));
  }
  // The naive kernel with one element off, checked against the op's own reference.
  inputs.push_back(input(2, {{1, 16, 96, 64}, {1, 37, 96, 64}}));
  auto results = tuner_like.measure(inputs);
  EXPECT_EQ(results[0].status, MeasureStatus::kOk) << results[0].error;
  EXPECT_EQ(results[1].status, MeasureStatus::kOk) << results[1].error;
  EXPECT_EQ(results[2].status, MeasureStatus::kWrongResult) << results[2].error;
  for (double us : results[0].latency_us) EXPECT_TRUE(std::isfinite(us));
}

}  // namespace
}  // namespace dietcode

// GpuMeasurer's own logic — phases, isolation of crashing and hanging candidates, statuses —
// against a stand-in worker that speaks gpu_protocol.h without a GPU. The real worker is
// exercised in tests/gpu/gpu_measurer_test.cc.
#include "measure/gpu_measurer.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "common/error.h"
#include "measure/timing_order.h"

namespace dietcode {
namespace {

using nlohmann::json;

// Every request the stand-in worker serves is appended here, one line each.
std::string g_request_log;

void note(const std::string& line) { std::ofstream(g_request_log, std::ios::app) << line << "\n"; }

// Candidates act out what their entry name says; the others take 1 + M/100 microseconds.
json fake_gpu(const json& request) {
  std::string action = request.at("action");
  if (action == "identify") {
    GpuSpec spec;
    spec.name = "Fake GPU";
    return {{"name", spec.name}, {"arch", "sm_90"}, {"spec", gpu_spec_to_json(spec)}};
  }
  if (action == "prepare") {
    note("prepare");
    return json::object();
  }
  if (action == "check") {
    WorkerCandidate c = candidate_from_json(request.at("candidate"));
    const std::string& entry = c.kernel.plan.entry;
    note("check " + entry +
         (c.reference ? " with " + c.reference->id + " (" + c.reference->image + ")" : ""));
    if (entry == "crash_on_check") raise(SIGSEGV);
    if (entry == "hang_on_check")
      for (;;) pause();
    WorkerResult r;
    if (entry == "wrong" && c.reference) {
      r.status = MeasureStatus::kWrongResult;
      r.error = "C[0,0,0] = 1 where the reference has 2; 1 of 1536 elements differ";
    }
    json j = to_json(r);
    j["context_lost"] = false;
    return j;
  }
  json results = json::array();
  bool lost = false;
  std::string line = "time";
  for (const json& cj : request.at("candidates")) {
    WorkerCandidate c = candidate_from_json(cj);
    const std::string& entry = c.kernel.plan.entry;
    line += " " + entry;
    WorkerResult r;
    if (lost) {
      r.run = false;
    } else if (entry == "crash_on_time") {
      note(line);
      raise(SIGSEGV);
    } else if (entry == "no_memory") {
      throw EnvironmentError("cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (out of memory)");
    } else if (entry == "poison") {
      r.status = MeasureStatus::kLaunchError;
      r.error = "cuCtxSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access)";
      lost = true;
    } else {
      for (const GemmShape& s : c.shapes) r.latency_us.push_back(1 + double(s.M) / 100);
    }
    results.push_back(to_json(r));
  }
  note(line);
  return {{"results", results}, {"context_lost", lost}};
}

class GpuMeasurerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_request_log = (std::filesystem::temp_directory_path() /
                     ("dietcode_gpu_measurer_test_" + std::to_string(getpid())))
                        .string();
    std::filesystem::remove(g_request_log);
    op_.name = "qkv";
    op_.vars = {"T"};
  }
  void TearDown() override { std::filesystem::remove(g_request_log); }

  std::vector<std::string> requests() const {
    std::ifstream in(g_request_log);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }

  // By default results are compared with a stand-in reference kernel.
  GpuMeasurer make(std::optional<ReferenceProvider> reference = std::nullopt,
                   Compiler* compiler = nullptr) {
    GpuMeasurerOptions options;
    options.measure.timeout_seconds = 0.5;
    options.compiler = compiler;
    if (reference) {
      options.reference = *reference;
    } else {
      options.reference = [](const OpSpec& op, const std::string& arch) {
        ReferenceBuild build;
        build.kernel.plan.entry = "reference";
        build.compiled.ok = true;
        build.compiled.binaries = {{arch, "REFERENCE CUBIN", {}}};
        return build;
      };
    }
    return GpuMeasurer(std::make_unique<WorkerProcess>(fake_gpu), options);
  }

  MeasureInput input(const std::string& entry, std::vector<int64_t> ms = {16, 130}) {
    MeasureInput in;
    in.op = &op_;
    in.mk = {"dense_f32", {{"BM", 64}, {"ID", int(inputs_made_++)}}};
    in.kernel.plan.entry = entry;
    in.kernel.plan.tile_m = 64;
    in.kernel.plan.tile_n = 64;
    in.compiled.ok = true;
    in.compiled.binaries = {{"sm_90", "CUBIN of " + entry, {}}};
    for (int64_t m : ms) {
      Instance inst;
      inst.values = {m / 16};
      inst.gemm = {1, m, 768, 768};
      in.instances.push_back(inst);
    }
    return in;
  }

  OpSpec op_;
  int inputs_made_ = 0;
};

TEST_F(GpuMeasurerTest, IdentifiesTheDeviceThroughTheWorker) {
  GpuMeasurer measurer = make();
  DeviceIdentity id = measurer.device();
  EXPECT_EQ(id.name, "Fake GPU");
  EXPECT_EQ(id.arch, "sm_90");
  EXPECT_FALSE(id.simulated);
  EXPECT_EQ(measurer.gpu().sms, 132);
  EXPECT_TRUE(measurer.gpu().queried);
}

TEST_F(GpuMeasurerTest, NoDriverInTheWorkerIsAnEnvironmentError) {
  auto no_driver = [](const json&) -> json {
    throw EnvironmentError("no CUDA driver: libcuda.so.1: cannot open shared object file");
  };
  try {
    GpuMeasurer measurer(std::make_unique<WorkerProcess>(no_driver), {});
    FAIL() << "expected EnvironmentError";
  } catch (const EnvironmentError& e) {
    EXPECT_STREQ(e.what(), "no CUDA driver: libcuda.so.1: cannot open shared object file");
  }
  auto crash = [](const json&) -> json { abort(); };
  try {
    GpuMeasurer measurer(std::make_unique<WorkerProcess>(crash), {});
    FAIL() << "expected EnvironmentError";
  } catch (const EnvironmentError& e) {
    EXPECT_STREQ(e.what(),
                 "GPU 0: the measurement worker failed to start: worker killed by SIGABRT "
                 "(Aborted)");
  }
}

TEST_F(GpuMeasurerTest, EveryFailureIsAResultAndTheRestAreTimed) {
  GpuMeasurer measurer = make();
  MeasureInput broken = input("broken");
  broken.compiled.ok = false;
  broken.compiled.log = "dense_f32.cu(3): error: expected a \";\"\n";
  MeasureInput old_arch = input("old_arch");
  old_arch.compiled.binaries = {{"sm_80", "x", {}}};
  std::vector<MeasureInput> batch = {broken,
                                     old_arch,
                                     input("good"),
                                     input("wrong"),
                                     input("crash_on_check"),
                                     input("hang_on_check"),
                                     input("crash_on_time"),
                                     input("good_too", {32})};
  auto results = measurer.measure(batch);
  ASSERT_EQ(results.size(), batch.size());
  auto expect = [&](size_t i, MeasureStatus status, const std::string& error) {
    EXPECT_EQ(results[i].status, status) << batch[i].kernel.plan.entry;
    EXPECT_EQ(results[i].error, error) << batch[i].kernel.plan.entry;
    EXPECT_EQ(results[i].latency_us.size(), batch[i].instances.size());
    if (status != MeasureStatus::kOk)
      for (double us : results[i].latency_us) EXPECT_TRUE(std::isnan(us));
  };
  expect(0, MeasureStatus::kCompileError, "dense_f32.cu(3): error: expected a \";\"");
  expect(1, MeasureStatus::kCompileError, "no CUBIN for sm_90 and no PTX (built for: sm_80)");
  expect(2, MeasureStatus::kOk, "");
  EXPECT_EQ(results[2].latency_us, (std::vector<double>{1.16, 2.3}));
  expect(3, MeasureStatus::kWrongResult,
         "C[0,0,0] = 1 where the reference has 2; 1 of 1536 elements differ");
  expect(4, MeasureStatus::kLaunchError, "worker killed by SIGSEGV (Segmentation fault)");
  expect(5, MeasureStatus::kTimeout, "no answer within 0.5 s; worker killed");
  expect(6, MeasureStatus::kLaunchError, "worker killed by SIGSEGV (Segmentation fault)");
  expect(7, MeasureStatus::kOk, "");
  EXPECT_EQ(results[7].latency_us, (std::vector<double>{1.32}));

  // Checks went one candidate at a time, with the reference; the batch was timed together,
  // then each alone once it crashed.
  std::vector<std::string> expected = {
      "check good with reference|qkv (REFERENCE CUBIN)",
      "check wrong with reference|qkv (REFERENCE CUBIN)",
      "check crash_on_check with reference|qkv (REFERENCE CUBIN)",
      "prepare",  // a fresh worker makes its context before the next candidate's clock
      "check hang_on_check with reference|qkv (REFERENCE CUBIN)",
      "prepare",
      "check crash_on_time with reference|qkv (REFERENCE CUBIN)",
      "check good_too with reference|qkv (REFERENCE CUBIN)",
      "time good crash_on_time",  // the worker died there
      "prepare",
      "time good",
      "time crash_on_time",
      "prepare",
      "time good_too",
  };
  EXPECT_EQ(requests(), expected);
}

TEST_F(GpuMeasurerTest, AMicroKernelIsCheckedOnlyOnItsFirstRun) {
  GpuMeasurer measurer = make();
  MeasureInput good = input("good");
  EXPECT_EQ(measurer.measure({good})[0].status, MeasureStatus::kOk);
  EXPECT_EQ(measurer.measure({good})[0].status, MeasureStatus::kOk);
  std::vector<std::string> expected = {"check good with reference|qkv (REFERENCE CUBIN)",
                                       "time good", "time good"};
  EXPECT_EQ(requests(), expected);
}

// A Compiler stand-in: records what it was asked to build and returns a named "CUBIN".
class RecordingCompiler : public Compiler {
 public:
  CompileResult compile(const CompileRequest& request) override {
    requests.push_back(request);
    CompileResult result;
    result.ok = true;
    for (const std::string& arch : request.archs)
      result.binaries.push_back({arch, "CUBIN of " + request.name + " for " + arch, {}});
    return result;
  }
  std::vector<CompileRequest> requests;
};

TEST_F(GpuMeasurerTest, TheReferenceIsGeneratedAndCompiledOncePerOpWithTheGivenCompiler) {
  RecordingCompiler compiler;
  op_.epilogue = Epilogue::kBiasRelu;
  GpuMeasurer measurer = make(/*reference=*/ReferenceProvider(), &compiler);
  auto results = measurer.measure({input("good"), input("wrong")});
  EXPECT_EQ(results[0].status, MeasureStatus::kOk);
  EXPECT_EQ(results[1].status, MeasureStatus::kWrongResult);
  EXPECT_EQ(measurer.measure({input("good_too")})[0].status, MeasureStatus::kOk);

  ASSERT_EQ(compiler.requests.size(), 1u);  // the same op: built once
  const CompileRequest& request = compiler.requests[0];
  EXPECT_EQ(request.name, "reference_gemm.cu");
  EXPECT_EQ(request.archs, (std::vector<std::string>{"sm_90"}));  // the worker's device
  EXPECT_EQ(request.options, (std::vector<std::string>{"-DEPILOGUE=3"}));
  EXPECT_NE(request.source.find("void __launch_bounds__(256) dietcode_reference_gemm("),
            std::string::npos);
  std::vector<std::string> expected = {
      "check good with reference|qkv (CUBIN of reference_gemm.cu for sm_90)",
      "check wrong with reference|qkv (CUBIN of reference_gemm.cu for sm_90)",
      "time good",
      "check good_too with reference|qkv (CUBIN of reference_gemm.cu for sm_90)",
      "time good_too",
  };
  EXPECT_EQ(requests(), expected);
}

TEST_F(GpuMeasurerTest, AnOpWithoutAReferenceKernelIsStillRunAloneFirst) {
  RecordingCompiler compiler;
  op_.kind = OpKind::kConv2d;  // the reference kernel computes no 16-bit conv2d
  op_.dtype = DType::kFloat16;
  op_.dims = {{"N", Expr::parse("T")},   {"H", Expr::constant(8)},  {"W", Expr::constant(8)},
              {"C", Expr::constant(16)}, {"K", Expr::constant(32)}, {"R", Expr::constant(3)},
              {"S", Expr::constant(3)}};
  GpuMeasurer measurer = make(/*reference=*/ReferenceProvider(), &compiler);
  auto results = measurer.measure({input("wrong"), input("hang_on_check")});
  EXPECT_EQ(results[0].status, MeasureStatus::kOk);  // nothing to compare with
  EXPECT_EQ(results[1].status, MeasureStatus::kTimeout);
  EXPECT_TRUE(compiler.requests.empty());
  std::vector<std::string> expected = {"check wrong", "check hang_on_check", "prepare",
                                       "time wrong"};
  EXPECT_EQ(requests(), expected);
}

TEST_F(GpuMeasurerTest, AShapeNoLaunchCanHoldIsRefusedBeforeAnyRequest) {
  GpuMeasurer measurer = make();
  MeasureInput too_many = input("good");
  too_many.instances[1].gemm.batch = 70000;  // grid z = batch * split_k > 65535
  MeasureInput reduce = input("good_too");
  reduce.kernel.plan.split_k = 2;
  reduce.kernel.plan.reduce_entry = "reduce";
  auto results = measurer.measure({too_many, reduce});
  EXPECT_EQ(results[0].status, MeasureStatus::kDeviceLimitsExceeded);
  EXPECT_EQ(results[0].error,
            "shape batch=70000 M=130 N=768 K=768 needs a grid of 12 x 70000 blocks, more than "
            "one launch allows");
  EXPECT_EQ(results[0].latency_us.size(), 2u);
  EXPECT_EQ(results[1].status, MeasureStatus::kOk);
  std::vector<std::string> expected = {"check good_too with reference|qkv (REFERENCE CUBIN)",
                                       "time good_too"};
  EXPECT_EQ(requests(), expected);
}

TEST_F(GpuMeasurerTest, ALostContextSendsTheOthersToAFreshWorker) {
  GpuMeasurer measurer = make();
  auto results = measurer.measure({input("good"), input("poison"), input("good_too")});
  EXPECT_EQ(results[0].status, MeasureStatus::kOk);
  EXPECT_EQ(results[1].status, MeasureStatus::kLaunchError);
  EXPECT_EQ(results[1].error,
            "cuCtxSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access)");
  EXPECT_EQ(results[2].status, MeasureStatus::kOk);
  EXPECT_EQ(results[2].latency_us, (std::vector<double>{1.16, 2.3}));
  std::vector<std::string> lines = requests();
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_EQ(lines[3], "time good poison good_too");
  EXPECT_EQ(lines[4], "prepare");
  EXPECT_EQ(lines[5], "time good_too");
}

TEST_F(GpuMeasurerTest, AnEnvironmentErrorInTheWorkerStopsTheRun) {
  GpuMeasurer measurer = make();
  try {
    measurer.measure({input("good"), input("no_memory")});
    FAIL() << "expected EnvironmentError";
  } catch (const EnvironmentError& e) {
    EXPECT_STREQ(e.what(), "cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (out of memory)");
  }
}

// The worker's timing order (timing_order.h): no kernel follows itself while another has shapes
// left, and every (candidate, shape) pair runs once a round.
TEST(InterleavedTimingOrder, TheCandidatesTakeTurnsShapeByShape) {
  using Order = std::vector<std::pair<size_t, size_t>>;
  EXPECT_EQ(interleaved_timing_order({2, 2, 2}),
            (Order{{0, 0}, {1, 0}, {2, 0}, {0, 1}, {1, 1}, {2, 1}}));
  // Unequal shape lists: a candidate repeats only once it is the last with shapes left.
  EXPECT_EQ(interleaved_timing_order({3, 1, 0, 2}),
            (Order{{0, 0}, {1, 0}, {3, 0}, {0, 1}, {3, 1}, {0, 2}}));
  EXPECT_EQ(interleaved_timing_order({3}), (Order{{0, 0}, {0, 1}, {0, 2}}));
  EXPECT_TRUE(interleaved_timing_order({}).empty());
  EXPECT_TRUE(interleaved_timing_order({0, 0}).empty());
}

}  // namespace
}  // namespace dietcode

// compile_all: results in request order whatever the thread timing, real parallelism,
// statistics, progress callbacks, and a broken environment stopping the batch.
#include "nvrtc/parallel_compile.h"

#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include "common/error.h"
#include "nvrtc/nvrtc_compiler.h"

namespace dietcode {
namespace {

// Sleeps for the number of milliseconds in the request's name, so later requests can finish
// first; records the threads it ran on.
class SleepyCompiler : public Compiler {
 public:
  CompileResult compile(const CompileRequest& request) override {
    if (request.source == "throw") throw EnvironmentError("NVRTC is not usable: test");
    std::this_thread::sleep_for(std::chrono::milliseconds(std::stoi(request.name)));
    {
      std::lock_guard<std::mutex> lock(mutex_);
      threads.insert(std::this_thread::get_id());
    }
    CompileResult r;
    r.ok = request.source != "bad";
    r.log = request.source;
    r.seconds = std::stoi(request.name) / 1000.0;
    r.cache_hit = request.source == "cached";
    return r;
  }
  std::set<std::thread::id> threads;

 private:
  std::mutex mutex_;
};

std::vector<CompileRequest> requests(const std::vector<int>& sleeps_ms) {
  std::vector<CompileRequest> out;
  for (size_t i = 0; i < sleeps_ms.size(); ++i) {
    CompileRequest r;
    r.name = std::to_string(sleeps_ms[i]);
    r.source = "kernel " + std::to_string(i);
    out.push_back(r);
  }
  return out;
}

TEST(ParallelCompile, ResultsInRequestOrder) {
  SleepyCompiler compiler;
  std::vector<CompileRequest> batch = requests({60, 5, 40, 1, 30, 2, 20, 3});
  ParallelCompileOptions options;
  options.jobs = 2;
  std::vector<CompileResult> results = compile_all(compiler, batch, options);
  ASSERT_EQ(results.size(), batch.size());
  for (size_t i = 0; i < batch.size(); ++i) EXPECT_EQ(results[i].log, batch[i].source);
  EXPECT_EQ(compiler.threads.size(), 2u);
}

TEST(ParallelCompile, TwoJobsOverlap) {
  SleepyCompiler compiler;
  std::vector<CompileRequest> batch = requests({50, 50, 50, 50});
  ParallelCompileOptions options;
  options.jobs = 2;
  CompileStats stats;
  compile_all(compiler, batch, options, &stats);
  EXPECT_EQ(stats.kernels, 4);
  EXPECT_DOUBLE_EQ(stats.nvrtc_seconds, 0.2);
  EXPECT_GE(stats.wall_seconds, 0.1);
  EXPECT_LT(stats.wall_seconds, 0.19);  // serial would take 0.2 s
  EXPECT_NEAR(stats.kernels_per_second(), 4 / stats.wall_seconds, 1e-9);
}

TEST(ParallelCompile, StatsCountFailuresAndHits) {
  SleepyCompiler compiler;
  std::vector<CompileRequest> batch = requests({1, 1, 1, 1, 1});
  batch[1].source = "bad";
  batch[3].source = "cached";
  batch[4].source = "cached";
  CompileStats stats;
  ParallelCompileOptions options;
  options.jobs = 1;
  compile_all(compiler, batch, options, &stats);
  EXPECT_EQ(stats.kernels, 5);
  EXPECT_EQ(stats.failed, 1);
  EXPECT_EQ(stats.cache_hits, 2);
  EXPECT_EQ(compiler.threads.size(), 1u);
}

TEST(ParallelCompile, ProgressCallbackSeesEveryRequestOnce) {
  SleepyCompiler compiler;
  std::vector<CompileRequest> batch = requests({3, 1, 2, 1, 3, 1});
  std::vector<int> seen(batch.size(), 0);
  ParallelCompileOptions options;
  options.jobs = 3;
  options.on_done = [&](size_t i, const CompileResult& r) {
    ++seen[i];  // unsynchronised on purpose: on_done is promised to be serialised
    EXPECT_EQ(r.log, batch[i].source);
  };
  compile_all(compiler, batch, options);
  EXPECT_EQ(seen, std::vector<int>(batch.size(), 1));
}

TEST(ParallelCompile, BrokenEnvironmentStopsTheBatch) {
  SleepyCompiler compiler;
  std::vector<CompileRequest> batch = requests({1, 1, 1, 1, 1, 1, 1, 1});
  batch[2].source = "throw";
  ParallelCompileOptions options;
  options.jobs = 2;
  try {
    compile_all(compiler, batch, options);
    FAIL() << "expected EnvironmentError";
  } catch (const EnvironmentError& e) {
    EXPECT_STREQ(e.what(), "NVRTC is not usable: test");
  }
}

TEST(ParallelCompile, EmptyBatch) {
  SleepyCompiler compiler;
  CompileStats stats;
  EXPECT_TRUE(compile_all(compiler, {}, {}, &stats).empty());
  EXPECT_EQ(stats.kernels, 0);
  EXPECT_EQ(stats.kernels_per_second(), 0);
}

TEST(ParallelCompile, RealNvrtcOnTwoThreads) {
  NvrtcCompiler nvrtc;
  std::vector<CompileRequest> batch;
  for (int i = 0; i < 4; ++i) {
    CompileRequest r;
    r.name = "scale" + std::to_string(i) + ".cu";
    r.source = "extern \"C\" __global__ void scale" + std::to_string(i) +
               "(float* x) { x[threadIdx.x] *= " + std::to_string(i + 2) + ".f; }";
    r.archs = {"sm_90"};
    r.want_ptx = false;
    batch.push_back(r);
  }
  batch[2].source += " syntax error";
  ParallelCompileOptions options;
  options.jobs = 2;
  CompileStats stats;
  std::vector<CompileResult> results = compile_all(nvrtc, batch, options, &stats);
  ASSERT_EQ(results.size(), 4u);
  for (int i : {0, 1, 3}) {
    ASSERT_TRUE(results[i].ok) << results[i].log;
    EXPECT_EQ(results[i].binaries.at(0).resources.at(0).entry, "scale" + std::to_string(i));
  }
  EXPECT_FALSE(results[2].ok);
  EXPECT_NE(results[2].log.find("scale2.cu"), std::string::npos);
  EXPECT_EQ(stats.failed, 1);
  EXPECT_GT(stats.nvrtc_seconds, 0);
}

TEST(ParallelCompile, DefaultJobsIsPositive) { EXPECT_GE(default_compile_jobs(), 1); }

}  // namespace
}  // namespace dietcode

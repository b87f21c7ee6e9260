// CpuMeasurer end to end on this machine: tiny candidate .so files are compiled here from C
// sources (one naive dense kernel, with macros that break it in every way a candidate can), then
// measured through a forked worker.
#include "x86/cpu_measurer.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "measure/worker_process.h"

#ifndef DIETCODE_SOURCE_DIR
#error "DIETCODE_SOURCE_DIR must name the source tree (for templates/)"
#endif

namespace dietcode {
namespace {

// A naive dense kernel Y = epilogue(X W^T + bias) under the CPU contract, one task per row.
// Macros break it: STRAY writes one float past C, RETURN1 refuses, SEGV and UD2 crash (SIGSEGV,
// SIGILL), HANG never returns, WRONG drops the first product, CRASH_LATER executes ud2 from its
// fifth call on (it passes the check, then dies while timed), EXPECT_THREADS refuses any other
// rt->threads.
constexpr char kKernelSource[] = R"C(
#include <math.h>
#include "x86/dietcode_cpu.h"

typedef struct {
  const DietcodeArgs* args;
  const DietcodeCpuRuntime* rt;
  volatile int bad_worker;
} Ctx;

static void row(void* p, int m, int worker) {
  Ctx* ctx = (Ctx*)p;
  const DietcodeArgs* a = ctx->args;
  if (worker < 0 || worker >= ctx->rt->threads) ctx->bad_worker = 1;
  const float* x = (const float*)a->a;
  const float* w = (const float*)a->b;
  const float* bias = (const float*)a->bias;
  float* y = (float*)a->c;
  for (long long n = 0; n < a->n; ++n) {
    float acc = 0;
#ifdef WRONG
    for (long long k = 1; k < a->k; ++k) acc += x[m * a->k + k] * w[n * a->k + k];
#else
    for (long long k = 0; k < a->k; ++k) acc += x[m * a->k + k] * w[n * a->k + k];
#endif
    if (EPILOGUE == 1 || EPILOGUE == 3 || EPILOGUE == 5) acc += bias[n];
    if (EPILOGUE == 2 || EPILOGUE == 3) acc = acc > 0 ? acc : 0;
    if (EPILOGUE == 4 || EPILOGUE == 5)
      acc = 0.5f * acc * (1.0f + tanhf(0.7978845608f * (acc + 0.044715f * acc * acc * acc)));
    y[m * a->n + n] = acc;
  }
}

int dietcode_dense_kernel(const DietcodeArgs* a, const DietcodeCpuRuntime* rt) {
#ifdef EXPECT_THREADS
  if (rt->threads != EXPECT_THREADS) return 2;
#endif
#ifdef RETURN1
  return 1;
#endif
#ifdef SEGV
  *(volatile int*)0 = 1;
#endif
#ifdef UD2
  __asm__ volatile("ud2");
#endif
#ifdef HANG
  for (volatile int spin = 1; spin;) {}
#endif
#ifdef CRASH_LATER
  static int calls = 0;
  if (++calls > 4) __asm__ volatile("ud2");
#endif
  Ctx ctx = {a, rt, 0};
  rt->parallel_for(rt->pool, (int)(a->batch * a->m), row, &ctx);
#ifdef STRAY
  ((float*)a->c)[a->batch * a->m * a->n] = 1.0f;
#endif
  return ctx.bad_worker ? 3 : 0;
}
)C";

constexpr Epilogue kEpilogue = Epilogue::kBiasGelu;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class CpuMeasurerTest : public ::testing::Test {
 protected:
  // Every variant, compiled once for the suite: name -> .so bytes.
  static void SetUpTestSuite() {
    char dir_template[] = "/tmp/dietcode-cpu-measurer-XXXXXX";
    ASSERT_NE(::mkdtemp(dir_template), nullptr);
    dir_ = dir_template;
    const std::string source = dir_ + "/kernel.c";
    std::ofstream(source) << kKernelSource;
    const std::map<std::string, std::string> variants = {{"good", ""},
                                                         {"stray", "-DSTRAY"},
                                                         {"return1", "-DRETURN1"},
                                                         {"segv", "-DSEGV"},
                                                         {"ud2", "-DUD2"},
                                                         {"hang", "-DHANG"},
                                                         {"wrong", "-DWRONG"},
                                                         {"crash_later", "-DCRASH_LATER"},
                                                         {"threads3", "-DEXPECT_THREADS=3"},
                                                         // Stays loaded after dlclose, as a
                                                         // candidate with thread_local scratch
                                                         // does while the pool's threads live.
                                                         {"nodelete", "-Wl,-z,nodelete"},
                                                         {"renamed",
                                                          "-Ddietcode_dense_kernel=other_entry"}};
    for (const auto& [name, flags] : variants) {
      const std::string so = dir_ + "/" + name + ".so";
      const std::string command =
          "g++ -x c -std=c11 -O2 -shared -fPIC -I" DIETCODE_SOURCE_DIR "/templates -DEPILOGUE=" +
          std::to_string(int(kEpilogue)) + " " + flags + " " + source + " -o " + so + " -lm";
      ASSERT_EQ(std::system(command.c_str()), 0) << command;
      libraries_[name] = read_file(so);
    }
  }
  static void TearDownTestSuite() {
    if (!dir_.empty()) std::system(("rm -rf " + dir_).c_str());
  }

  static std::unique_ptr<CpuMeasurer> make_measurer(int threads = 2, bool evict = false,
                                                    double timeout = 2) {
    CpuMeasurerOptions options;
    options.threads = threads;
    options.measure.flush_l2 = evict;
    options.measure.timeout_seconds = timeout;
    options.measure.warmup = 2;
    options.measure.repeats = 7;
    return std::make_unique<CpuMeasurer>(std::make_unique<WorkerProcess>(cpu_worker_handler()),
                                         options);
  }

  MeasureInput input(const std::string& variant, const std::vector<int64_t>& ms, int64_t n = 96,
                     int64_t k = 128, const std::string& arch = "x86-64-v3") {
    MeasureInput in;
    in.op = &op_;
    in.mk.tmpl = "x86_dense_test_" + variant;
    in.mk.params = {{"BM", 16}};
    in.kernel.name = in.mk.tmpl;
    in.kernel.plan.entry = "dietcode_dense_kernel";
    in.kernel.plan.tile_m = 16;
    in.kernel.plan.tile_n = 16;
    in.compiled.ok = true;
    in.compiled.binaries.push_back({arch, libraries_.at(variant), {}});
    for (int64_t m : ms) {
      Instance inst;
      inst.values = {m};
      inst.gemm = {1, m, n, k};
      in.instances.push_back(inst);
    }
    return in;
  }

  static OpSpec make_op() {
    OpSpec op;
    op.name = "dense_test";
    op.kind = OpKind::kDense;
    op.epilogue = kEpilogue;
    op.vars = {"M"};
    return op;
  }

  static std::string dir_;
  static std::map<std::string, std::string> libraries_;
  OpSpec op_ = make_op();
};

std::string CpuMeasurerTest::dir_;
std::map<std::string, std::string> CpuMeasurerTest::libraries_;

void expect_all_finite(const MeasureResult& r) {
  for (double us : r.latency_us) {
    EXPECT_TRUE(std::isfinite(us));
    EXPECT_GT(us, 0);
  }
}

TEST(CrashDescription, NamesTheSignal) {
  EXPECT_EQ(crash_description(SIGILL), "crashed with SIGILL (illegal instruction)");
  EXPECT_EQ(crash_description(SIGSEGV), "crashed with SIGSEGV (segmentation fault)");
}

TEST(CpuIdentity, BrandStringAndCache) {
  EXPECT_FALSE(cpu_brand_string().empty());
  EXPECT_GE(last_level_cache_bytes(), int64_t(256) << 10);
}

// More candidates than the worker keeps loaded, each a library dlclose cannot unload: a later
// candidate must still get its own library, never one loaded earlier under a path used again
// (a recycled /proc/self/fd/N once handed back a stale library: "has no entry").
TEST_F(CpuMeasurerTest, ALibraryThatStaysLoadedNeverShadowsALaterCandidate) {
  auto measurer = make_measurer(1);
  std::vector<MeasureInput> inputs;
  for (int i = 0; i < 70; ++i) {
    inputs.push_back(input("nodelete", {3}));
    inputs.back().mk.params["BM"] = 16 + i;  // a distinct candidate each time
  }
  MeasureInput last = input("renamed", {3});
  last.kernel.plan.entry = "other_entry";
  inputs.push_back(last);
  const std::vector<MeasureResult> results = measurer->measure(inputs);
  ASSERT_EQ(results.size(), inputs.size());
  for (size_t i = 0; i < results.size(); ++i)
    EXPECT_EQ(results[i].status, MeasureStatus::kOk) << i << ": " << results[i].error;
}

TEST_F(CpuMeasurerTest, IdentifiesTheDevice) {
  auto measurer = make_measurer(2, /*evict=*/true);
  DeviceIdentity id = measurer->device();
  EXPECT_EQ(id.name, cpu_brand_string());
  EXPECT_EQ(id.arch, "x86-64-v3");
  EXPECT_FALSE(id.simulated);
  EXPECT_EQ(id.l2, "flush");
  EXPECT_EQ(measurer->threads(), 2);
  EXPECT_EQ(measurer->evict_bytes(),
            std::min<int64_t>(2 * measurer->last_level_cache_bytes(), int64_t(64) << 20));
  EXPECT_GT(measurer->evict_microseconds(), 0);
  std::printf(
      "[ device   ] %s, %s, LLC %lld KiB; %lld KiB written before each timed call, "
      "%.0f us each\n",
      id.name.c_str(), id.arch.c_str(), (long long)(measurer->last_level_cache_bytes() >> 10),
      (long long)(measurer->evict_bytes() >> 10), measurer->evict_microseconds());
  EXPECT_EQ(make_measurer(2, false)->device().l2, "warm");
}

TEST_F(CpuMeasurerTest, AGoodKernelPassesAndItsLatencyGrowsWithM) {
  auto measurer = make_measurer();
  std::vector<MeasureResult> r = measurer->measure({input("good", {8, 100, 512})});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].status, MeasureStatus::kOk) << r[0].error;
  EXPECT_EQ(r[0].error, "");
  ASSERT_EQ(r[0].latency_us.size(), 3u);
  expect_all_finite(r[0]);
  EXPECT_LT(r[0].latency_us[0], r[0].latency_us[2]);  // 64x the work
  std::printf("[ latency  ] naive dense N=96 K=128: M=8 %.1f us, M=100 %.1f us, M=512 %.1f us\n",
              r[0].latency_us[0], r[0].latency_us[1], r[0].latency_us[2]);
}

TEST_F(CpuMeasurerTest, EvictingTheCachesStillMeasures) {
  auto measurer = make_measurer(2, /*evict=*/true);
  std::vector<MeasureResult> r = measurer->measure({input("good", {8, 512})});
  EXPECT_EQ(r[0].status, MeasureStatus::kOk) << r[0].error;
  expect_all_finite(r[0]);
  std::printf("[ latency  ] with eviction: M=8 %.1f us, M=512 %.1f us; %.2f s in all\n",
              r[0].latency_us[0], r[0].latency_us[1], r[0].seconds);
}

struct Bad {
  const char* variant;
  MeasureStatus status;
  std::string error;
};

std::vector<Bad> bad_candidates() {
  return {
      {"stray", MeasureStatus::kWrongResult,
       "wrote outside its output: 4 bytes changed past the end of C, the first at end + 0 "
       "(M=8, N=96, K=128, batch=1)"},
      {"return1", MeasureStatus::kLaunchError, "the kernel returned 1 (M=8, N=96, K=128, batch=1)"},
      {"segv", MeasureStatus::kLaunchError, "crashed with SIGSEGV (segmentation fault)"},
      {"ud2", MeasureStatus::kLaunchError, "crashed with SIGILL (illegal instruction)"},
      {"hang", MeasureStatus::kTimeout, "did not finish within 2 s; the worker was killed"},
      {"wrong", MeasureStatus::kWrongResult, ""},  // the message names the first mismatch
  };
}

TEST_F(CpuMeasurerTest, EachBadCandidateGetsItsStatusAndTheWorkerGoesOn) {
  auto measurer = make_measurer();
  for (const Bad& bad : bad_candidates()) {
    SCOPED_TRACE(bad.variant);
    std::vector<MeasureResult> r = measurer->measure({input(bad.variant, {8, 100, 40})});
    EXPECT_EQ(r[0].status, bad.status) << r[0].error;
    if (!bad.error.empty()) {
      EXPECT_EQ(r[0].error, bad.error);
    }
    for (double us : r[0].latency_us) EXPECT_TRUE(std::isnan(us));
    // The worker (restarted where it died) measures a good candidate right after.
    std::vector<MeasureResult> good = measurer->measure({input("good", {8, 100, 40})});
    EXPECT_EQ(good[0].status, MeasureStatus::kOk) << good[0].error;
    expect_all_finite(good[0]);
  }
}

TEST_F(CpuMeasurerTest, AWrongResultSaysWhere) {
  auto measurer = make_measurer();
  std::vector<MeasureResult> r = measurer->measure({input("wrong", {8})});
  ASSERT_EQ(r[0].status, MeasureStatus::kWrongResult);
  EXPECT_NE(r[0].error.find("differ from the reference; first at [0, 0]: got "), std::string::npos)
      << r[0].error;
  EXPECT_NE(r[0].error.find("(M=8, N=96, K=128, batch=1)"), std::string::npos) << r[0].error;
  EXPECT_EQ(r[0].error.find('\n'), std::string::npos);
}

TEST_F(CpuMeasurerTest, OneBatchOfGoodAndBadCandidates) {
  auto measurer = make_measurer();
  std::vector<MeasureInput> batch;
  for (const Bad& bad : bad_candidates()) batch.push_back(input(bad.variant, {8, 100, 40}));
  batch.push_back(input("good", {8, 100, 40}));
  std::vector<MeasureResult> r = measurer->measure(batch);
  ASSERT_EQ(r.size(), batch.size());
  for (size_t i = 0; i + 1 < r.size(); ++i) EXPECT_EQ(r[i].status, bad_candidates()[i].status);
  EXPECT_EQ(r.back().status, MeasureStatus::kOk) << r.back().error;
  expect_all_finite(r.back());
}

TEST_F(CpuMeasurerTest, ACrashWhileTimedIsFoundByTimingEachAlone) {
  auto measurer = make_measurer();
  std::vector<MeasureResult> r =
      measurer->measure({input("good", {8, 100, 40}), input("crash_later", {8, 100, 40})});
  EXPECT_EQ(r[0].status, MeasureStatus::kOk) << r[0].error;
  expect_all_finite(r[0]);
  EXPECT_EQ(r[1].status, MeasureStatus::kLaunchError);
  EXPECT_EQ(r[1].error, "crashed with SIGILL (illegal instruction)");
}

TEST_F(CpuMeasurerTest, TheThreadCountReachesTheKernel) {
  std::vector<MeasureResult> three = make_measurer(3)->measure({input("threads3", {8, 100})});
  EXPECT_EQ(three[0].status, MeasureStatus::kOk) << three[0].error;
  std::vector<MeasureResult> one = make_measurer(1)->measure({input("threads3", {8, 100})});
  EXPECT_EQ(one[0].status, MeasureStatus::kLaunchError);
  EXPECT_EQ(one[0].error, "the kernel returned 2 (M=8, N=96, K=128, batch=1)");
}

TEST_F(CpuMeasurerTest, UnloadableCandidatesAreCompileErrors) {
  auto measurer = make_measurer();
  MeasureInput garbage = input("good", {8});
  garbage.compiled.binaries[0].cubin = "not an ELF file";
  MeasureInput no_entry = input("good", {8});
  no_entry.kernel.plan.entry = "nope";
  MeasureInput other_arch = input("good", {8}, 96, 128, "x86-64-v4");
  MeasureInput failed = input("good", {8});
  failed.compiled.ok = false;
  failed.compiled.log = "\nkernel.cc:3: error: expected ';'\nmore\n";
  std::vector<MeasureResult> r = measurer->measure({garbage, no_entry, other_arch, failed});
  for (const MeasureResult& x : r) EXPECT_EQ(x.status, MeasureStatus::kCompileError) << x.error;
  EXPECT_EQ(r[0].error.rfind("cannot load the shared object: ", 0), 0u) << r[0].error;
  EXPECT_EQ(r[1].error, "the shared object has no entry \"nope\"");
  EXPECT_EQ(r[2].error, "no shared object for x86-64-v3 (built for: x86-64-v4)");
  EXPECT_EQ(r[3].error, "kernel.cc:3: error: expected ';'");
}

TEST_F(CpuMeasurerTest, ACheckedCandidateIsNotCheckedAgain) {
  auto measurer = make_measurer(2, false, 2);
  auto first = measurer->measure({input("good", {8, 100})});
  ASSERT_EQ(first[0].status, MeasureStatus::kOk);
  auto again = measurer->measure({input("good", {8, 100, 512})});
  EXPECT_EQ(again[0].status, MeasureStatus::kOk) << again[0].error;
  expect_all_finite(again[0]);
}

}  // namespace
}  // namespace dietcode

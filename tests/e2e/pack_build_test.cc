// build_pack with a stand-in compiler (a TEST DOUBLE whose "CUBINs" are placeholder bytes):
// which kernels end up in the pack when some do not compile, when an op has no timings, and
// under a kernel budget. The pack is real (host-compiled) and loaded with dlopen.
#include "pack/pack_build.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/error.h"

namespace dietcode {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class FakeCompiler : public Compiler {
 public:
  explicit FakeCompiler(std::string fail_option) : fail_option_(std::move(fail_option)) {}
  CompileResult compile(const CompileRequest& request) override {
    ++calls;
    CompileResult r;
    if (std::count(request.options.begin(), request.options.end(), fail_option_)) {
      r.log = "\nerror: fake compile failure\nmore\n";
      return r;
    }
    r.ok = true;
    for (const std::string& arch : request.archs)
      r.binaries.push_back({arch, "placeholder CUBIN for " + arch, {}});
    r.ptx = "// placeholder PTX";
    r.ptx_arch = "compute_90";
    return r;
  }
  std::atomic<int> calls{0};

 private:
  std::string fail_option_;
};

// Candidates 0..2 are each the fastest on a third of T in 1..30; op "b" has no timings.
class FixedChoices : public ChoicesProvider {
 public:
  std::string description() const override { return "fixed"; }
  OpChoices choices(const Workload&, const OpSpec& op) override {
    OpChoices c;
    if (op.name != "a") return c;
    c.candidates = {{"dense_f32", {{"SPLITK", 1}}},
                    {"dense_f32", {{"SPLITK", 2}}},
                    {"dense_f32", {{"SPLITK", 4}}}};
    for (int64_t t = 1; t <= 30; ++t) {
      TreeSample s{{t}, 1.0 / 30, {}, {}};
      for (int k = 0; k < 3; ++k) s.latency_us.push_back((t - 1) / 10 == k ? 1.0 : 2.0 + k);
      c.samples.push_back(s);
    }
    return c;
  }
};

class DefaultOnly : public ChoicesProvider {
 public:
  std::string description() const override { return "untuned (template defaults)"; }
  OpChoices choices(const Workload&, const OpSpec&) override {
    OpChoices c;
    c.candidates = {{"dense_f32", {}}};
    return c;
  }
};

class PackBuildTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("dietcode_pack_build_" + std::to_string(getpid()));
    fs::create_directories(dir_);
    w_ = parse_workload(R"({"name": "two", "shape_vars": {"T": {"min": 1, "max": 30}},
        "ops": [{"name": "a", "op": "dense", "dtype": "float32", "M": "T", "N": 64, "K": 64},
                {"name": "b", "op": "dense", "dtype": "float32", "M": "T", "N": 32, "K": 64}]})",
                        "two.json");
    options_.archs = {"sm_80", "sm_90"};
    options_.jobs = 2;
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The kernel the pack picks for op a at every T, and its manifest.
  std::vector<int> picks(const fs::path& lib, json* manifest) {
    void* h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    EXPECT_TRUE(h) << dlerror();
    auto select =
        reinterpret_cast<int (*)(const char*, const int64_t*, int)>(dlsym(h, "dietcode_select"));
    *manifest = json::parse(reinterpret_cast<const char* (*)()>(dlsym(h, "dietcode_manifest"))());
    std::vector<int> out;
    for (int64_t t = 1; t <= 30; ++t) out.push_back(select("a", &t, 1));
    dlclose(h);
    return out;
  }

  fs::path dir_;
  Workload w_;
  PackBuildOptions options_;
  FixedChoices fixed_;
  DefaultOnly defaults_;
};

TEST_F(PackBuildTest, EachBandGetsItsKernelAndUntimedOpsTheDefault) {
  FakeCompiler compiler("-DNEVER");
  PackBuildReport r = build_pack(w_, fixed_, defaults_, compiler, dir_ / "libtwo.so", options_);
  ASSERT_EQ(r.ops.size(), 2u);
  EXPECT_TRUE(r.ops[0].tuned);
  EXPECT_EQ(r.ops[0].kernels, 3);
  EXPECT_EQ(r.ops[0].quality.max_regret_us, 0.0);
  EXPECT_FALSE(r.ops[1].tuned);
  EXPECT_EQ(r.ops[1].kernels, 1);
  EXPECT_EQ(r.choices, "fixed; some ops untuned (template defaults)");
  EXPECT_EQ(r.kernels_compiled, 4);
  json m;
  std::vector<int> k = picks(dir_ / "libtwo.so", &m);
  for (int64_t t = 1; t <= 30; ++t) EXPECT_EQ(k[t - 1], (t - 1) / 10) << t;
  EXPECT_EQ(m["ops"][1]["kernels"].size(), 1u);
  EXPECT_EQ(m["ops"][0]["instances"]["values"].size(), 30u);
}

TEST_F(PackBuildTest, AKernelThatDoesNotCompileIsDroppedAndTheTreeRefitted) {
  FakeCompiler compiler("-DSPLITK=2");
  PackBuildReport r = build_pack(w_, fixed_, defaults_, compiler, dir_ / "libtwo.so", options_);
  EXPECT_EQ(r.ops[0].kernels, 2);
  ASSERT_EQ(r.ops[0].dropped.size(), 1u);
  EXPECT_EQ(r.ops[0].dropped[0], "dense_f32:SPLITK=2: error: fake compile failure");
  json m;
  std::vector<int> k = picks(dir_ / "libtwo.so", &m);
  for (const json& kernel : m["ops"][0]["kernels"]) EXPECT_NE(kernel["key"], "dense_f32:SPLITK=2");
  // T in 11..20 falls to the better of the two left (SPLITK=1 costs 2 us there, SPLITK=4 4 us).
  for (int64_t t = 11; t <= 20; ++t)
    EXPECT_EQ(m["ops"][0]["kernels"][k[t - 1]]["key"], "dense_f32:SPLITK=1");
  // Its regret is measured against the best time anyone achieved there, 1 us.
  EXPECT_NEAR(r.ops[0].quality.max_regret_us, 1.0, 1e-12);
}

TEST_F(PackBuildTest, TheKernelBudgetHolds) {
  FakeCompiler compiler("-DNEVER");
  options_.tree.max_kernels = 1;
  PackBuildReport r = build_pack(w_, fixed_, defaults_, compiler, dir_ / "libtwo.so", options_);
  EXPECT_EQ(r.ops[0].kernels, 1);
  EXPECT_EQ(r.ops[0].leaves, 1);
}

TEST_F(PackBuildTest, AFailedPackCompileLeavesNothingBehind) {
  FakeCompiler compiler("-DNEVER");
  options_.write.cxx = "false";  // a "compiler" that fails
  EXPECT_THROW(build_pack(w_, fixed_, defaults_, compiler, dir_ / "libtwo.so", options_),
               std::runtime_error);
  options_.write.cxx = "no-such-compiler-dietcode";
  try {
    build_pack(w_, fixed_, defaults_, compiler, dir_ / "libtwo.so", options_);
    FAIL();
  } catch (const EnvironmentError& e) {
    EXPECT_STREQ(e.what(), "cannot run the host C++ compiler 'no-such-compiler-dietcode': No such "
                           "file or directory (a pack is compiled with it; install g++ or "
                           "clang++)");
  }
  EXPECT_TRUE(fs::is_empty(dir_)) << "no library, header or temporary file";
}

}  // namespace
}  // namespace dietcode

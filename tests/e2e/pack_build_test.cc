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
  EXPECT_EQ(r.ops[0].dispatchers.at(0).quality.max_regret_us, 0.0);
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
  EXPECT_NEAR(r.ops[0].dispatchers.at(0).quality.max_regret_us, 1.0, 1e-12);
}

TEST_F(PackBuildTest, TheKernelBudgetHolds) {
  FakeCompiler compiler("-DNEVER");
  options_.tree.max_kernels = 1;
  PackBuildReport r = build_pack(w_, fixed_, defaults_, compiler, dir_ / "libtwo.so", options_);
  EXPECT_EQ(r.ops[0].kernels, 1);
  EXPECT_EQ(r.ops[0].dispatchers.at(0).leaves, 1);
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
    EXPECT_STREQ(e.what(),
                 "cannot run the host C++ compiler 'no-such-compiler-dietcode': No such "
                 "file or directory (a pack is compiled with it; install g++ or "
                 "clang++)");
  }
  EXPECT_TRUE(fs::is_empty(dir_)) << "no library, header or temporary file";
}

// A bfloat16 op whose log has two mma.sync kernels (any arch from sm_80) and a wgmma kernel
// (sm_90a only): wgmma is fastest for T > 15, tc:SPLITK=2 next, tc default fastest below.
class MixedArchChoices : public ChoicesProvider {
 public:
  std::string description() const override { return "fixed"; }
  OpChoices choices(const Workload&, const OpSpec&) override {
    OpChoices c;
    c.candidates = {{"dense_tc", {}}, {"dense_wgmma", {}}, {"dense_tc", {{"SPLITK", 2}}}};
    for (int64_t t = 1; t <= 30; ++t)
      c.samples.push_back(t <= 15 ? TreeSample{{t}, 1.0 / 30, {1.0, 3.0, 2.0}, {}}
                                  : TreeSample{{t}, 1.0 / 30, {5.0, 1.0, 2.0}, {}});
    return c;
  }
};

class ArchDispatchTest : public PackBuildTest {
 protected:
  void SetUp() override {
    PackBuildTest::SetUp();
    w_ = parse_workload(R"({"name": "mixed", "shape_vars": {"T": {"min": 1, "max": 30}},
        "ops": [{"name": "a", "op": "dense", "dtype": "bfloat16", "M": "T", "N": 256,
                 "K": 256}]})",
                        "mixed.json");
  }
  MixedArchChoices mixed_;
};

using SelectArch = int (*)(const char*, int, const int64_t*, int);

TEST_F(ArchDispatchTest, AnSm80AndSm90aPackCarriesATreePerArchAndPicksByDevice) {
  FakeCompiler compiler("-DNEVER");
  options_.archs = {"sm_80", "sm_90a"};
  PackBuildReport r = build_pack(w_, mixed_, defaults_, compiler, dir_ / "libmixed.so", options_);
  ASSERT_EQ(r.ops[0].dispatchers.size(), 2u);
  EXPECT_EQ(r.ops[0].dispatchers[0].archs, std::vector<std::string>{"sm_90a"});
  EXPECT_EQ(r.ops[0].dispatchers[1].archs, std::vector<std::string>{"sm_80"});
  EXPECT_EQ(r.ops[0].kernels, 3);
  EXPECT_EQ(r.ops[0].dispatchers[0].quality.max_regret_us, 0.0);
  // Without wgmma, sm_80 loses 1 us on T > 15 against the best kernel that runs there: none.
  EXPECT_EQ(r.ops[0].dispatchers[1].quality.max_regret_us, 0.0);

  void* h = dlopen((dir_ / "libmixed.so").c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_TRUE(h) << dlerror();
  auto select_arch = reinterpret_cast<SelectArch>(dlsym(h, "dietcode_select_arch"));
  auto select =
      reinterpret_cast<int (*)(const char*, const int64_t*, int)>(dlsym(h, "dietcode_select"));
  json m = json::parse(reinterpret_cast<const char* (*)()>(dlsym(h, "dietcode_manifest"))());
  ASSERT_TRUE(select_arch);
  const json& op = m["ops"][0];
  ASSERT_EQ(op["dispatchers"].size(), 2u);
  EXPECT_EQ(op["dispatchers"][1]["archs"], json({"sm_80"}));
  auto key = [&](int id) {
    return id < 0 ? std::to_string(id) : op["kernels"][id]["key"].get<std::string>();
  };
  for (int64_t t : {1, 15, 16, 30}) {
    const bool large = t > 15;
    EXPECT_EQ(key(select_arch("a", 90, &t, 1)), large ? "dense_wgmma:" : "dense_tc:") << t;
    EXPECT_EQ(key(select("a", &t, 1)), key(select_arch("a", 90, &t, 1))) << t;
    // An A100 (8.0) or an RTX 3090 (8.6) runs the sm_80 CUBINs and never the wgmma kernel.
    for (int cc : {80, 86})
      EXPECT_EQ(key(select_arch("a", cc, &t, 1)), large ? "dense_tc:SPLITK=2" : "dense_tc:") << t;
    // A newer GPU than every target runs the portable kernels' PTX.
    EXPECT_EQ(key(select_arch("a", 100, &t, 1)), large ? "dense_tc:SPLITK=2" : "dense_tc:") << t;
  }
  // The wgmma kernel has its sm_90a CUBIN alone; an sm_75 GPU runs nothing of the pack.
  for (const json& k : op["kernels"])
    if (k["template"] == "dense_wgmma") EXPECT_EQ(k["resources"].size(), 1u);
  int64_t t = 20;
  EXPECT_EQ(select_arch("a", 75, &t, 1), -4);
  std::string error = reinterpret_cast<const char* (*)()>(dlsym(h, "dietcode_last_error"))();
  EXPECT_NE(error.find("has no binary for sm_75; the pack has sm_80, sm_90a and PTX compute_90"),
            std::string::npos)
      << error;
  EXPECT_EQ(select_arch("a", 9, &t, 1), -1);
  dlclose(h);
}

TEST_F(ArchDispatchTest, PortableArchsShareOneTreeAndNeverPickAnArchSpecificKernel) {
  FakeCompiler compiler("-DNEVER");
  options_.archs = {"sm_80", "sm_90"};
  PackBuildReport r = build_pack(w_, mixed_, defaults_, compiler, dir_ / "libmixed.so", options_);
  ASSERT_EQ(r.ops[0].dispatchers.size(), 1u);
  EXPECT_EQ(r.ops[0].dispatchers[0].archs, (std::vector<std::string>{"sm_80", "sm_90"}));
  EXPECT_EQ(r.ops[0].kernels, 2);
  json m;
  std::vector<int> k = picks(dir_ / "libmixed.so", &m);
  EXPECT_FALSE(m["ops"][0].contains("dispatchers"));
  for (const json& kernel : m["ops"][0]["kernels"]) EXPECT_EQ(kernel["template"], "dense_tc");
}

// Without --arch, a pack built on a Hopper GPU must keep the tuned wgmma kernels: sm_90a goes
// beside sm_90 (on an H200 a pack of sm_90 alone once dispatched bf16 ops to mma.sync kernels
// up to 2.4x slower than the wgmma ones measured). On an A100 nothing is added.
TEST_F(ArchDispatchTest, DefaultArchsAddSm90aOnAHopperHostWhenWgmmaKernelsWereTuned) {
  FakeCompiler compiler("-DNEVER");
  options_.archs.clear();
  options_.home_arch = "sm_90";
  PackBuildReport r = build_pack(w_, mixed_, defaults_, compiler, dir_ / "libmixed.so", options_);
  EXPECT_EQ(r.archs, (std::vector<std::string>{"sm_90", "sm_90a"}));
  ASSERT_EQ(r.ops[0].dispatchers.size(), 2u);
  EXPECT_EQ(r.ops[0].dispatchers[0].archs, std::vector<std::string>{"sm_90a"});
  EXPECT_EQ(r.ops[0].dispatchers[0].quality.max_regret_us, 0.0);
  void* h = dlopen((dir_ / "libmixed.so").c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_TRUE(h) << dlerror();
  auto select_arch = reinterpret_cast<SelectArch>(dlsym(h, "dietcode_select_arch"));
  json m = json::parse(reinterpret_cast<const char* (*)()>(dlsym(h, "dietcode_manifest"))());
  ASSERT_TRUE(select_arch);
  int64_t t = 30;
  EXPECT_EQ(m["ops"][0]["kernels"][select_arch("a", 90, &t, 1)]["key"], "dense_wgmma:");
  dlclose(h);

  options_.home_arch = "sm_80";
  r = build_pack(w_, mixed_, defaults_, compiler, dir_ / "libmixed80.so", options_);
  EXPECT_EQ(r.archs, std::vector<std::string>{"sm_80"});
  ASSERT_EQ(r.ops[0].dispatchers.size(), 1u);
  EXPECT_EQ(r.ops[0].kernels, 2);
}

}  // namespace
}  // namespace dietcode

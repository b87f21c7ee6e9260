// Which ISA levels a CPU pack gets by default: every level each tuned op has a measured kernel
// for. A level one op lacks is left out with a warning (a short tune may have timed only
// AVX-512 kernels for one op), while an --arch that asks for it is still refused. And which
// kernels the x86-64-v4 level serves: an AVX2 kernel only for a gain beyond --portable-margin,
// and what `tune` weighs its runoff's finalists by for that.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "pack/pack_target.h"

namespace {

namespace fs = std::filesystem;

struct BuildRun {
  int code = -1;
  std::string err;
};

class CpuPackLevels : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "cpu-pack-levels-XXXXXX").string();
    dir_ = ::mkdtemp(pattern.data());
    std::ofstream(dir_ / "w.json") << R"({"name": "levels", "shape_vars": {"T": {"min": 1, "max": 2}},
      "ops": [{"name": "wide", "op": "dense", "dtype": "float32", "M": "T", "N": 64, "K": 32},
              {"name": "narrow", "op": "dense", "dtype": "float32", "M": "T", "N": 16, "K": 32}]})";
    // "wide" was timed with an AVX-512 kernel only, "narrow" with an AVX2 one only.
    std::ofstream log(dir_ / "w.jsonl");
    for (int t = 1; t <= 2; ++t) {
      log << record("wide", t, 64, "x86_avx512_f32", "x86-64-v4") << "\n";
      log << record("narrow", t, 16, "x86_avx2_f32", "x86-64-v4") << "\n";
    }
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  static std::string record(const std::string& op, int t, int n, const std::string& tmpl,
                            const std::string& arch, double latency_us = 0) {
    std::ostringstream r;
    r << R"({"arch":")" << arch << R"(","device":"test","gemm":{"K":32,"M":)" << t << R"(,"N":)"
      << n << R"(,"batch":1},"kind":"measurement","l2":"flush","latency_us":)"
      << (latency_us > 0 ? latency_us : 10 + t)
      << R"(,"mk":{"params":{"KC":256,"LOOP_ORDER":0,"MC":72,"MR":6,"NC":3072,"NR":)"
      << (tmpl == "x86_avx512_f32" ? 32 : 16)
      << R"(,"PACK_A":1,"PREFETCH":0,"THREADS_M":0,"UNROLL":4},"template":")" << tmpl
      << R"("},"op":")" << op << R"(","shape":{"T":)" << t
      << R"(},"simulated":false,"status":"ok","timestamp":"2026-11-24T00:00:00.000Z",)"
      << R"("tool_version":"0.1.0","workload":"levels"})";
    return r.str();
  }

  BuildRun build(const std::string& extra, const std::string& log = "w.jsonl") {
    return dietcode("build w.json --log " + log + " -o libw.so " + extra + " >/dev/null");
  }

  // The command's exit code and stderr; its stdout goes where `args` sends it.
  BuildRun dietcode(const std::string& args) {
    const std::string err = (dir_ / "stderr").string();
    const std::string cmd = "cd '" + dir_.string() + "' && DIETCODE_CACHE_DIR='" +
                            (dir_ / "cache").string() + "' '" + DIETCODE_CLI_PATH + "' " + args +
                            " 2>'" + err + "'";
    BuildRun r;
    const int status = std::system(cmd.c_str());
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::stringstream e;
    e << std::ifstream(err).rdbuf();
    r.err = e.str();
    return r;
  }

  fs::path dir_;
};

TEST_F(CpuPackLevels, ADefaultLevelAnOpHasNoKernelForIsLeftOutWithAWarning) {
  BuildRun r = build("");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("warning: x86-64-v3 left out of the pack: op wide has no measured kernel "
                       "that runs there"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(fs::exists(dir_ / "libw.so"));
}

TEST_F(CpuPackLevels, AnArchAskedForIsStillRefusedWhenAnOpCannotRunThere) {
  BuildRun r = build("--arch x86-64-v3,x86-64-v4");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("op wide: no measured kernel runs on x86-64-v3"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "libw.so"));
}

// One op timed with an AVX2 and an AVX-512 kernel, the AVX2 one `faster` times as fast on
// both instances; then the template the x86-64-v4 dispatcher serves T=1 with.
class CpuPackPortableMargin : public CpuPackLevels {
 protected:
  void write_log(double faster) {
    std::ofstream log(dir_ / "m.jsonl");
    for (int t = 1; t <= 2; ++t) {
      log << record("wide", t, 64, "x86_avx512_f32", "x86-64-v4", 100) << "\n";
      log << record("wide", t, 64, "x86_avx2_f32", "x86-64-v4", 100 / faster) << "\n";
      log << record("narrow", t, 16, "x86_avx2_f32", "x86-64-v4") << "\n";
    }
  }
  std::string served_on_v4(const std::string& extra) {
    BuildRun b = build("--arch x86-64-v3,x86-64-v4 " + extra, "m.jsonl");
    EXPECT_EQ(b.code, 0) << b.err;
    BuildRun i = dietcode("inspect libw.so --shape T=1 > inspect.txt");
    EXPECT_EQ(i.code, 0) << i.err;
    BuildRun whole = dietcode("inspect libw.so > inspect-pack.txt");  // the manifest's lines
    EXPECT_EQ(whole.code, 0) << whole.err;
    std::stringstream all;
    all << std::ifstream(dir_ / "inspect-pack.txt").rdbuf();
    inspected_ = all.str();
    std::ifstream text(dir_ / "inspect.txt");
    bool in_wide = false;
    for (std::string line; std::getline(text, line);) {
      if (line.rfind("op ", 0) == 0) in_wide = line.find("op wide") == 0;
      const size_t at = line.find("on x86-64-v4: kernel ");
      if (in_wide && at != std::string::npos)
        return line.find("x86_avx2_f32") != std::string::npos ? "avx2" : "avx512";
    }
    ADD_FAILURE() << "no x86-64-v4 line for op wide in inspect's output";
    return "";
  }
  std::string inspected_;  // inspect's output for the last pack, without --shape
};

TEST_F(CpuPackPortableMargin, AnAvx2KernelServesAvx512CpusOnlyForAClearGain) {
  write_log(1.05);
  EXPECT_EQ(served_on_v4(""), "avx512");  // 5% faster: within the CPU's 10%
  EXPECT_NE(inspected_.find("(x86-64-v4) only where measured more than 10% faster"),
            std::string::npos)
      << inspected_;
  EXPECT_EQ(served_on_v4("--portable-margin 0"), "avx2");
  EXPECT_EQ(served_on_v4("--portable-margin 4"), "avx2");
  write_log(1.25);
  EXPECT_EQ(served_on_v4(""), "avx2");  // 25% faster: beyond it
  EXPECT_EQ(served_on_v4("--portable-margin 30"), "avx512");
}

// A pack of one level has no dispatcher choosing between both kinds: it says nothing of a
// margin, in build's report or in the manifest; a pack of both levels says it in both.
TEST_F(CpuPackPortableMargin, OnlyAPackWithBothKindsToChooseFromSpeaksOfTheMargin) {
  write_log(1.05);
  for (const std::string arch : {"x86-64-v3", "x86-64-v3,x86-64-v4"}) {
    BuildRun b = dietcode("build w.json --log m.jsonl -o libw.so --arch " + arch + " > build.txt");
    ASSERT_EQ(b.code, 0) << b.err;
    BuildRun i = dietcode("inspect libw.so > inspect-pack.txt");
    ASSERT_EQ(i.code, 0) << i.err;
    std::stringstream built, inspected;
    built << std::ifstream(dir_ / "build.txt").rdbuf();
    inspected << std::ifstream(dir_ / "inspect-pack.txt").rdbuf();
    const bool both = arch.find("v4") != std::string::npos;
    EXPECT_EQ(built.str().find("(--portable-margin)") != std::string::npos, both) << built.str();
    EXPECT_EQ(inspected.str().find("only where measured more than 10% faster") != std::string::npos,
              both)
        << inspected.str();
  }
}

TEST_F(CpuPackPortableMargin, AMarginOutsideZeroToAHundredIsBadInput) {
  write_log(1.05);
  for (const char* bad : {"-1", "100", "nan"}) {
    BuildRun b = build(std::string("--portable-margin ") + bad, "m.jsonl");
    EXPECT_EQ(b.code, 1) << bad << ": " << b.err;
    EXPECT_NE(b.err.find("--portable-margin"), std::string::npos) << b.err;
    EXPECT_FALSE(fs::exists(dir_ / "libw.so"));
  }
}

}  // namespace

namespace dietcode {
namespace {

// What `tune` chooses the runoff's finalists by (JointSearchOptions::serving_factor): an AVX2
// kernel counts the CPU's margin slower than timed, an AVX-512 one as timed; a GPU pack's
// margin is 0, so its kernels count as timed, wgmma's bound ones too.
TEST(CpuPackServingFactor, AnAvx2KernelCountsTheMarginSlowerThanTimed) {
  const PackTarget& cpu = pack_target(Target::kCpu);
  EXPECT_DOUBLE_EQ(cpu.serving_factor(MicroKernel{"x86_avx2_f32", {}}), 1.10);
  EXPECT_DOUBLE_EQ(cpu.serving_factor(MicroKernel{"x86_avx2_wbcast_f32", {}}), 1.10);
  EXPECT_DOUBLE_EQ(cpu.serving_factor(MicroKernel{"x86_avx512_f32", {}}), 1.0);
  EXPECT_DOUBLE_EQ(cpu.serving_factor(MicroKernel{"x86_avx512_dot_f32", {}}), 1.0);
  const PackTarget& gpu = pack_target(Target::kCuda);
  EXPECT_DOUBLE_EQ(gpu.serving_factor(MicroKernel{"dense_f32", {}}), 1.0);
  EXPECT_DOUBLE_EQ(gpu.serving_factor(MicroKernel{"dense_wgmma", {}}), 1.0);
}

}  // namespace
}  // namespace dietcode

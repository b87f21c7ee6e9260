// `dietcode bench` on CPU packs, end to end through the CLI: a stand-in CPU pack (a TEST DOUBLE
// compiled here from the C source below: the pack ABI with "target": "cpu", a plain loop nest
// for dense + bias + GELU) is timed against oneDNN and OpenBLAS, and the JSON report must have
// a row per instance with the pack's and each baseline's time and an "ok" check; a stand-in
// that computes one element wrong must fail the check (exit 1). Tiny shapes and few repeats.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "bench/onednn_loader.h"
#include "bench/openblas_loader.h"
#include "common/error.h"

namespace dietcode {
namespace {

const char kStandInPack[] = R"(
#include <math.h>
#include <stdint.h>
#include <string.h>
#define API __attribute__((visibility("default")))
static const char kManifest[] =
    "{\"format\": \"dietcode-pack\", \"name\": \"standin\", \"tool_version\": \"0.1.0\", "
    "\"target\": \"cpu\", \"archs\": [\"x86-64-v3\"], "
    "\"shape_vars\": [{\"name\": \"T\", \"min\": 1, \"max\": 3, \"count\": 3}], "
    "\"ops\": [{\"name\": \"fc1\", \"function\": \"standin_fc1\", \"op\": \"dense\", "
    "\"dtype\": \"float32\", \"epilogue\": \"bias_gelu\", \"weight\": 1, \"vars\": [\"T\"], "
    "\"args\": [\"X\", \"W\", \"bias\", \"Y\"], "
    "\"dims\": {\"M\": \"4*T\", \"N\": 24, \"K\": 40}, \"kernels\": []}]}";
static int threads = 1;
static __thread const char* last_error = "";
API int dietcode_abi_version(void) { return 3; }
API const char* dietcode_manifest(void) { return kManifest; }
API const char* dietcode_last_error(void) { return last_error; }
API int dietcode_select(const char* op, const int64_t* v, int n) { return 0; }
API int dietcode_set_num_threads(int n) { if (n < 0) return 1; threads = n ? n : 1; return 0; }
API int dietcode_num_threads(void) { return threads; }
API int dietcode_launch(const char* op, void* const* args, int n_args, const int64_t* v,
                        int n_values, void* stream) {
  if (strcmp(op, "fc1") != 0) { last_error = "unknown op"; return 2; }
  if (n_args != 4 || n_values != 1 || v[0] < 1 || stream) { last_error = "bad arguments"; return 1; }
  const float *x = args[0], *w = args[1], *b = args[2];
  float* y = args[3];
  const int64_t M = 4 * v[0], N = 24, K = 40;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float acc = 0;
      for (int64_t k = 0; k < K; ++k) acc += x[i * K + k] * w[j * K + k];
      acc += b[j] + (WRONG && i == 1 && j == 2 ? 1.0f : 0.0f);
      y[i * N + j] =
          0.5f * acc * (1.0f + tanhf(0.7978845608f * (acc + 0.044715f * acc * acc * acc)));
    }
  return 0;
}
)";

struct CliRun {
  int exit_code = -1;
  std::string out, err;
};

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Runs `COMMAND` through the shell, stdout and stderr kept apart.
CliRun run_shell(const std::string& command, const std::string& dir) {
  const std::string err_path = dir + "/stderr.txt";
  CliRun run;
  FILE* pipe = popen((command + " 2>'" + err_path + "'").c_str(), "r");
  if (!pipe) return run;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) run.out.append(buffer, n);
  const int status = pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.err = read_all(err_path);
  return run;
}

bool loads(const char* which) {
  try {
    std::string(which) == "onednn" ? (void)onednn_api() : (void)openblas_api();
    return true;
  } catch (const EnvironmentError&) {
    return false;
  }
}

class CliBenchCpu : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (std::filesystem::temp_directory_path() /
            ("dietcode_bench_cpu_" + std::to_string(getpid())))
               .string();
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ + "/standin.c") << kStandInPack;
    for (int wrong : {0, 1}) {
      const CliRun cc =
          run_shell("cc -O1 -shared -fPIC -fvisibility=hidden -DWRONG=" + std::to_string(wrong) +
                        " '" + dir_ + "/standin.c' -o '" + pack(wrong) + "' -lm",
                    dir_);
      ASSERT_EQ(cc.exit_code, 0) << cc.err;
    }
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string pack(bool wrong = false) const {
    return dir_ + (wrong ? "/libwrong.so" : "/libstandin.so");
  }
  CliRun bench(const std::string& args, const std::string& env = "") const {
    return run_shell(env + " '" DIETCODE_CLI_PATH "' bench " + args, dir_);
  }

  std::string dir_;
};

TEST_F(CliBenchCpu, JsonRowsHavePackAndBaselineTimesAndAgree) {
  const CliRun run = bench("'" + pack() + "' --repeats 3 --warmup 1 --threads 1 --json - -q");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const nlohmann::json j = nlohmann::json::parse(run.out);
  EXPECT_EQ(j["target"], "cpu");
  EXPECT_EQ(j["threads"], 1);
  EXPECT_EQ(j["failures"], 0);
  ASSERT_EQ(j["rows"].size(), 3u);
  std::vector<std::string> want_baselines;
  for (const char* name : {"onednn", "openblas"})
    if (loads(name)) want_baselines.push_back(name);
  for (const auto& row : j["rows"]) {
    EXPECT_GT(row["pack_us"].get<double>(), 0) << row.dump();
    EXPECT_EQ(row["pack_runs_us"].size(), 3u) << row.dump();  // one per round
    EXPECT_EQ(row["check"],
              want_baselines.empty() ? "unchecked (no baseline; all outputs written)" : "ok");
    ASSERT_EQ(row.value("baselines", nlohmann::json::array()).size(), want_baselines.size());
    for (size_t b = 0; b < want_baselines.size(); ++b) {
      EXPECT_EQ(row["baselines"][b]["name"], want_baselines[b]);
      EXPECT_GT(row["baselines"][b]["us"].get<double>(), 0) << row.dump();
      EXPECT_EQ(row["baselines"][b]["check"], "ok");
      EXPECT_EQ(row["baselines"][b]["runs_us"].size(), 3u) << row.dump();
    }
  }
  // Each baseline's geomean comes with its interval over the rounds.
  for (const auto& b : j.value("baselines", nlohmann::json::array())) {
    ASSERT_TRUE(b["geomean_interval"].is_object()) << b.dump();
    EXPECT_LE(b["geomean_interval"]["low"].get<double>(),
              b["geomean_interval"]["high"].get<double>());
    EXPECT_TRUE(b["worst"]["interval"].is_object()) << b.dump();
  }
  // The peak the probe measured, and what it bounds: every baseline's ceiling at it, which
  // no pack can exceed, so it is at least the pack's own speedup.
  bool noted_peak = false;
  for (const auto& note : j["notes"])
    noted_peak |= note.get<std::string>().find("fp32 FMA peak") != std::string::npos;
  EXPECT_TRUE(noted_peak) << j["notes"].dump();
  for (const auto& b : j.value("baselines", nlohmann::json::array()))
    EXPECT_GE(b["ceiling_speedup"].get<double>(), b["geomean_speedup"].get<double>()) << b.dump();
  // Which baseline fused what, per op.
  if (loads("onednn"))
    EXPECT_NE(j["baseline_per_op"]["fc1"].get<std::string>().find("eltwise_gelu_tanh post-op"),
              std::string::npos);
  if (loads("openblas"))
    EXPECT_NE(j["baseline_per_op"]["fc1"].get<std::string>().find("separate pass"),
              std::string::npos);
}

TEST_F(CliBenchCpu, AWrongPackFailsTheCheck) {
  const CliRun run = bench("'" + pack(true) + "' --repeats 1 --warmup 0 --threads 1 --l2 warm");
  if (!loads("onednn") && !loads("openblas")) GTEST_SKIP() << "no CPU baseline to check against";
  EXPECT_EQ(run.exit_code, 1) << run.err;
  EXPECT_NE(run.out.find("mismatch"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("FAILED: 3 instances disagree"), std::string::npos) << run.out;
}

TEST_F(CliBenchCpu, AMissingLibraryIsANoteNotACrash) {
  const CliRun run = bench("'" + pack() + "' --repeats 1 --warmup 0 --threads 1 --csv -",
                           "DIETCODE_ONEDNN_LIBRARY=/nonexistent/libdnnl.so.2");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.err.find("note: onednn left out: no oneDNN: /nonexistent/libdnnl.so.2"),
            std::string::npos)
      << run.err;
  EXPECT_EQ(run.out.find("onednn_us"), std::string::npos) << run.out;
}

TEST_F(CliBenchCpu, GpuOptionsAreRefusedWithOneLine) {
  CliRun run = bench("'" + pack() + "' --baseline cublas");
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_EQ(run.err,
            "--baseline cublas: not a baseline for a CPU pack (expected auto, "
            "onednn, openblas or none)\n");
  run = bench("'" + pack() + "' --tf32");
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.err.find("no TF32"), std::string::npos) << run.err;
}

}  // namespace
}  // namespace dietcode

// The CPU target end to end, for real: a tiny workload is tuned on this CPU (`tune --target
// cpu`, two trials), built into a CPU kernel pack (`build`), and benched (`bench --json`)
// against oneDNN and OpenBLAS. Every row must have the pack's time, each loaded baseline's time,
// and an "ok" check: the pack's output agrees with each baseline's. Tiny shapes, few repeats.
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
#include "x86/host_cpu.h"

namespace dietcode {
namespace {

namespace fs = std::filesystem;

const char kWorkload[] = R"({
  "name": "bench_cpu_tiny",
  "shape_vars": { "T": { "values": [1, 3] } },
  "ops": [
    { "name": "fc", "op": "dense", "dtype": "float32", "M": "4*T", "N": 48, "K": 32,
      "epilogue": "bias_gelu" },
    { "name": "up", "op": "dense", "dtype": "float32", "weight_layout": "KN", "M": "4*T",
      "N": 40, "K": 24, "epilogue": "bias" }
  ]
})";

struct CliRun {
  int exit_code = -1;
  std::string out, err;
};

// Runs the dietcode CLI with `args` in `dir` through the shell, stdout and stderr kept apart.
CliRun dietcode(const std::string& args, const fs::path& dir) {
  const fs::path err_path = dir / "stderr.txt";
  const std::string command = "cd '" + dir.string() + "' && DIETCODE_CACHE_DIR='" +
                              (dir / "cache").string() + "' '" DIETCODE_CLI_PATH "' " + args +
                              " 2>'" + err_path.string() + "'";
  CliRun run;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return run;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) run.out.append(buffer, n);
  const int status = pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(err_path);
  run.err.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return run;
}

bool loads(const std::string& which) {
  try {
    which == "onednn" ? (void)onednn_api() : (void)openblas_api();
    return true;
  } catch (const EnvironmentError&) {
    return false;
  }
}

TEST(CliBenchCpuPack, TuneBuildBenchAgreesWithEveryBaseline) {
  if (detect_host_cpu().isa_level_number < 3)
    GTEST_SKIP() << "this CPU is below x86-64-v3, which every CPU template needs";
  const fs::path dir =
      fs::temp_directory_path() / ("dietcode_bench_cpu_pack_" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "w.json") << kWorkload;

  CliRun r =
      dietcode("tune w.json --target cpu --threads 2 --trials 2 --seed 1 -o w.jsonl -q", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = dietcode("build w.json --log w.jsonl -o libtiny.so -q", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = dietcode("bench ./libtiny.so --threads 2 --repeats 3 --warmup 1 --json - -q", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;

  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["target"], "cpu");
  EXPECT_EQ(j["threads"], 2);
  EXPECT_EQ(j["failures"], 0);
  std::vector<std::string> baselines;
  for (const char* name : {"onednn", "openblas"})
    if (loads(name)) baselines.push_back(name);
  ASSERT_EQ(j["rows"].size(), 4u);  // fc and up (W stored [K,N]), each at T=1 and T=3
  for (const auto& row : j["rows"]) {
    EXPECT_GT(row["pack_us"].get<double>(), 0) << row.dump();
    const nlohmann::json timings = row.value("baselines", nlohmann::json::array());
    ASSERT_EQ(timings.size(), baselines.size()) << row.dump();
    for (size_t b = 0; b < baselines.size(); ++b) {
      EXPECT_EQ(timings[b]["name"], baselines[b]);
      EXPECT_GT(timings[b]["us"].get<double>(), 0) << row.dump();
      EXPECT_EQ(timings[b]["check"], "ok") << row.dump();
    }
    EXPECT_EQ(row["check"],
              baselines.empty() ? "unchecked (no baseline; all outputs written)" : "ok");
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dietcode

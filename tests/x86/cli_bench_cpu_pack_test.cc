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

  // Weights held constant: the pack packs them once, oneDNN reorders them into its own layout
  // once (W [N,K] and [K,N] alike); every result still agrees, and the report says so.
  r = dietcode("bench ./libtiny.so --threads 2 --repeats 2 --warmup 1 --constant-weights --json - -q",
               dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json c = nlohmann::json::parse(r.out);
  EXPECT_EQ(c["failures"], 0);
  EXPECT_NE(c["notes"].dump().find("constant weights: dense and conv2d weights declared constant"),
            std::string::npos)
      << c["notes"].dump();
  for (const auto& row : c["rows"])
    if (!baselines.empty()) EXPECT_EQ(row["check"], "ok") << row.dump();
  fs::remove_all(dir);
}

// `--arch x86-64-v3` end to end: tune only AVX2 kernels, build their pack, bench it with every
// contender held to AVX2 (on an AVX-512 host this is what an AVX2 server would run). The report
// says what each contender ran; a pack without kernels at or below the level is refused.
TEST(CliBenchCpuPack, ArchCapHoldsThePackAndBothBaselinesToAvx2) {
  const HostCpu cpu = detect_host_cpu();
  if (cpu.isa_level_number < 3)
    GTEST_SKIP() << "this CPU is below x86-64-v3, which every CPU template needs";
  const fs::path dir =
      fs::temp_directory_path() / ("dietcode_bench_cpu_arch_" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "w.json") << kWorkload;

  CliRun r = dietcode(
      "tune w.json --target cpu --arch x86-64-v3 --threads 2 --trials 2 --seed 1 -o w.jsonl -q",
      dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream log(dir / "w.jsonl");
  int records = 0;
  for (std::string line; std::getline(log, line);) {
    const nlohmann::json j = nlohmann::json::parse(line);
    if (j.value("kind", "") != "measurement") continue;
    ++records;
    EXPECT_EQ(j["mk"]["template"].get<std::string>().rfind("x86_avx2", 0), 0u) << line;
    EXPECT_EQ(j["arch"], cpu.isa_level) << "records name the CPU measured on: " << line;
  }
  EXPECT_GT(records, 0);
  r = dietcode("build w.json --log w.jsonl -o libtiny.so -q", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = dietcode(
      "bench ./libtiny.so --arch x86-64-v3 --threads 2 --repeats 3 --warmup 1 --json - -q", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["failures"], 0);
  EXPECT_NE(j["device"].get<std::string>().find("every contender capped at x86-64-v3"),
            std::string::npos)
      << j["device"];
  std::string isa_note;
  for (const auto& note : j["notes"])
    if (note.get<std::string>().rfind("instruction sets:", 0) == 0) isa_note = note;
  EXPECT_NE(isa_note.find("the pack's x86-64-v3 kernels"), std::string::npos) << isa_note;
  EXPECT_NE(isa_note.find("capped at x86-64-v3 by --arch"), std::string::npos) << isa_note;
  if (loads("onednn") && onednn_api().dnnl_get_effective_cpu_isa)
    EXPECT_NE(isa_note.find("onednn avx2"), std::string::npos) << isa_note;
  // Debian's OpenBLAS is a DYNAMIC_ARCH build, which takes OPENBLAS_CORETYPE.
  if (loads("openblas") && openblas_api().config.find("DYNAMIC_ARCH") != std::string::npos)
    EXPECT_NE(isa_note.find("openblas Haswell kernels"), std::string::npos) << isa_note;

  if (cpu.isa_level_number >= 4) {
    // A pack of AVX-512 kernels alone has nothing to run under an AVX2 cap: exit 2, one line.
    r = dietcode("build w.json --log w.jsonl --arch x86-64-v4 -o libv4.so -q", dir);
    if (r.exit_code == 0) {  // the tiny log may hold no AVX-512 kernel to build from
      r = dietcode("bench ./libv4.so --arch x86-64-v3 --threads 2 --repeats 1 -q", dir);
      EXPECT_EQ(r.exit_code, 2) << r.err;
      EXPECT_NE(r.err.find("has kernels for x86-64-v4 only"), std::string::npos) << r.err;
    }
  } else {
    r = dietcode("bench ./libtiny.so --arch x86-64-v4 --repeats 1 -q", dir);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("cannot run x86-64-v4 code"), std::string::npos) << r.err;
  }
  r = dietcode("bench ./libtiny.so --arch x86-64-v9 --repeats 1 -q", dir);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("--arch: unknown ISA level \"x86-64-v9\""), std::string::npos) << r.err;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dietcode

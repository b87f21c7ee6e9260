// `dietcode devices` end to end: against this machine's real driver (or its absence), and
// against the stand-in libcuda.so.1 from tests/data/fake_driver, a TEST DOUBLE describing an
// H100 PCIe, so the listing itself is checked on machines without a GPU.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "cuda/driver.h"

namespace dietcode {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

struct CliRun {
  int exit_code = -1;
  std::string out, err;
};

std::string read_file(const std::string& path) {
  std::string text;
  if (FILE* f = std::fopen(path.c_str(), "rb")) {
    char buffer[4096];
    size_t n;
    while ((n = std::fread(buffer, 1, sizeof(buffer), f)) > 0) text.append(buffer, n);
    std::fclose(f);
  }
  return text;
}

// Runs `ENV dietcode ARGS` through the shell, stdout and stderr kept apart.
CliRun run_cli(const std::string& args, const std::string& env = "") {
  const std::string err_path = (std::filesystem::temp_directory_path() /
                                ("dietcode_devices_test_" + std::to_string(getpid())))
                                   .string();
  const std::string command = env + " '" DIETCODE_CLI_PATH "' " + args + " 2>'" + err_path + "'";
  CliRun run;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return run;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) run.out.append(buffer, n);
  int status = pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.err = read_file(err_path);
  std::remove(err_path.c_str());
  return run;
}

// Puts the fake driver first on the library path (keeping the rest: an offline bundle's
// libraries may be found through it).
std::string with_fake_driver(const std::string& extra = "") {
  const std::string dir = std::filesystem::path(DIETCODE_FAKE_CUDA).parent_path().string();
  return "env " + extra + " LD_LIBRARY_PATH='" + dir + "'${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}";
}

TEST(CliDevices, ReportsThisMachine) {
  std::string why;
  if (driver_or_null(&why)) {
    CliRun run = run_cli("devices --json");
    ASSERT_EQ(run.exit_code, 0) << run.err;
    json out = json::parse(run.out);
    ASSERT_GE(out["devices"].size(), 1u);
    EXPECT_GT(out["devices"][0]["sms"].get<int>(), 0);
    EXPECT_GT(out["devices"][0]["smem_per_block_optin"].get<int>(), 0);
    return;
  }
  CliRun run = run_cli("devices");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(run.err, why + "\n");  // exactly one line: the reason
  EXPECT_THAT(run.out, HasSubstr("--gpu h100     NVIDIA H100 80GB HBM3 (sm_90, 132 SMs)"));
  EXPECT_THAT(run.out, HasSubstr("--gpu t4       Tesla T4 (sm_75, 40 SMs)"));
}

// The host CPU is listed with or without a GPU, its peak measured (not a datasheet figure).
TEST(CliDevices, ListsTheHostCpuWithItsMeasuredPeak) {
  CliRun run = run_cli("devices --json", with_fake_driver("FAKE_CUDA_INIT_RESULT=100"));
  json cpu = json::parse(run.out)["cpu"];
  EXPECT_FALSE(cpu["model_name"].get<std::string>().empty());
  EXPECT_THAT(cpu["isa_level"].get<std::string>(), testing::StartsWith("x86-64-v"));
  EXPECT_GE(cpu["logical_cores"].get<int>(), 1);
  const double one = cpu["fp32_peak_gflops"]["one_thread"].get<double>();
  const double all = cpu["fp32_peak_gflops"]["all_threads"].get<double>();
  EXPECT_GT(one, 1.0);  // any x86-64 core does more than a GFLOP/s
  EXPECT_GE(all, one * 0.5);
  EXPECT_EQ(cpu.contains("fp32_peak_gflops") && cpu["avx512f"].get<bool>(),
            cpu["fp32_peak_gflops"].contains("one_thread_256bit"));

  run = run_cli("devices", with_fake_driver());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("host CPU: "));
  EXPECT_THAT(run.out, HasSubstr("  fp32 FMA peak       "));
}

// OMP_PROC_BIND makes libgomp (loaded through XGBoost) bind the initial thread to one place
// before main() runs: the CPUs counted, and every default thread count, must still be all of
// them. They were 1 on a 2-core machine, so `bench` timed every contender on one thread.
TEST(CliDevices, CountsEveryCpuWhenOpenMpBindsTheInitialThread) {
  const auto logical_cores = [](const std::string& env) {
    CliRun run = run_cli("devices --json", with_fake_driver("FAKE_CUDA_INIT_RESULT=100") + env);
    return json::parse(run.out)["cpu"]["logical_cores"].get<int>();
  };
  const int free = logical_cores("");
  EXPECT_EQ(logical_cores(" OMP_PROC_BIND=close OMP_PLACES=cores"), free);
  EXPECT_EQ(logical_cores(" OMP_PROC_BIND=true"), free);
}

TEST(CliDevices, ListsTheFakeGpuAsJson) {
  CliRun run = run_cli("devices --json", with_fake_driver());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.err, "");
  json out = json::parse(run.out);
  EXPECT_EQ(out["driver_cuda_version"], "13.0");
  ASSERT_EQ(out["devices"].size(), 1u);
  const json& d = out["devices"][0];
  EXPECT_EQ(d["name"], "Test double of an NVIDIA H100 PCIe");
  EXPECT_EQ(d["ordinal"], 0);
  EXPECT_EQ(d["arch"], "sm_90");
  EXPECT_EQ(d["sms"], 114);
  EXPECT_EQ(d["smem_per_block"], 49152);
  EXPECT_EQ(d["smem_per_block_optin"], 232448);
  EXPECT_EQ(d["smem_per_sm"], 233472);
  EXPECT_EQ(d["regs_per_sm"], 65536);
  EXPECT_EQ(d["max_threads_per_sm"], 2048);
  EXPECT_EQ(d["l2_bytes"], 52428800);
  EXPECT_EQ(d["total_memory_bytes"], 80ll << 30);
  EXPECT_DOUBLE_EQ(d["clock_ghz"].get<double>(), 1.755);
  // Peak figures: the h100 config's, scaled to 114 SMs at 1.755 GHz; bandwidth from the
  // memory clock and bus width the driver reports.
  EXPECT_NEAR(d["fp16_tensor_tflops"].get<double>(), 757.4, 0.1);
  EXPECT_NEAR(d["mem_bandwidth_gbs"].get<double>(), 2039.0, 0.1);
  EXPECT_EQ(d["peak_figures_from"], "configs/gpus/h100.json, scaled to this board's SMs and clock");
}

TEST(CliDevices, ListsTheFakeGpuAsText) {
  CliRun run = run_cli("devices", with_fake_driver());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("CUDA driver 13.0, 1 GPU\n"));
  EXPECT_THAT(run.out, HasSubstr("device 0: Test double of an NVIDIA H100 PCIe (sm_90)\n"));
  EXPECT_THAT(run.out, HasSubstr("  SMs                 114\n"));
  EXPECT_THAT(run.out, HasSubstr("  memory              80 GiB\n"));
  EXPECT_THAT(
      run.out,
      HasSubstr("  shared memory       48 KiB per block, 227 KiB with opt-in, 228 KiB per SM\n"));
  EXPECT_THAT(run.out, HasSubstr("  L2 cache            50 MiB\n"));
}

TEST(CliDevices, NoDeviceExitsTwoWithTheReasonAndTheTargets) {
  CliRun run = run_cli("devices", with_fake_driver("FAKE_CUDA_INIT_RESULT=100"));
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(run.err, "no CUDA device: cuInit failed: CUDA_ERROR_NO_DEVICE\n");
  EXPECT_THAT(run.out,
              HasSubstr("these shipped GPU configs can be targeted instead (--gpu ID):\n"));
  EXPECT_THAT(run.out, HasSubstr("--gpu h100     NVIDIA H100 80GB HBM3 (sm_90, 132 SMs)\n"));

  run = run_cli("devices --json", with_fake_driver("FAKE_CUDA_INIT_RESULT=100"));
  EXPECT_EQ(run.exit_code, 2);
  json out = json::parse(run.out);
  EXPECT_EQ(out["devices"], json::array());
  EXPECT_EQ(out["error"], "no CUDA device: cuInit failed: CUDA_ERROR_NO_DEVICE");
  bool lists_h100 = false;
  for (const json& c : out["gpu_configs"]) lists_h100 |= c["id"] == "h100" && c["arch"] == "sm_90";
  EXPECT_TRUE(lists_h100);

  run = run_cli("devices -q", with_fake_driver("FAKE_CUDA_INIT_RESULT=100"));
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(run.out, "");
}

TEST(CliDevices, HelpShowsAnExample) {
  CliRun run = run_cli("devices --help");
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_THAT(run.out, HasSubstr("Example:\n  dietcode devices\n  dietcode devices --json\n"));
}

}  // namespace
}  // namespace dietcode

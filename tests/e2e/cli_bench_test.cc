// `dietcode bench` end to end without a GPU: the user's inputs are checked first (exit 1 with
// the exact message on any machine), then the missing GPU is exit 2 with one line. Packs are
// the stand-ins from tests/data/bench_pack and the driver the stand-in libcuda.so.1 from
// tests/data/fake_driver: TEST DOUBLES, so these results are the same on every machine.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "cuda/driver.h"

namespace dietcode {
namespace {

struct CliRun {
  int exit_code = -1;
  std::string out, err;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Runs `ENV dietcode ARGS` through the shell, stdout and stderr kept apart.
CliRun run_cli(const std::string& args, const std::string& env = "") {
  const std::string err_path =
      (std::filesystem::temp_directory_path() / ("dietcode_bench_test_" + std::to_string(getpid())))
          .string();
  const std::string command = env + " '" DIETCODE_CLI_PATH "' " + args + " 2>'" + err_path + "'";
  CliRun run;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return run;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) run.out.append(buffer, n);
  const int status = pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.err = read_file(err_path);
  std::remove(err_path.c_str());
  return run;
}

// The stand-in driver first on the library path; `extra` sets its knobs.
std::string with_fake_driver(const std::string& extra = "") {
  const std::string dir = std::filesystem::path(DIETCODE_FAKE_CUDA).parent_path().string();
  return "env " + extra + " LD_LIBRARY_PATH='" + dir + "'${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}";
}

// A driver that finds no GPU (cuInit: CUDA_ERROR_NO_DEVICE), whatever this machine has.
std::string no_gpu() { return with_fake_driver("FAKE_CUDA_INIT_RESULT=100"); }

const std::string kPackDir = DIETCODE_TEST_PACK_DIR;
const std::string kPack = kPackDir + "/libtest_pack_dims.so";
const std::string kNoDimsPack = kPackDir + "/libtest_pack_no_dims.so";

TEST(CliBench, NoGpuIsExit2WithOneLine) {
  const CliRun run = run_cli("bench '" + kPack + "' --baseline cublaslt --csv x.csv", no_gpu());
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(run.err,
            "dietcode bench: no CUDA GPU: no CUDA device: cuInit failed: CUDA_ERROR_NO_DEVICE\n");
  EXPECT_EQ(run.out, "");
  EXPECT_FALSE(std::filesystem::exists("x.csv"));
}

// Every --baseline value passes the input checks; the GPU is what stops them here.
TEST(CliBench, EveryBaselineOptionIsAccepted) {
  for (const char* option : {"auto", "cublas", "cublaslt", "cudnn", "none"}) {
    SCOPED_TRACE(option);
    const CliRun run = run_cli("bench '" + kPack + "' --baseline " + option, no_gpu());
    EXPECT_EQ(run.exit_code, 2);
    EXPECT_EQ(run.err,
              "dietcode bench: no CUDA GPU: no CUDA device: cuInit failed: CUDA_ERROR_NO_DEVICE\n");
  }
}

TEST(CliBench, ThisMachineWithoutADriver) {
  std::string why;
  if (driver_or_null(&why)) GTEST_SKIP() << "this machine has a CUDA driver; tests/gpu covers it";
  const CliRun run = run_cli("bench '" + kPack + "'");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(run.err, "dietcode bench: no CUDA GPU: " + why + "\n");
}

TEST(CliBench, MissingPackIsExit1) {
  const CliRun run = run_cli("bench no_such_dir/libx.so", no_gpu());
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_EQ(run.err,
            "no_such_dir/libx.so: not a dietcode kernel pack: no_such_dir/libx.so: cannot open "
            "shared object file: No such file or directory\n");
}

TEST(CliBench, BadInputsAreExit1BeforeTheGpu) {
  CliRun run = run_cli("bench '" + kPack + "' --shapes T=0:2", no_gpu());
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_EQ(run.err, "--shapes \"T=0:2\": shape values must be at least 1, got 0\n");

  run = run_cli("bench '" + kPack + "' --ops qkv,fc2", no_gpu());
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_EQ(run.err,
            "--ops: the pack has no op \"fc2\" (did you mean \"fc1\"?) (it has qkv, fc1)\n");

  run = run_cli("bench '" + kPack + "' --shapes S=1:2", no_gpu());
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_EQ(run.err, "--shapes: the pack has no shape variable \"S\" (it has T)\n");

  run = run_cli("bench '" + kNoDimsPack + "'", no_gpu());
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_EQ(run.err, kNoDimsPack +
                         ": manifest: ops[0]: has no \"dims\", so bench cannot tell its tensor "
                         "sizes; pass --workload WORKLOAD.json, the workload the pack was built "
                         "from\n");

  run = run_cli("bench '" + kPack + "' --baseline mkl", no_gpu());
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.err.find("--baseline"), std::string::npos) << run.err;

  run = run_cli("bench '" + kPack + "' --l2 cold", no_gpu());
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.err.find("--l2"), std::string::npos) << run.err;
}

TEST(CliBench, WorkloadSuppliesMissingDims) {
  const std::string workload = (std::filesystem::temp_directory_path() /
                                ("bench_workload_" + std::to_string(getpid()) + ".json"))
                                   .string();
  std::ofstream(workload) << R"({"name": "test_pack", "shape_vars": {"T": {"min": 1, "max": 4}},
    "ops": [{"name": "qkv", "op": "dense", "dtype": "float32", "M": "16*T", "N": 64, "K": 32},
            {"name": "fc1", "op": "dense", "dtype": "float16", "M": "16*T", "N": 96, "K": 32,
             "epilogue": "bias_gelu", "weight": 2}]})";
  // Past every input check: only the GPU is missing.
  const CliRun run =
      run_cli("bench '" + kNoDimsPack + "' --workload '" + workload + "' --shapes T=1,3", no_gpu());
  std::remove(workload.c_str());
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(run.err,
            "dietcode bench: no CUDA GPU: no CUDA device: cuInit failed: CUDA_ERROR_NO_DEVICE\n");
}

TEST(CliBench, ADriverThatCannotRunKernelsIsExit2) {
  // The stand-in driver describes a GPU but supports no context: an environment error, one
  // line, no progress output before it.
  const CliRun run = run_cli("bench '" + kPack + "'", with_fake_driver());
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(run.err.rfind("cuDevicePrimaryCtxRetain: CUDA_ERROR_NOT_SUPPORTED", 0), 0u) << run.err;
  EXPECT_EQ(run.err.find('\n'), run.err.size() - 1) << run.err;
}

}  // namespace
}  // namespace dietcode

// scripts/bundle-binaries.sh: the prebuilt dietcode a GPU host without a compiler runs. Made
// here from the binary under test (--from) and this build's GPU kernel tests (--tests-from),
// and run from another folder with nothing of this build on the loader's path: it starts,
// finds its templates, builds a CPU pack, and runs the GPU tests a filter names (here, where
// there is no GPU, they skip themselves).
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "e2e/cli_util.h"

namespace dietcode::test {
namespace {

namespace fs = std::filesystem;

class BundleBinaries : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    bundle_ = new TempDir();
    made_ = run_command({"bash", source_dir() + "/scripts/bundle-binaries.sh", "--from", cli_path(),
                         "--tests-from", DIETCODE_GPU_KERNEL_TESTS, bundle_->file("b")});
  }
  static void TearDownTestSuite() {
    delete bundle_;
    bundle_ = nullptr;
  }
  static std::string dir() { return bundle_->file("b"); }

  // The bundle's wrapper, started from / with neither the loader path nor the data dir set.
  static CommandResult run_bundled(const std::vector<std::string>& args,
                                   const std::string& cwd = "/",
                                   const std::string& wrapper = "dietcode") {
    std::vector<std::string> argv = {dir() + "/" + wrapper};
    argv.insert(argv.end(), args.begin(), args.end());
    CommandOptions options;
    options.cwd = cwd;
    options.unset_env = {"LD_LIBRARY_PATH", "DIETCODE_DATA_DIR"};
    return run_command(argv, options);
  }

  // The bundle builds a CPU pack of BERT dense's proj alone from a committed log, one kernel
  // (quick: two kernels and the runtime to compile, where all four ops took three times as
  // long on a 2-core machine).
  static CommandResult build_bert_pack(const std::string& pack) {
    nlohmann::json workload = nlohmann::json::parse(
        read_file(source_dir() + "/configs/workloads/bert_base_dense_cpu.json"));
    nlohmann::json proj = nlohmann::json::array();
    for (const auto& op : workload.at("ops"))
      if (op.at("name") == "proj") proj.push_back(op);
    workload["ops"] = proj;
    const std::string workload_file = pack + ".json";
    write_file(workload_file, workload.dump());
    return run_bundled(
        {"build", workload_file, "--log",
         source_dir() + "/configs/tuned/cpu-epyc-zen5-2core/bert_dense_cpu_fitted_pack.jsonl.gz",
         "--max-kernels", "1", "-o", pack});
  }

  static TempDir* bundle_;
  static CommandResult made_;
};
TempDir* BundleBinaries::bundle_ = nullptr;
CommandResult BundleBinaries::made_;

TEST_F(BundleBinaries, HoldsTheBinaryItsLibrariesAndTemplatesButNotTheHostsRuntime) {
  ASSERT_EQ(made_.exit_code, 0) << made_.summary();
  EXPECT_TRUE(fs::exists(dir() + "/bin/dietcode"));
  EXPECT_TRUE(fs::exists(dir() + "/bin/run_pack"));
  EXPECT_TRUE(fs::exists(dir() + "/lib/libxgboost.so.0"));
  EXPECT_TRUE(fs::exists(dir() + "/lib/libdmlc.so.0"));
  EXPECT_FALSE(fs::exists(dir() + "/lib/libc.so.6"));
  EXPECT_FALSE(fs::exists(dir() + "/lib/libstdc++.so.6"));
  EXPECT_TRUE(fs::exists(dir() + "/share/dietcode/templates/x86/gemm_x86.h"));
  EXPECT_TRUE(fs::exists(dir() + "/share/dietcode/configs/gpus"));
  EXPECT_FALSE(fs::exists(dir() + "/share/dietcode/configs/tuned"));  // logs stay in the repo
}

TEST_F(BundleBinaries, StartsFromAnotherFolderWithNothingOfThisBuild) {
  ASSERT_EQ(made_.exit_code, 0) << made_.summary();
  const CommandResult version = run_bundled({"--version"});
  ASSERT_EQ(version.exit_code, 0) << version.summary();
  const CommandResult gpus =
      run_bundled({"inspect", source_dir() + "/configs/workloads/bert_base_dense.json", "--space",
                   "--gpu", "h100", "--rows", "1"});
  EXPECT_EQ(gpus.exit_code, 0) << gpus.summary();  // configs/gpus from the bundle
}

// A CPU pack compiled by the bundle runs and checks itself through the bundle's run_pack.
TEST_F(BundleBinaries, BuildsAndRunsACpuPackFromItsOwnTemplates) {
  ASSERT_EQ(made_.exit_code, 0) << made_.summary();
  TempDir out;
  const CommandResult built = build_bert_pack(out.file("libbert.so"));
  ASSERT_EQ(built.exit_code, 0) << built.summary();
  CommandOptions options;
  options.cwd = "/";
  const CommandResult ran =
      run_command({dir() + "/bin/run_pack", out.file("libbert.so"), "proj", "T=13"}, options);
  EXPECT_EQ(ran.exit_code, 0) << ran.summary();
  EXPECT_NE(ran.out.find("0 mismatches"), std::string::npos) << ran.out;
}

// run-gpu-tests runs the bundled kernel-family tests a GoogleTest filter names, and says so
// with exit 3 when the bundle has none of them (gpu-run.sh then reports the family skipped).
TEST_F(BundleBinaries, RunsTheBundledGpuTestsAFilterNames) {
  ASSERT_EQ(made_.exit_code, 0) << made_.summary();
  EXPECT_TRUE(fs::exists(dir() + "/bin/gpu_kernel_tests"));
  const CommandResult listed = run_bundled(
      {"DenseTcGpu.Sampled*:BatchMatmulTcGpu.*", "--gtest_list_tests"}, "/", "run-gpu-tests");
  ASSERT_EQ(listed.exit_code, 0) << listed.summary();
  EXPECT_NE(listed.out.find("SampledMicroKernelsMatchTheReference"), std::string::npos)
      << listed.out;
  EXPECT_NE(listed.out.find("BatchMatmulTcGpu."), std::string::npos) << listed.out;
  EXPECT_EQ(listed.out.find("DenseF32Gpu."), std::string::npos) << listed.out;
  const CommandResult ran = run_bundled({"CudaHandles.*"}, "/", "run-gpu-tests");
  EXPECT_EQ(ran.exit_code, 0) << ran.summary();
  EXPECT_NE(ran.out.find("CudaHandles."), std::string::npos) << ran.out;
  const CommandResult none = run_bundled({"GpuMeasurerOnDevice.*"}, "/", "run-gpu-tests");
  EXPECT_EQ(none.exit_code, 3) << none.summary();
  EXPECT_NE(none.out.find("no bundled test matches GpuMeasurerOnDevice.*"), std::string::npos)
      << none.out;
}

// The pack above could have found the repository's templates, where this build's binary was
// configured: a line planted in the bundle's copy must reach the compiler.
TEST_F(BundleBinaries, CompilesTheBundlesTemplatesNotTheRepositorys) {
  ASSERT_EQ(made_.exit_code, 0) << made_.summary();
  const std::string ops = dir() + "/share/dietcode/templates/x86/ops_x86.h";
  write_file(ops, read_file(ops) + "\n#error \"planted in the bundle\"\n");
  TempDir out;
  const CommandResult built = build_bert_pack(out.file("libbert.so"));
  EXPECT_EQ(built.exit_code, 1) << built.summary();
  EXPECT_NE((built.out + built.err).find("planted in the bundle"), std::string::npos)
      << built.summary();
}

}  // namespace
}  // namespace dietcode::test

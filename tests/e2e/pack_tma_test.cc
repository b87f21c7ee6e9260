// The host side of kernels with a TMA producer, in a kernel pack on the stand-in driver (a
// TEST DOUBLE, tests/data/fake_driver): every launch of such a kernel passes tensor maps of X
// and W encoded for the call, which the double decodes; an operand the TMA cannot address, or
// a driver without cuTensorMapEncodeTiled, gets a one-line error while other kernels still run.
// The pack is the hand-written one of tests/data/tma_pack, compiled with the pack runtime
// sources; tests/data/tma_pack/tma_client.cc launches it and prints what the driver received.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "e2e/cli_util.h"
#include "e2e/tiny_pack_util.h"
#include "search/tuning_log.h"

namespace dietcode {
namespace {

namespace fs = std::filesystem;
using test::CommandOptions;
using test::CommandResult;
using test::run_command;
using ::testing::HasSubstr;

const std::string kFakeDir = fs::path(DIETCODE_FAKE_CUDA).parent_path().string();

// Builds the pack and the client once for the suite.
class PackTmaTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test::TempDir;
    const std::string src = test::source_dir();
    const std::string cxx =
        "'" DIETCODE_STRESS_CXX "' -std=c++17 -O1 -isystem '" DIETCODE_STRESS_CUDA_INCLUDE "' ";
    CommandResult pack = run_command(
        {"sh", "-c",
         cxx + "-fPIC -shared -fvisibility=hidden -I'" + src + "/src/pack/runtime' -I'" + src +
             "/templates' -I'" + src + "/include' '" + src + "/tests/data/tma_pack/tma_pack.cc' '" +
             src + "/src/pack/runtime/pack_runtime.cc' -o '" + dir_->file("libtma.so") + "' -ldl"});
    ASSERT_EQ(pack.exit_code, 0) << pack.summary();
    CommandResult client = run_command({"sh", "-c",
                                        cxx + "-I'" + src + "/tests/data' '" + src +
                                            "/tests/data/tma_pack/tma_client.cc' -o '" +
                                            dir_->file("tma_client") + "' -ldl"});
    ASSERT_EQ(client.exit_code, 0) << client.summary();
  }
  static void TearDownTestSuite() { delete dir_; }

  // The client's output for one op and its arguments, with extra environment for the double.
  static std::string launch(std::vector<std::string> args,
                            std::vector<std::pair<std::string, std::string>> env = {}) {
    return launch_pack(dir_->file("libtma.so"), std::move(args), std::move(env));
  }

  static std::string launch_pack(const std::string& lib, std::vector<std::string> args,
                                 std::vector<std::pair<std::string, std::string>> env) {
    std::vector<std::string> argv = {dir_->file("tma_client"), lib};
    argv.insert(argv.end(), args.begin(), args.end());
    CommandOptions options;
    options.env = {{"LD_LIBRARY_PATH", kFakeDir}, {"FAKE_CUDA_KERNELS", "1"}};
    options.env.insert(options.env.end(), env.begin(), env.end());
    options.unset_env = {"FAKE_CUDA_MISSING", "FAKE_CUDA_CC", "FAKE_CUDA_DEVICES"};
    options.timeout_s = 60;
    CommandResult r = run_command(argv, options);
    EXPECT_EQ(r.exit_code, 0) << r.summary();
    return r.out;
  }

  static test::TempDir* dir_;
};

test::TempDir* PackTmaTest::dir_ = nullptr;

// The line a map prints for operand base `arg` (0: X at 1 << 44, 1: W at 2 << 44): extents
// innermost first (K, rows, batch), byte strides of a row and a batch element, boxes of 64
// elements (128 bytes) by the tile's rows, 16-bit elements (type 1: UINT16), the 128-byte
// swizzle (3), 256-byte L2 promotion (3) and zero fill (oob 0).
std::string map_line(int index, int arg, int64_t k, int64_t rows, int64_t batch,
                     int64_t batch_bytes, int box_rows) {
  std::ostringstream s;
  s << "map " << index << " base 0x" << std::hex << ((int64_t(arg) + 1) << 44) << std::dec
    << " dims " << k << "," << rows << "," << batch << " strides " << k * 2 << "," << batch_bytes
    << " box 64," << box_rows << ",1 elem 1,1,1 type 1 swizzle 3 l2 3 oob 0 interleave 0\n";
  return s.str();
}

TEST_F(PackTmaTest, DenseLaunchesPassTheMapsOfXAndWForEveryShape) {
  for (auto [m, n, k] : std::vector<std::array<int64_t, 3>>{
           {64, 64, 64}, {128, 256, 512}, {1000, 3000, 4096}, {70000, 8, 8}}) {
    std::string out = launch({"proj", std::to_string(m), std::to_string(n), std::to_string(k)});
    // Box rows: the kernel's tile_m (128) for X, tile_n (256) for W.
    EXPECT_EQ(out, "rc 0 | \nmaps 2\n" + map_line(0, 0, k, m, 1, m * k * 2, 128) +
                       map_line(1, 1, k, n, 1, n * k * 2, 256) + "encodes 2\nlaunches 1\n")
        << m << " " << n << " " << k;
  }
}

TEST_F(PackTmaTest, BatchedLaunchesStepByTheBatchStrides) {
  std::string out = launch({"bmm", "3", "100", "200", "64"});
  EXPECT_EQ(out, "rc 0 | \nmaps 2\n" + map_line(0, 0, 64, 100, 3, 100 * 64 * 2, 128) +
                     map_line(1, 1, 64, 200, 3, 200 * 64 * 2, 256) + "encodes 2\nlaunches 1\n");
}

// The maps of the last call are reused by the same thread when nothing changed.
TEST_F(PackTmaTest, RepeatedCallsEncodeTheirMapsOnce) {
  EXPECT_THAT(launch({"proj", "--repeat", "50", "128", "256", "512"}),
              HasSubstr("encodes 2\nlaunches 50\n"));
}

TEST_F(PackTmaTest, AKernelWithoutATmaProducerGetsNoMaps) {
  EXPECT_EQ(launch({"proj", "32", "256", "512"}), "rc 0 | \nmaps 0\nencodes 0\nlaunches 1\n");
}

TEST_F(PackTmaTest, OperandsTheTmaCannotAddressAreOneLineErrors) {
  EXPECT_EQ(launch({"proj", "128", "256", "500"}),
            "rc 1 | op proj: argument X cannot be read by this kernel's TMA copies: rows are not "
            "a multiple of 16 bytes apart (K % 8 != 0)\nmaps 0\nencodes 0\nlaunches 0\n");
  EXPECT_EQ(launch({"proj", "--offset", "1", "8", "128", "256", "512"}),
            "rc 1 | op proj: argument W cannot be read by this kernel's TMA copies: the operand "
            "is not 16-byte aligned\nmaps 0\nencodes 0\nlaunches 0\n");
}

TEST_F(PackTmaTest, ADriverWithoutTheEncoderFailsTmaKernelsOnlyAndSaysWhy) {
  const std::vector<std::pair<std::string, std::string>> old_driver = {
      {"FAKE_CUDA_MISSING", "cuTensorMapEncodeTiled"}};
  EXPECT_EQ(launch({"proj", "128", "256", "512"}, old_driver),
            "rc 3 | op proj: the chosen kernel copies with the TMA, but the NVIDIA driver has no "
            "cuTensorMapEncodeTiled (a driver for CUDA 12.0 or newer is needed)\nmaps 0\n"
            "encodes 0\nlaunches 0\n");
  EXPECT_EQ(launch({"proj", "32", "256", "512"}, old_driver),
            "rc 0 | \nmaps 0\nencodes 0\nlaunches 1\n");
}

// A pack `dietcode build` makes from a log that chose dense_wgmma with the TMA producer for
// large T (CUBINs for sm_90a by NVRTC; the double learns from their .nv.info that the kernel
// takes two tensor maps): the manifest and `inspect` say so, its launches pass maps of X and W
// for the call, and on a driver without the encoder only that kernel fails.
TEST_F(PackTmaTest, ABuiltPackWithATmaProducerPassesItsMaps) {
  test::TempDir dir;
  std::string workload = dir.write("tma.json", R"({"name": "tma",
      "shape_vars": {"T": {"min": 1, "max": 16}},
      "ops": [{"name": "proj", "op": "dense", "dtype": "bfloat16", "M": "8*T", "N": 256,
               "K": 192}]})");
  const MicroKernel cp_async{"dense_wgmma", {{"WG_M", 1}, {"BN", 64}, {"PRODUCER", 0}}};
  const MicroKernel tma{"dense_wgmma", {{"WG_M", 2}, {"BN", 128}, {"STAGES", 4}, {"PRODUCER", 1}}};
  std::string log = dir.file("tma.jsonl");
  test::write_two_band_log(log, "tma", "proj", cp_async, tma, 256, 192);
  CommandOptions options;
  options.env = {{"DIETCODE_CACHE_DIR", dir.file("cache")}};
  std::string lib = dir.file("libtma.so");
  CommandResult build =
      test::run_cli({"build", workload, "--log", log, "-o", lib, "--arch", "sm_90a"}, options);
  ASSERT_EQ(build.exit_code, 0) << build.summary();

  CommandResult inspect = test::run_cli({"inspect", lib, "--json"});
  ASSERT_EQ(inspect.exit_code, 0) << inspect.summary();
  nlohmann::json kernels = nlohmann::json::parse(inspect.out)["ops"][0]["kernels"];
  ASSERT_EQ(kernels.size(), 2u) << inspect.out;
  int tma_id = kernels[0]["params"]["PRODUCER"] == 1 ? 0 : 1;
  EXPECT_EQ(kernels[tma_id]["plan"]["tma_box_k"], 64);
  EXPECT_FALSE(kernels[1 - tma_id]["plan"].contains("tma_box_k"));
  CommandResult text = test::run_cli({"inspect", lib});
  EXPECT_THAT(text.out, HasSubstr("tile 128x128, 384 threads, split-K 1, TMA"));

  // T = 16: M = 128 on the TMA kernel (tiles 128 x 128); T = 2 on the cp.async one.
  const std::vector<std::pair<std::string, std::string>> h100 = {{"FAKE_CUDA_CC", "90"}};
  EXPECT_EQ(launch_pack(lib, {"proj", "16"}, h100),
            "rc 0 | \nmaps 2\n" + map_line(0, 0, 192, 128, 1, 128 * 192 * 2, 128) +
                map_line(1, 1, 192, 256, 1, 256 * 192 * 2, 128) + "encodes 2\nlaunches 1\n");
  EXPECT_EQ(launch_pack(lib, {"proj", "2"}, h100), "rc 0 | \nmaps 0\nencodes 0\nlaunches 1\n");

  // Sixteen threads on three streams each, T over 1..16, so both kernels launch at once and
  // every thread keeps its own maps: each stream still gets exactly its launches.
  CommandOptions stress;
  stress.env = {{"LD_LIBRARY_PATH", kFakeDir}, {"FAKE_CUDA_KERNELS", "1"}, {"FAKE_CUDA_CC", "90"}};
  stress.unset_env = {"FAKE_CUDA_MISSING", "FAKE_CUDA_DEVICES"};
  stress.timeout_s = 120;
  CommandResult concurrent = run_command(
      {DIETCODE_STRESS_DIR "/pack_stress/pack_stress_plain", lib, "proj", "16", "concurrent"},
      stress);
  EXPECT_EQ(concurrent.exit_code, 0) << concurrent.summary() << concurrent.out;
  EXPECT_THAT(concurrent.out, HasSubstr("ok concurrent\n"));

  std::vector<std::pair<std::string, std::string>> old_driver = h100;
  old_driver.emplace_back("FAKE_CUDA_MISSING", "cuTensorMapEncodeTiled");
  EXPECT_THAT(launch_pack(lib, {"proj", "16"}, old_driver),
              HasSubstr("rc 3 | op proj: the chosen kernel copies with the TMA, but the NVIDIA "
                        "driver has no cuTensorMapEncodeTiled"));
  EXPECT_EQ(launch_pack(lib, {"proj", "2"}, old_driver),
            "rc 0 | \nmaps 0\nencodes 0\nlaunches 1\n");
}

}  // namespace
}  // namespace dietcode

// A real pack (built by `dietcode build` from a tuning log, CUBINs by NVRTC) under stress, on
// the stand-in driver (a TEST DOUBLE, tests/data/fake_driver): many threads, streams and
// contexts at once, hundreds of load/unload cycles that must leave no driver object behind,
// and bad arguments that must get clean errors. The same scenarios run once more with the
// client, the pack (recompiled from its kept generated sources) and the double built under
// AddressSanitizer + UndefinedBehaviorSanitizer, and under ThreadSanitizer.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
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

constexpr int kMaxT = int(test::kTinyMaxT);
const std::string kStress = DIETCODE_STRESS_DIR;

// Runs the stress client of this kind (plain, asan, tsan) on a pack, against the fake driver
// of the same kind.
CommandResult stress_pack(const std::string& kind, const std::string& lib, const std::string& op,
                          int max_t, std::vector<std::string> args,
                          std::vector<std::pair<std::string, std::string>> env) {
  std::vector<std::string> argv = {kStress + "/pack_stress/pack_stress_" + kind, lib, op,
                                   std::to_string(max_t)};
  argv.insert(argv.end(), args.begin(), args.end());
  CommandOptions options;
  options.env = {
      {"LD_LIBRARY_PATH", kStress + (kind == "plain" ? "/fake_driver" : "/fake_driver_" + kind)},
      {"FAKE_CUDA_KERNELS", "1"},
      {"ASAN_OPTIONS", "detect_leaks=1"},
      {"TSAN_OPTIONS", "halt_on_error=1"}};
  for (const auto& [name, value] : env) {  // the caller's settings win
    auto same = [&](const auto& e) { return e.first == name; };
    auto it = std::find_if(options.env.begin(), options.env.end(), same);
    if (it != options.env.end())
      it->second = value;
    else
      options.env.emplace_back(name, value);
  }
  options.unset_env = {"FAKE_CUDA_DEVICES", "FAKE_CUDA_CC", "FAKE_CUDA_NO_POOLS",
                       "FAKE_CUDA_MAX_ALLOC"};
  options.timeout_s = 120;
  return run_command(argv, options);
}

// The packs every test runs on: the plain one `dietcode build` writes, and the same generated
// sources compiled with each sanitizer. CTest runs each test in its own process, so they are
// built once into the build tree (under a lock: tests may run in parallel) and rebuilt only
// when dietcode or this test changes.
class PackStressTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    packs_ = new std::string(kStress + "/pack_stress/packs");
    fs::create_directories(*packs_);
    int lock = open((*packs_ + "/lock").c_str(), O_CREAT | O_RDWR, 0644);
    ASSERT_GE(lock, 0);
    flock(lock, LOCK_EX);
    std::string stamp = stamp_of(DIETCODE_CLI_PATH) + " " + stamp_of("/proc/self/exe");
    std::error_code ec;
    if (!fs::exists(*packs_ + "/stamp") || test::read_file(*packs_ + "/stamp") != stamp) {
      fs::remove(*packs_ + "/stamp", ec);
      build_packs();
      if (!HasFailure()) test::write_file(*packs_ + "/stamp", stamp);
    }
    close(lock);
  }
  static void TearDownTestSuite() { delete packs_; }

  static std::string stamp_of(const std::string& path) {
    fs::path real = fs::canonical(path);
    return std::to_string(fs::last_write_time(real).time_since_epoch().count()) + ":" +
           std::to_string(fs::file_size(real));
  }

  static void build_packs() {
    test::TempDir dir;
    std::string workload = dir.write("tiny.json", test::kTinyWorkload);
    std::string log = dir.file("tiny.jsonl");
    test::write_tiny_log(log);
    CommandOptions options;
    options.env = {{"DIETCODE_CACHE_DIR", dir.file("cache")}};
    CommandResult build =
        test::run_cli({"build", workload, "--log", log, "-o", *packs_ + "/libtiny.so", "--arch",
                       "sm_80,sm_90", "--max-kernels", "3", "--keep-build-dir"},
                      options);
    ASSERT_EQ(build.exit_code, 0) << build.summary();
    const std::string kept = "pack sources kept in ";
    size_t at = build.err.find(kept);
    ASSERT_NE(at, std::string::npos) << build.err;
    std::string sources = build.err.substr(at + kept.size());
    sources.resize(sources.find('\n'));
    // The same generated sources, compiled with each sanitizer and pack_writer's flags (the
    // version script keeps libstdc++'s unique symbols local, without which dlclose could not
    // unload the pack).
    for (const auto& [kind, flags] : std::map<std::string, std::string>{
             {"asan", "-fsanitize=address,undefined -fno-sanitize-recover=all"},
             {"tsan", "-fsanitize=thread"}}) {
      CommandResult cc = run_command(
          {"sh", "-c",
           "'" DIETCODE_STRESS_CXX "' -std=c++17 -O1 -g -fPIC -shared -fvisibility=hidden "
           "-fvisibility-inlines-hidden -Wl,--version-script=exports.map " +
               flags +
               " -Iinclude -I. -isystem '" DIETCODE_STRESS_CUDA_INCLUDE
               "' pack.cc pack_runtime.cc -o '" +
               *packs_ + "/libtiny_" + kind + ".so' -ldl"},
          CommandOptions{sources, {}, {}, "", 300});
      EXPECT_EQ(cc.exit_code, 0) << cc.summary();
    }
    fs::remove_all(sources);
  }

  // Runs the client of this kind on the tiny pack of the same kind.
  static CommandResult stress(const std::string& kind, std::vector<std::string> args,
                              std::vector<std::pair<std::string, std::string>> env = {}) {
    std::string lib = *packs_ + (kind == "plain" ? "/libtiny.so" : "/libtiny_" + kind + ".so");
    return stress_pack(kind, lib, "proj", kMaxT, std::move(args), std::move(env));
  }

  static std::map<std::string, std::string> checks(const std::string& out) {
    std::map<std::string, std::string> found;
    std::istringstream lines(out);
    for (std::string line; std::getline(lines, line);)
      if (line.rfind("check ", 0) == 0)
        found[line.substr(6, line.find(" = ") - 6)] = line.substr(line.find(" = ") + 3);
    return found;
  }

  static std::string* packs_;
};

std::string* PackStressTest::packs_ = nullptr;

const std::vector<std::pair<std::string, std::string>> kTwoDevices = {{"FAKE_CUDA_DEVICES", "2"},
                                                                      {"FAKE_CUDA_CC", "90,80"}};

TEST_F(PackStressTest, SixteenThreadsLaunchOnTwoDevicesAndSixStreamsEach) {
  CommandResult r = stress("plain", {"concurrent"}, kTwoDevices);
  ASSERT_EQ(r.exit_code, 0) << r.summary() << r.out;
  EXPECT_THAT(r.out, HasSubstr("contexts 2\n"));
  EXPECT_THAT(r.out, HasSubstr("ok concurrent\n"));
}

TEST_F(PackStressTest, WorkspacesWithoutMemoryPoolsAreFreedToo) {
  CommandResult r = stress("plain", {"concurrent"}, {{"FAKE_CUDA_NO_POOLS", "1"}});
  ASSERT_EQ(r.exit_code, 0) << r.summary() << r.out;
  EXPECT_THAT(r.out, HasSubstr("contexts 1\n"));
}

// A stream keeps one split-K workspace for all its launches (the pack's launches took 4.9%
// longer than the tuner's on an H200 when each allocated its own); capture and a full table
// fall back to a buffer per launch, and nothing outlives the pack (the client checks that).
TEST_F(PackStressTest, EachStreamKeepsOneSplitKWorkspace) {
  CommandResult r = stress("plain", {"workspaces"});
  ASSERT_EQ(r.exit_code, 0) << r.summary() << r.out;
  // 50 launches on one stream: one allocation, kept.
  EXPECT_THAT(r.out, HasSubstr("workspaces one_stream allocations 1 live 1\n"));
  // A second stream and the default stream keep one each.
  EXPECT_THAT(r.out, HasSubstr("workspaces three_streams allocations 3 live 3\n"));
  // A new stream at a destroyed one's address is a new stream (ids, not handles, are compared).
  EXPECT_THAT(r.out, HasSubstr("workspaces recycled_handle allocations 4 live 4\n"));
  // Captured launches allocate and free their own (a graph carries its own memory).
  EXPECT_THAT(r.out, HasSubstr("workspaces captured allocations 14 live 4\n"));
  // 20 more streams: 12 fill the table of 16, the other 8 allocate per launch (3 each).
  EXPECT_THAT(r.out, HasSubstr("workspaces table_full allocations 50 live 16\n"));
  EXPECT_THAT(r.out, HasSubstr("ok workspaces\n"));
}

TEST_F(PackStressTest, TwoHundredLoadUnloadCyclesLeaveNoDriverObjectBehind) {
  CommandResult r = stress("plain", {"cycles", "200"});
  ASSERT_EQ(r.exit_code, 0) << r.summary() << r.out;
  EXPECT_THAT(r.out, HasSubstr("ok cycles\n"));
}

TEST_F(PackStressTest, BadArgumentsGetOneLineErrorsAndHugeShapesNoOverflow) {
  CommandResult r = stress("plain", {"checks"}, {{"FAKE_CUDA_MAX_ALLOC", "1024"}});
  ASSERT_EQ(r.exit_code, 0) << r.summary() << r.out;
  std::map<std::string, std::string> c = checks(r.out);
  EXPECT_EQ(c["ok"], "0 | ");
  EXPECT_THAT(c["misaligned"],
              HasSubstr("1 | op proj: argument X (0x100000000004) is not aligned to "));
  EXPECT_EQ(c["output_is_input"],
            "1 | op proj: output Y (0x100000000000, 8192 bytes) overlaps input X "
            "(0x100000000000, 4096 bytes)");
  EXPECT_EQ(c["output_overlaps_end"],
            "1 | op proj: output Y (0x100000000ff0, 8192 bytes) overlaps input X "
            "(0x100000000000, 4096 bytes)");
  EXPECT_EQ(c["output_overlaps_weights"],
            "1 | op proj: output Y (0x200000000000, 8192 bytes) overlaps input W "
            "(0x200000000000, 8192 bytes)");
  EXPECT_EQ(c["output_right_after_input"], "0 | ");
  EXPECT_EQ(c["null_pointer"], "1 | op proj: argument X is NULL");
  EXPECT_EQ(c["null_args"], "1 | op proj: args is NULL");
  EXPECT_EQ(c["four_args"], "1 | op proj takes 3 arguments, got 4");
  EXPECT_EQ(c["two_values"], "1 | op proj takes 1 shape value(s) (T), got 2");
  EXPECT_EQ(c["null_values"], "1 | op proj: shape_values is NULL");
  EXPECT_EQ(c["value_0"], "1 | op proj: shape value T = 0 is below 1");
  EXPECT_EQ(c["value_negative"], "1 | op proj: shape value T = -5 is below 1");
  EXPECT_EQ(c["value_int64_min"], "1 | op proj: shape value T = -9223372036854775808 is below 1");
  // Far past the tuned range: the largest kernel still launches (its grid clamps y).
  EXPECT_EQ(c["value_1e9"], "0 | ");
  EXPECT_EQ(c["value_int32_max"], "0 | ");
  EXPECT_EQ(c["value_2_pow_31"], "1 | op proj: shape value T = 2147483648 is above 2147483647");
  EXPECT_EQ(c["value_int64_max"],
            "1 | op proj: shape value T = 9223372036854775807 is above 2147483647");
  EXPECT_EQ(c["output_at_top_of_memory"],
            "1 | op proj: argument Y (0xfffffffffffffff0, 8192 bytes) runs past the end of the "
            "address space");
  EXPECT_EQ(c["split_k_launch"],
            "5 | op proj: allocating the split-K workspace failed: CUDA_ERROR_OUT_OF_MEMORY "
            "(fake driver)");
}

TEST_F(PackStressTest, AGpuWithoutABinaryForItIsAnArchMismatch) {
  CommandResult r = stress("plain", {"checks"}, {{"FAKE_CUDA_CC", "75"}});
  std::string ok = checks(r.out)["ok"];
  EXPECT_THAT(ok, HasSubstr("4 | op proj: kernel "));
  EXPECT_THAT(ok, HasSubstr(" has no binary for this GPU (sm_75); the pack has sm_80, sm_90"));
}

// At exit the pack's destructor gives everything back, or, when the driver has shut down
// first (CUDA_ERROR_DEINITIALIZED), leaves it to the driver; neither order may crash. Which
// order a process gets depends on the order of loading, so both are run.
TEST_F(PackStressTest, ExitWithThePackLoadedIsCleanWhicheverShutsDownFirst) {
  std::string refused;
  for (std::string order : {"driver-first", "pack-first"})
    for (std::string kind : {"plain", "asan"}) {
      // Without leak checks: a driver that has shut down has freed its objects, but the
      // double, which keeps no list of them, leaves them to the end of the process.
      CommandResult r =
          stress(kind, {"exit", order},
                 {{"FAKE_CUDA_TRACE_SHUTDOWN", "1"}, {"ASAN_OPTIONS", "detect_leaks=0"}});
      EXPECT_EQ(r.exit_code, 0) << kind << " " << order << ": " << r.summary();
      EXPECT_EQ(r.out, "ok exit\n");
      refused += r.err;
    }
  // One of the orders did meet a driver that had shut down, and was refused.
  EXPECT_THAT(refused, HasSubstr("fake driver: module_unload after shutdown"));
}

// The launch-overhead bench (what scripts/gpu-run.sh runs on a GPU host) still runs, and
// labels the stand-in driver's figures as such.
TEST_F(PackStressTest, TheLaunchOverheadBenchRunsAndSaysWhatItMeasured) {
  CommandResult r = stress("plain", {"bench", "200"});
  ASSERT_EQ(r.exit_code, 0) << r.summary() << r.out;
  EXPECT_THAT(r.out, HasSubstr("fake driver, CPU only, NOT a GPU figure (T=40, 200 calls"));
  EXPECT_THAT(r.out, ::testing::ContainsRegex("threads  1: dietcode_launch [0-9.]+ ns/call, "
                                              "direct cuLaunchKernel [0-9.]+ ns/call"));
  EXPECT_THAT(r.out, HasSubstr("threads 16: dietcode_launch "));
  EXPECT_THAT(r.out, HasSubstr("ok bench\n"));
}

TEST_F(PackStressTest, AddressAndUndefinedBehaviorSanitizersFindNothing) {
  for (std::vector<std::string> scenario :
       {std::vector<std::string>{"concurrent"}, {"cycles", "30"}, {"checks"}, {"workspaces"}}) {
    CommandResult r = stress("asan", scenario, kTwoDevices);
    EXPECT_EQ(r.exit_code, 0) << scenario[0] << ": " << r.summary() << r.out;
    EXPECT_THAT(r.out, HasSubstr("ok " + scenario[0] + "\n"));
  }
}

TEST_F(PackStressTest, ThreadSanitizerFindsNoRace) {
  for (std::vector<std::string> scenario :
       {std::vector<std::string>{"concurrent"}, {"cycles", "10"}}) {
    CommandResult r = stress("tsan", scenario, kTwoDevices);
    EXPECT_EQ(r.exit_code, 0) << scenario[0] << ": " << r.summary() << r.out;
    EXPECT_THAT(r.out, HasSubstr("ok " + scenario[0] + "\n"));
  }
}

// A bfloat16 pack for sm_80,sm_90a whose log chose a wgmma kernel (sm_90a only) for large T:
// it carries a dispatcher per arch, and launches on an 8.0 and a 9.0 GPU at once both succeed
// (one tree would send the 8.0 GPU to the wgmma kernel, which has no binary there).
TEST(PackArchDispatch, AnSm80AndSm90aPackLaunchesOnBothGpusAtOnce) {
  test::TempDir dir;
  std::string workload = dir.write("mixed.json", R"({"name": "mixed",
      "shape_vars": {"T": {"min": 1, "max": 16}},
      "ops": [{"name": "proj", "op": "dense", "dtype": "bfloat16", "M": "8*T", "N": 128,
               "K": 128}]})");
  const MicroKernel tc{"dense_tc", {}}, wgmma{"dense_wgmma", {}};
  std::string log = dir.file("mixed.jsonl");
  test::write_two_band_log(log, "mixed", "proj", tc, wgmma, 128, 128);
  CommandOptions options;
  options.env = {{"DIETCODE_CACHE_DIR", dir.file("cache")}};
  std::string lib = dir.file("libmixed.so");
  CommandResult build = test::run_cli(
      {"build", workload, "--log", log, "-o", lib, "--arch", "sm_80,sm_90a", "--json"}, options);
  ASSERT_EQ(build.exit_code, 0) << build.summary();
  auto report = nlohmann::json::parse(build.out);
  ASSERT_EQ(report["ops"][0]["dispatchers"].size(), 2u) << build.out;
  EXPECT_EQ(report["ops"][0]["dispatchers"][1]["archs"], nlohmann::json({"sm_80"}));

  CommandResult r = stress_pack("plain", lib, "proj", 16, {"concurrent"}, kTwoDevices);
  ASSERT_EQ(r.exit_code, 0) << r.summary() << r.out;
  EXPECT_THAT(r.out, HasSubstr("contexts 2\n"));
  EXPECT_THAT(r.out, HasSubstr("ok concurrent\n"));
}

}  // namespace
}  // namespace dietcode

// `dietcode build` end to end: a small workload and a handcrafted tuning log become a real
// pack (dense_f32 kernels compiled by NVRTC for sm_80 and sm_90), which a C99 program
// (tests/data/pack_client.c) loads with dlopen exactly as a customer's program would.
#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/inspect_pack.h"
#include "dietcode/pack_abi.h"
#include "common/error.h"
#include "e2e/tiny_pack_util.h"
#include "search/tuning_log.h"

namespace dietcode {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::Not;

struct Shell {
  int exit_code = -1;
  std::string out, err;
};

std::string slurp(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

Shell run(const std::string& command, const fs::path& dir) {
  fs::path out = dir / "stdout.txt", err = dir / "stderr.txt";
  int status = std::system((command + " >'" + out.string() + "' 2>'" + err.string() + "'").c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
}

// The tiny workload's three kernels (tiny_pack_util.h), and a fourth that once gave a wrong
// result (so it must never ship).
const MicroKernel& kSmall = test::kTinySmall;
const MicroKernel& kSplit = test::kTinySplit;
const MicroKernel& kLarge = test::kTinyLarge;
const MicroKernel kWrong{"dense_f32", {{"TM", 4}}};

class PackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("dietcode_pack_test_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    workload_ = (dir_ / "tiny.json").string();
    std::ofstream(workload_) << test::kTinyWorkload;
    log_ = (dir_ / "tiny.jsonl").string();
    write_log(log_, false);
    env_ = "DIETCODE_CACHE_DIR='" + (dir_ / "cache").string() + "' ";
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }

  static void write_log(const std::string& path, bool simulated) {
    TuningLogWriter log(path);
    for (int64_t t = 1; t <= 40; ++t)
      for (const MicroKernel& mk : {kSmall, kSplit, kLarge, kWrong}) {
        TuningRecord r = test::h100_record("tiny", "proj", mk, t, {1, 4 * t, 64, 32});
        r.simulated = simulated;
        if (mk == kWrong && t == 20) {
          r.status = MeasureStatus::kWrongResult;
        } else {
          r.latency_us = 3.0 + 0.1 * double(t) + (mk == test::tiny_best_for(t) ? 0.0 : 1.0);
          if (mk == kWrong) *r.latency_us = 1.0;  // fastest of all, but wrong once
        }
        log.append(r);
      }
  }

  Shell build(const std::string& args) {
    return run(env_ + "'" DIETCODE_CLI_PATH "' build '" + workload_ + "' " + args, dir_);
  }

  // Builds into dir_/NAME/libtiny.so; fails the test if that does not work.
  fs::path build_into(const std::string& name, const std::string& extra = "") {
    fs::create_directories(dir_ / name);
    fs::path lib = dir_ / name / "libtiny.so";
    Shell r = build("--log '" + log_ + "' -o '" + lib.string() +
                    "' --arch sm_80,sm_90 --max-kernels 3 " + extra);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    return lib;
  }

  fs::path dir_;
  std::string workload_, log_, env_;
};

bool driver_present() {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h) dlclose(h);
  return h != nullptr;
}

TEST_F(PackTest, ACProgramLoadsThePackAndGetsTheTunedDispatch) {
  fs::path lib = build_into("a");
  ASSERT_TRUE(fs::exists(lib));
  ASSERT_TRUE(fs::exists(dir_ / "a" / "tiny.h"));

  fs::path client = dir_ / "pack_client";
  Shell cc = run("cc -std=c99 -Wall -Wextra -Werror -o '" + client.string() +
                     "' '" DIETCODE_TEST_DATA_DIR "/pack_client.c' -ldl",
                 dir_);
  ASSERT_EQ(cc.exit_code, 0) << cc.err;
  bool no_device = !driver_present();
  Shell r = run("'" + client.string() + "' '" + lib.string() + "' tiny_proj proj:0-45" +
                    (no_device ? " --no-device" : ""),
                dir_);
  ASSERT_EQ(r.exit_code, 0) << r.err;

  std::map<std::string, std::string> checks;
  std::map<int64_t, int> picked;
  json manifest;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("manifest ", 0) == 0) manifest = json::parse(line.substr(9));
    if (line.rfind("check ", 0) == 0)
      checks[line.substr(6, line.find(" = ") - 6)] = line.substr(line.find(" = ") + 3);
    long long t;
    int k;
    if (std::sscanf(line.c_str(), "select proj %lld = %d", &t, &k) == 2) picked[t] = k;
  }
  EXPECT_THAT(r.out, HasSubstr("abi 4\n"));

  // The manifest.
  EXPECT_EQ(manifest["format"], "dietcode-pack");
  EXPECT_EQ(manifest["name"], "tiny");
  EXPECT_EQ(manifest["archs"], json({"sm_80", "sm_90"}));
  EXPECT_EQ(manifest["choices"], "measured on NVIDIA H100 80GB HBM3 (sm_90)");
  EXPECT_EQ(manifest["shape_vars"][0],
            json({{"name", "T"}, {"min", 1}, {"max", 40}, {"count", 40}}));
  const json& op = manifest["ops"][0];
  EXPECT_EQ(op["name"], "proj");
  EXPECT_EQ(op["function"], "tiny_proj");
  EXPECT_EQ(op["args"], json({"X", "W", "Y"}));
  EXPECT_EQ(op["vars"], json({"T"}));
  std::vector<std::string> keys;
  for (const json& k : op["kernels"]) keys.push_back(k["key"]);
  ASSERT_EQ(keys.size(), 3u);  // kWrong never ships
  for (size_t i = 0; i < keys.size(); ++i) EXPECT_EQ(op["kernels"][i]["id"], int(i));

  // Every value in the range, and values past both ends, gets the kernel tuned for it.
  auto id_of = [&](const MicroKernel& mk) {
    for (size_t i = 0; i < keys.size(); ++i)
      if (MicroKernel::from_json(op["kernels"][i]).key() == mk.key()) return int(i);
    return -1;
  };
  ASSERT_EQ(picked.size(), 46u);
  EXPECT_EQ(picked[0], -1);  // T = 0 is rejected
  for (int64_t t = 1; t <= 45; ++t)
    EXPECT_EQ(picked[t], id_of(test::tiny_best_for(std::min<int64_t>(t, 40)))) << "T=" << t;
  EXPECT_EQ(op["kernels"][id_of(kSplit)]["plan"]["reduce_entry"], "dietcode_dense_f32_reduce");

  // Argument checks, before any GPU work.
  EXPECT_EQ(checks["select_null_op"], "-1 | op is NULL");
  EXPECT_EQ(checks["select_unknown_op"], "-2 | unknown op 'no_such_op' (pack tiny has: proj)");
  EXPECT_EQ(checks["select_wrong_count"], "-1 | op proj takes 1 shape value(s) (T), got 2");
  EXPECT_EQ(checks["select_null_values"], "-1 | op proj: shape_values is NULL");
  EXPECT_EQ(checks["select_value_below_1"], "-1 | op proj: shape value T = 0 is below 1");
  EXPECT_EQ(checks["launch_null_op"], "1 | op is NULL");
  EXPECT_EQ(checks["launch_unknown_op"], "2 | unknown op 'no_such_op' (pack tiny has: proj)");
  EXPECT_EQ(checks["launch_null_args"], "1 | op proj: args is NULL");
  EXPECT_EQ(checks["launch_null_pointer"], "1 | op proj: argument W is NULL");
  EXPECT_EQ(checks["launch_wrong_arg_count"], "1 | op proj takes 3 arguments, got 4");
  EXPECT_EQ(checks["launch_value_below_1"], "1 | op proj: shape value T = 0 is below 1");
  EXPECT_THAT(checks["launch_misaligned"],
              HasSubstr("1 | op proj: argument X (0x100002) is not aligned to "));
  EXPECT_EQ(checks["wrapper_null_pointer"], "1 | op proj: argument X is NULL");
  if (no_device) {
    EXPECT_EQ(checks["launch_no_device"], "3 | no NVIDIA driver: cannot load libcuda.so.1");
    EXPECT_EQ(checks["wrapper_no_device"], "3 | no NVIDIA driver: cannot load libcuda.so.1");
  }
}

TEST_F(PackTest, ExportsOnlyTheAbiAndNeverLinksTheDriver) {
  fs::path lib = build_into("a");
  Shell nm = run("nm -D --defined-only '" + lib.string() + "' | awk '{print $3}' | sort", dir_);
  ASSERT_EQ(nm.exit_code, 0);
  EXPECT_EQ(nm.out,
            "dietcode_abi_version\ndietcode_declare_constant\ndietcode_forget_constant\n"
            "dietcode_last_error\ndietcode_launch\ndietcode_manifest\n"
            "dietcode_num_threads\ndietcode_select\ndietcode_select_arch\n"
            "dietcode_set_num_threads\ntiny_proj\n");
  Shell readelf = run("readelf -d '" + lib.string() + "'", dir_);
  ASSERT_EQ(readelf.exit_code, 0);
  EXPECT_THAT(readelf.out, HasSubstr("(SONAME)             Library soname: [libtiny.so]"));
  EXPECT_THAT(readelf.out, Not(HasSubstr("libcuda")));
  // ABI 3's thread-pool calls: a GPU pack checks the count and otherwise ignores it.
  void* pack = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_TRUE(pack) << dlerror();
  auto set_threads = reinterpret_cast<int (*)(int)>(dlsym(pack, "dietcode_set_num_threads"));
  auto threads = reinterpret_cast<int (*)()>(dlsym(pack, "dietcode_num_threads"));
  ASSERT_TRUE(set_threads && threads);
  EXPECT_EQ(set_threads(4), DIETCODE_OK);
  EXPECT_EQ(set_threads(0), DIETCODE_OK);
  EXPECT_EQ(set_threads(-1), DIETCODE_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(threads(), 0);
  // ABI 4's constant weights: a GPU pack checks and records declarations the same way.
  auto declare = reinterpret_cast<int (*)(const char*, int, const void*)>(
      dlsym(pack, "dietcode_declare_constant"));
  auto forget = reinterpret_cast<int (*)(const char*, int, const void*)>(
      dlsym(pack, "dietcode_forget_constant"));
  ASSERT_TRUE(declare && forget);
  float w = 0;
  EXPECT_EQ(declare("proj", 1, &w), DIETCODE_OK);
  EXPECT_EQ(declare("proj", 0, &w), DIETCODE_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(forget("proj", 1, &w), DIETCODE_OK);
  EXPECT_EQ(forget("proj", 1, &w), DIETCODE_ERR_INVALID_ARGUMENT);
}

TEST_F(PackTest, TheHeaderIsStrictC99AndCppAndLinksAgainstThePack) {
  fs::path lib = build_into("a");
  fs::path header_dir = dir_ / "a";
  std::ofstream(dir_ / "use.c") << "#include \"tiny.h\"\n#include <stdio.h>\n"
                                   "int main(void) {\n"
                                   "  int64_t t = 7;\n"
                                   "  printf(\"%d %d %d\\n\", dietcode_abi_version(),\n"
                                   "         dietcode_select(\"proj\", &t, 1),\n"
                                   "         tiny_proj(0, 0, 0, t, 0));\n"
                                   "  return 0;\n}\n";
  Shell c99 = run("cc -std=c99 -Wall -Wextra -pedantic -Werror -I'" + header_dir.string() +
                      "' -o '" + (dir_ / "use").string() + "' '" + (dir_ / "use.c").string() +
                      "' -L'" + header_dir.string() + "' -ltiny",
                  dir_);
  ASSERT_EQ(c99.exit_code, 0) << c99.err;
  Shell cpp = run("c++ -std=c++11 -Wall -Wextra -pedantic -Werror -fsyntax-only -x c++ '" +
                      (header_dir / "tiny.h").string() + "'",
                  dir_);
  EXPECT_EQ(cpp.exit_code, 0) << cpp.err;
  Shell use =
      run("LD_LIBRARY_PATH='" + header_dir.string() + "' '" + (dir_ / "use").string() + "'", dir_);
  ASSERT_EQ(use.exit_code, 0) << use.err;
  EXPECT_THAT(use.out, MatchesRegex("4 [0-2] 1\n"));  // ABI 4, a kernel, invalid argument
}

TEST_F(PackTest, EqualInputsGiveByteIdenticalPacksWhereverTheyAreWritten) {
  fs::path a = build_into("a");
  fs::path b = build_into("second_folder");
  ASSERT_TRUE(fs::exists(a) && fs::exists(b));
  EXPECT_TRUE(slurp(a) == slurp(b)) << "libtiny.so differs between two builds";
  EXPECT_EQ(slurp(dir_ / "a" / "tiny.h"), slurp(dir_ / "second_folder" / "tiny.h"));
}

TEST_F(PackTest, InspectExplainsADispatch) {
  fs::path lib = build_into("a");
  testing::internal::CaptureStdout();
  int code = cli::inspect_pack(lib.string(), false, "T=20");
  std::fflush(stdout);
  std::string out = testing::internal::GetCapturedStdout();
  EXPECT_EQ(code, 0);
  EXPECT_THAT(out, HasSubstr("op proj at T=20:\n  path: T=20 "));
  EXPECT_THAT(out, HasSubstr("measured 5.000 us; best measured 5.000 us (time lost 0.000 us)"));
  EXPECT_THAT(out, HasSubstr("runner-up: kernel "));
  EXPECT_THAT(out, HasSubstr("measured 6.000 us"));

  try {
    cli::inspect_pack(lib.string(), false, std::vector<std::string>{"X=3"});
    FAIL();
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "inspect --shape: the pack has no shape variable X (it has T)");
  }

  testing::internal::CaptureStdout();
  cli::inspect_pack(lib.string(), false, "");
  std::fflush(stdout);
  out = testing::internal::GetCapturedStdout();
  EXPECT_THAT(out, HasSubstr("pack tiny ("));
  EXPECT_THAT(out, HasSubstr("if T <= 12:\n"));
  EXPECT_THAT(out, HasSubstr("12 instance(s); time lost mean 0.000 us"));
}

TEST_F(PackTest, RefusesASimulatedLogUnlessAllowed) {
  std::string simulated = (dir_ / "sim.jsonl").string();
  write_log(simulated, true);
  Shell r = build("--log '" + simulated + "' -o '" + (dir_ / "libtiny.so").string() + "'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, simulated +
                       ": 160 measurement(s) come from a simulated device (dietcode tune "
                       "--simulate), a test double, not a GPU; pass --allow-simulated to "
                       "build from them anyway\n");
  EXPECT_FALSE(fs::exists(dir_ / "libtiny.so"));
  r = build("--log '" + simulated + "' -o '" + (dir_ / "libtiny.so").string() +
            "' --arch sm_90 --allow-simulated --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(json::parse(r.out)["choices"].get<std::string>(),
              HasSubstr("simulated (a test double's numbers, not GPU measurements)"));
}

TEST_F(PackTest, BadOptionsAreUserErrors) {
  Shell r = build("--arch sm_xx");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "--arch: 'sm_xx' is not a GPU arch (expected sm_80, sm_90, sm_90a, ...)\n");
  r = build("--log '" + (dir_ / "missing.jsonl").string() + "'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, (dir_ / "missing.jsonl").string() + ": no such tuning log\n");
  r = build("-o '" + (dir_ / "no" / "such" / "libtiny.so").string() + "' --arch sm_90");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("no such folder"));
  for (const char* bad : {"-1", "100"}) {
    r = build(std::string("--arch sm_90 --tie-within ") + bad);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.err, std::string("--tie-within: expected a percentage in [0, 100), got ") + bad +
                         "\n");
  }
}

TEST_F(PackTest, TheTreesAllowForTheTimingNoiseGivenOrMeasured) {
  // The log has no runoff: no noise measured, the times taken as exact.
  Shell r = build("--log '" + log_ + "' -o '" + (dir_ / "libtiny.so").string() +
                  "' --arch sm_90 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json report = json::parse(r.out);
  EXPECT_EQ(report["timing_noise"].get<double>(), 0.0);
  EXPECT_EQ(report["portable_margin"].get<double>(), 0.0);  // a GPU pack's: the times decide
  EXPECT_THAT(report["timing_noise_from"].get<std::string>(), HasSubstr("the log has no runoff"));
  // Given: the report, build's table and inspect say so.
  fs::path lib = build_into("noisy", "--timing-noise 5 --json");
  testing::internal::CaptureStdout();
  cli::inspect_pack(lib.string(), false, "");
  std::fflush(stdout);
  EXPECT_THAT(testing::internal::GetCapturedStdout(),
              HasSubstr("dispatchers fitted for a timing noise of 5.0% of a time"));
  r = build("--log '" + log_ + "' -o '" + lib.string() + "' --arch sm_90 --timing-noise 5");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("timing noise 5.0% of a time (--timing-noise)"));
  for (const char* bad : {"-1", "100"}) {
    r = build(std::string("--arch sm_90 --timing-noise ") + bad);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.err, std::string("--timing-noise: expected a percentage in [0, 100), got ") +
                         bad + "\n");
  }
}

TEST_F(PackTest, WithoutALogTheUntunedPackSaysSo) {
  fs::path lib = dir_ / "libtiny.so";
  Shell r = build("-o '" + lib.string() + "' --arch sm_90");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("no --log given: building an UNTUNED pack"));
  EXPECT_THAT(r.out, HasSubstr("NOTE: this pack is UNTUNED"));
  void* h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_TRUE(h) << dlerror();
  auto manifest = reinterpret_cast<const char* (*)()>(dlsym(h, "dietcode_manifest"));
  json m = json::parse(manifest());
  EXPECT_EQ(m["choices"], "untuned (template defaults)");
  EXPECT_EQ(m["ops"][0]["kernels"].size(), 1u);
  dlclose(h);
}

}  // namespace
}  // namespace dietcode

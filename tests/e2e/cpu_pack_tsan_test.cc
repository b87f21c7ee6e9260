// A CPU pack under ThreadSanitizer: the pack's generated sources (kernel units, the manifest
// unit and the CPU runtime with its thread pool), recompiled with -fsanitize=thread, launched
// by four threads at once on a pool of two, with every result checked, two of them on weights
// declared constant that a fifth thread declares again and forgets all along. Any data race in
// the runtime, the pool hand-off, the constant weights' copies or the kernels' per-thread
// scratch fails the test.
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "e2e/cli_util.h"

namespace dietcode {
namespace {

namespace fs = std::filesystem;
using test::CommandResult;
using ::testing::HasSubstr;
using ::testing::Not;

const char* kClient = R"(
#include <dlfcn.h>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <thread>
#include <vector>
using Launch = int (*)(const char*, void* const*, int, const int64_t*, int, void*);
int main(int, char** argv) {
  void* lib = dlopen(argv[1], RTLD_NOW);
  if (!lib) { std::printf("dlopen: %s\n", dlerror()); return 2; }
  auto launch = (Launch)dlsym(lib, "dietcode_launch");
  auto error = (const char* (*)())dlsym(lib, "dietcode_last_error");
  ((int (*)(int))dlsym(lib, "dietcode_set_num_threads"))(2);
  using Constant = int (*)(const char*, int, const void*);
  auto declare = (Constant)dlsym(lib, "dietcode_declare_constant");
  auto forget = (Constant)dlsym(lib, "dietcode_forget_constant");
  std::vector<float> shared_w(32 * 16, 0.25f);
  declare("d", 1, shared_w.data());
  std::atomic<bool> done{false};
  std::thread churn([&] {
    for (int i = 0; !done; ++i) i % 2 ? forget("d", 1, shared_w.data()) : declare("d", 1, shared_w.data());
  });
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&, i] {
      for (int round = 0; round < 8; ++round) {
        const int64_t T = 1 + (i * 3 + round) % 8, M = T, N = 32, K = 16;
        std::vector<float> x(M * K, 0.5f), w(N * K, 0.25f), b(N, 1.0f), y(M * N, 0.0f);
        void* args[4] = {x.data(), i % 2 ? shared_w.data() : w.data(), b.data(), y.data()};
        if (launch("d", args, 4, &T, 1, nullptr)) { std::printf("launch: %s\n", error()); ++failures; }
        for (float v : y)
          if (v != 1.0f + K * 0.125f) { std::printf("wrong result %g\n", v); ++failures; break; }
      }
    });
  for (auto& t : threads) t.join();
  done = true;
  churn.join();
  std::printf("failures %d\n", failures.load());
  return failures ? 1 : 0;
}
)";

TEST(CpuPackTsan, FourThreadsLaunchingAtOnceRaceNowhere) {
  if (!__builtin_cpu_supports("avx2")) GTEST_SKIP() << "this CPU has no AVX2";
  test::TempDir tmp;
  const fs::path dir = tmp.path();
  std::ofstream(dir / "w.json") << R"({"name": "tsan", "shape_vars": {"T": {"min": 1, "max": 8}},
    "ops": [{"name": "d", "op": "dense", "dtype": "float32", "M": "T", "N": 32, "K": 16,
             "epilogue": "bias"}]})";
  CommandResult built = test::run_cli({"build", (dir / "w.json").string(), "--target", "cpu",
                                       "--arch", "x86-64-v3", "--keep-build-dir", "-o",
                                       (dir / "libw.so").string()});
  ASSERT_EQ(built.exit_code, 0) << built.summary();
  std::smatch kept;
  ASSERT_TRUE(std::regex_search(built.err, kept, std::regex("pack sources kept in (\\S+)")))
      << built.err;
  const fs::path sources = kept[1].str();

  // The pack's own translation units, as pack_writer compiles them, with TSan added.
  std::vector<std::string> cxx = {"g++", "-std=c++17", "-O1", "-g", "-march=x86-64-v3",
                                  "-fPIC", "-fsanitize=thread", "-pthread", "-shared",
                                  "-I" + sources.string(), "-I" + (sources / "include").string(),
                                  "-o", (dir / "libw_tsan.so").string()};
  // A CPU pack's units: its kernels, the manifest/dispatch unit and the CPU runtime (the
  // folder also holds the GPU runtime's text, which a CPU pack does not compile).
  for (const auto& entry : fs::directory_iterator(sources)) {
    const std::string name = entry.path().filename().string();
    if ((name.rfind("kernel_", 0) == 0 && entry.path().extension() == ".cc") ||
        name == "pack.cc" || name == "pack_runtime_cpu.cc")
      cxx.push_back(entry.path().string());
  }
  CommandResult pack = test::run_command(cxx);
  ASSERT_EQ(pack.exit_code, 0) << pack.summary();
  std::ofstream(dir / "client.cc") << kClient;
  CommandResult client = test::run_command({"g++", "-std=c++17", "-O1", "-g", "-fsanitize=thread",
                                            "-pthread", (dir / "client.cc").string(), "-o",
                                            (dir / "client").string(), "-ldl"});
  ASSERT_EQ(client.exit_code, 0) << client.summary();

  CommandResult run = test::run_command({(dir / "client").string(), (dir / "libw_tsan.so").string()});
  EXPECT_EQ(run.exit_code, 0) << run.summary();
  EXPECT_THAT(run.out, HasSubstr("failures 0"));
  EXPECT_THAT(run.out + run.err, Not(HasSubstr("ThreadSanitizer")));
  std::error_code ec;
  fs::remove_all(sources, ec);
}

}  // namespace
}  // namespace dietcode

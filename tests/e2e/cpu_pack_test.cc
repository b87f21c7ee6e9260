// CPU kernel packs end to end: a workload with dense (bias + GELU), batch_matmul and conv2d ops
// and a handwritten tuning log of x86 templates (records as `dietcode tune` writes them on a
// CPU) become packs with `dietcode build`, which are dlopen'ed here and launched with host
// pointers; every result is held against a plain reference on odd shapes (T = 1, 37, 129).
//
// Three packs are built once for the suite:
//   v3    AVX2 kernels only: the level is x86-64-v3 (runs on any CI machine with AVX2)
//   both  AVX2 and AVX-512 kernels: x86-64-v3 and x86-64-v4, one dispatcher each
//   v4    the same log with --arch x86-64-v4: one dispatcher, for v4 CPUs alone
// A CPU without AVX-512 runs everything but the AVX-512 kernels; DIETCODE_CPU_LEVEL=3 makes this
// one look like such a CPU to a freshly loaded pack (the runtime reads it once per load).
#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <thread>

#include "dietcode/pack_abi.h"
#include "search/tuning_log.h"
#include "workload/workload.h"

namespace dietcode {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

const char kWorkload[] = R"({"name": "cpupack",
  "shape_vars": {"T": {"min": 1, "max": 129}},
  "ops": [
    {"name": "proj", "op": "dense", "dtype": "float32", "M": "T", "N": 129, "K": 37,
     "epilogue": "bias_gelu"},
    {"name": "scores", "op": "batch_matmul", "dtype": "float32", "B": 3, "M": "T", "N": 37,
     "K": 129},
    {"name": "conv", "op": "conv2d", "dtype": "float32", "layout": "NHWC", "N": "T", "H": 9,
     "W": 7, "C": 5, "K": 17, "R": 3, "S": 3, "stride": 2, "pad": 1, "epilogue": "bias_relu"}
  ]})";

// Two AVX2 kernels (the first the fastest up to T = 20, the second above) and an AVX-512 one
// that beats both above T = 64.
const MicroKernel kAvx2Small{"x86_avx2_f32", {}};
const MicroKernel kAvx2Large{"x86_avx2_f32",
                             {{"MR", 4}, {"NR", 24}, {"KC", 64}, {"MC", 48}, {"NC", 768}}};
const MicroKernel kAvx512{"x86_avx512_f32", {{"MR", 8}, {"NR", 32}, {"MC", 96}, {"NC", 1024}}};

struct Shell {
  int exit_code = -1;
  std::string out;
};

Shell run(const std::string& command) {
  Shell r;
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

bool cpu_has_avx512() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
}

// The pack's C ABI, from dlopen. Each Pack loads its own copy of the file, so a test can set
// DIETCODE_CPU_LEVEL before a load that has not yet read it.
struct Pack {
  void* handle = nullptr;
  int (*abi_version)() = nullptr;
  const char* (*manifest)() = nullptr;
  const char* (*last_error)() = nullptr;
  int (*select)(const char*, const int64_t*, int) = nullptr;
  int (*select_arch)(const char*, int, const int64_t*, int) = nullptr;
  int (*launch)(const char*, void* const*, int, const int64_t*, int, void*) = nullptr;
  int (*set_num_threads)(int) = nullptr;
  int (*num_threads)() = nullptr;
  int (*declare_constant)(const char*, int, const void*) = nullptr;
  int (*forget_constant)(const char*, int, const void*) = nullptr;

  explicit Pack(const fs::path& library) {
    static std::atomic<int> copies{0};
    fs::path copy = library.parent_path() /
                    ("copy" + std::to_string(copies++) + "_" + library.filename().string());
    fs::copy_file(library, copy, fs::copy_options::overwrite_existing);
    handle = dlopen(copy.c_str(), RTLD_NOW | RTLD_LOCAL);
    EXPECT_TRUE(handle) << dlerror();
    if (!handle) return;
    auto get = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(handle, name));
      EXPECT_TRUE(fn) << name;
    };
    get(abi_version, "dietcode_abi_version");
    get(manifest, "dietcode_manifest");
    get(last_error, "dietcode_last_error");
    get(select, "dietcode_select");
    get(select_arch, "dietcode_select_arch");
    get(launch, "dietcode_launch");
    get(set_num_threads, "dietcode_set_num_threads");
    get(num_threads, "dietcode_num_threads");
    get(declare_constant, "dietcode_declare_constant");
    get(forget_constant, "dietcode_forget_constant");
  }
  // Never dlclose'd: a pack's thread-local kernel scratch keeps it loaded anyway, and the
  // process ends soon.
};

// One op's operands at one shape, the launch arguments, and the reference result.
struct Problem {
  std::vector<float> a, b, bias, c, want, scale;  // scale: the tolerance's per-element measure
  std::vector<void*> args;
  int64_t t = 0;
};

float uniform(std::mt19937& rng) { return std::uniform_real_distribution<float>(-1, 1)(rng); }

double gelu(double v) {
  return 0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
}

Problem make_problem(const std::string& op, int64_t t, unsigned seed) {
  std::mt19937 rng(seed);
  Problem p;
  p.t = t;
  auto fill = [&](std::vector<float>& v, size_t n) {
    v.resize(n);
    for (float& x : v) x = uniform(rng);
  };
  if (op == "proj") {  // Y[T,129] = gelu(X[T,37] . W[129,37]^T + bias)
    const int64_t M = t, N = 129, K = 37;
    fill(p.a, M * K), fill(p.b, N * K), fill(p.bias, N);
    p.want.resize(M * N), p.scale.resize(M * N);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double sum = p.bias[j], mag = std::fabs(p.bias[j]);
        for (int64_t k = 0; k < K; ++k) {
          sum += double(p.a[i * K + k]) * p.b[j * K + k];
          mag += std::fabs(double(p.a[i * K + k]) * p.b[j * K + k]);
        }
        p.want[i * N + j] = float(gelu(sum));
        p.scale[i * N + j] = float(mag);
      }
    p.c.assign(M * N, NAN);
    p.args = {p.a.data(), p.b.data(), p.bias.data(), p.c.data()};
  } else if (op == "scores") {  // Y[3,T,37] = A[3,T,129] . B[3,129,37]
    const int64_t B = 3, M = t, N = 37, K = 129;
    fill(p.a, B * M * K), fill(p.b, B * K * N);
    p.want.resize(B * M * N), p.scale.resize(B * M * N);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          double sum = 0, mag = 0;
          for (int64_t k = 0; k < K; ++k) {
            double x = double(p.a[(b * M + i) * K + k]) * p.b[(b * K + k) * N + j];
            sum += x, mag += std::fabs(x);
          }
          p.want[(b * M + i) * N + j] = float(sum);
          p.scale[(b * M + i) * N + j] = float(mag);
        }
    p.c.assign(B * M * N, NAN);
    p.args = {p.a.data(), p.b.data(), p.c.data()};
  } else {  // conv: NHWC [T,9,7,5] * KRSC [17,3,3,5], stride 2, pad 1 -> [T,5,4,17], bias, relu
    const int64_t N = t, H = 9, W = 7, C = 5, K = 17, R = 3, S = 3, P = 5, Q = 4;
    fill(p.a, N * H * W * C), fill(p.b, K * R * S * C), fill(p.bias, K);
    p.want.resize(N * P * Q * K), p.scale.resize(N * P * Q * K);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t y = 0; y < P; ++y)
        for (int64_t x = 0; x < Q; ++x)
          for (int64_t k = 0; k < K; ++k) {
            double sum = p.bias[k], mag = std::fabs(p.bias[k]);
            for (int64_t r = 0; r < R; ++r)
              for (int64_t s = 0; s < S; ++s) {
                int64_t h = y * 2 - 1 + r, w = x * 2 - 1 + s;
                if (h < 0 || h >= H || w < 0 || w >= W) continue;
                for (int64_t c = 0; c < C; ++c) {
                  double v = double(p.a[((n * H + h) * W + w) * C + c]) *
                             p.b[((k * R + r) * S + s) * C + c];
                  sum += v, mag += std::fabs(v);
                }
              }
            int64_t at = ((n * P + y) * Q + x) * K + k;
            p.want[at] = float(sum > 0 ? sum : 0);
            p.scale[at] = float(mag);
          }
    p.c.assign(N * P * Q * K, NAN);
    p.args = {p.a.data(), p.b.data(), p.bias.data(), p.c.data()};
  }
  return p;
}

// "" when every element is within tolerance, else the first that is not.
std::string mismatch(const Problem& p) {
  for (size_t i = 0; i < p.want.size(); ++i) {
    double tolerance = 1e-5 * (std::fabs(p.want[i]) + p.scale[i]) + 1e-6;
    if (!(std::fabs(double(p.c[i]) - p.want[i]) <= tolerance))
      return "element " + std::to_string(i) + ": got " + std::to_string(p.c[i]) + ", want " +
             std::to_string(p.want[i]);
  }
  return "";
}

const char* const kOps[] = {"proj", "scores", "conv"};

// Launches op at T = t through dietcode_launch and checks the result; "" when right.
std::string launch_and_check(const Pack& pack, const std::string& op, int64_t t, unsigned seed) {
  Problem p = make_problem(op, t, seed);
  int status = pack.launch(op.c_str(), p.args.data(), int(p.args.size()), &p.t, 1, nullptr);
  if (status != DIETCODE_OK)
    return op + " T=" + std::to_string(t) + ": status " + std::to_string(status) + ": " +
           pack.last_error();
  std::string bad = mismatch(p);
  return bad.empty() ? "" : op + " T=" + std::to_string(t) + ": " + bad;
}

class CpuPackTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::temp_directory_path() /
                        ("dietcode_cpu_pack_test_" + std::to_string(getpid())));
    fs::remove_all(*dir_);
    fs::create_directories(*dir_);
    std::ofstream(*dir_ / "cpupack.json") << kWorkload;
    write_log(*dir_ / "avx2.jsonl", false);
    write_log(*dir_ / "both.jsonl", true);
    build("v3", "avx2.jsonl", "");
    build("both", "both.jsonl", "");
    build("v4", "both.jsonl", "--arch x86-64-v4");
  }
  static void TearDownTestSuite() {
    if (!::testing::UnitTest::GetInstance()->Failed()) fs::remove_all(*dir_);
    delete dir_;
  }

  // Every kernel at every instance of every op; latencies make the bands described above.
  static void write_log(const fs::path& path, bool with_avx512) {
    Workload w = parse_workload(kWorkload, "cpupack.json");
    TuningLogWriter log(path.string());
    for (const OpSpec& op : w.ops)
      for (const Instance& inst : expand_instances(w, op)) {
        int64_t t = inst.values[0];
        std::vector<std::pair<MicroKernel, double>> timed = {
            {kAvx2Small, t <= 20 ? 5.0 : 7.0}, {kAvx2Large, t <= 20 ? 6.0 : 5.0}};
        if (with_avx512) timed.push_back({kAvx512, t > 64 ? 4.0 : 8.0});
        for (const auto& [mk, us] : timed) {
          TuningRecord r;
          r.workload = w.name;
          r.op = op.name;
          r.mk = mk;
          r.shape = {{"T", t}};
          r.gemm = inst.gemm;
          r.latency_us = us + 0.01 * double(t);
          r.device = "test CPU";
          r.arch = mk.tmpl == "x86_avx512_f32" ? "x86-64-v4" : "x86-64-v3";
          r.tool_version = "0.1.0";
          r.timestamp = "2025-01-01T00:00:00.000Z";
          log.append(r);
        }
      }
  }

  static void build(const std::string& name, const std::string& log, const std::string& extra) {
    fs::create_directories(*dir_ / name);
    // One cache for every process of this suite (ctest runs each test in its own): the first
    // build compiles the kernels, the others take their objects from the cache. The builds
    // take turns (flock), or the two processes ctest -j2 starts first both compile everything.
    const fs::path cache =
        fs::temp_directory_path() / ("dietcode_cpu_pack_test_cache_" + std::to_string(getuid()));
    Shell r = run("cd '" + dir_->string() + "' && DIETCODE_CACHE_DIR='" + cache.string() +
                  "' flock '" + cache.string() + ".lock' '" DIETCODE_CLI_PATH
                  "' build cpupack.json --log " + log + " -o " + name + "/libcpupack.so " + extra);
    ASSERT_EQ(r.exit_code, 0) << r.out;
  }

  static fs::path library(const std::string& name) { return *dir_ / name / "libcpupack.so"; }
  static nlohmann::json manifest(const std::string& name) {
    Pack pack(library(name));
    return nlohmann::json::parse(pack.manifest());
  }

  static fs::path* dir_;
};

fs::path* CpuPackTest::dir_ = nullptr;

TEST_F(CpuPackTest, TheManifestSaysCpuAndItsLevelsWithADispatcherPerLevelGroup) {
  nlohmann::json v3 = manifest("v3"), both = manifest("both"), v4 = manifest("v4");
  EXPECT_EQ(v3["target"], "cpu");
  EXPECT_EQ(v3["abi_version"], 4);
  EXPECT_EQ(v3["archs"], nlohmann::json({"x86-64-v3"}));
  EXPECT_EQ(both["archs"], nlohmann::json({"x86-64-v3", "x86-64-v4"}));
  EXPECT_EQ(v4["archs"], nlohmann::json({"x86-64-v4"}));
  for (const nlohmann::json& op : both["ops"]) {
    ASSERT_EQ(op["dispatchers"].size(), 2u) << op["name"];
    EXPECT_EQ(op["dispatchers"][0]["archs"], nlohmann::json({"x86-64-v4"}));
    EXPECT_EQ(op["dispatchers"][1]["archs"], nlohmann::json({"x86-64-v3"}));
    EXPECT_EQ(op["kernels"].size(), 3u);
  }
  for (const nlohmann::json& op : v4["ops"]) EXPECT_FALSE(op.contains("dispatchers"));

  Shell inspect = run("'" DIETCODE_CLI_PATH "' inspect '" + library("both").string() + "'");
  ASSERT_EQ(inspect.exit_code, 0) << inspect.out;
  EXPECT_THAT(inspect.out, HasSubstr("CPU pack (host pointers, NULL stream) for x86-64-v3, "
                                     "x86-64-v4"));
  EXPECT_THAT(inspect.out, HasSubstr("on x86-64-v3:"));
  EXPECT_THAT(inspect.out, HasSubstr("x86-64-v4, register tile 8x32"));
}

TEST_F(CpuPackTest, SelectAndSelectArchTakeTheLevel) {
  Pack pack(library("both"));
  const int64_t small = 1, large = 129;
  // Kernel ids: the v4 dispatcher's first (manifest order); AVX-512 wins above T = 64 on v4.
  nlohmann::json m = nlohmann::json::parse(pack.manifest());
  auto key = [&](int id) { return m["ops"][0]["kernels"][id]["key"].get<std::string>(); };
  int on_v4 = pack.select("proj", &large, 1);
  ASSERT_GE(on_v4, 0);
  EXPECT_EQ(key(on_v4), kAvx512.key());
  EXPECT_EQ(pack.select_arch("proj", 4, &large, 1), on_v4);
  int on_v3 = pack.select_arch("proj", 3, &large, 1);
  ASSERT_GE(on_v3, 0);
  EXPECT_EQ(key(on_v3), kAvx2Large.key());
  EXPECT_EQ(key(pack.select_arch("proj", 3, &small, 1)), kAvx2Small.key());
  EXPECT_EQ(pack.select_arch("proj", 2, &large, 1), -DIETCODE_ERR_ARCH_MISMATCH);
  EXPECT_THAT(pack.last_error(), HasSubstr("x86-64-v2"));
  EXPECT_EQ(pack.select_arch("proj", 90, &large, 1), -DIETCODE_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(pack.last_error(), HasSubstr("not an x86-64 level"));

  Pack v4(library("v4"));
  EXPECT_EQ(v4.select_arch("proj", 3, &large, 1), -DIETCODE_ERR_ARCH_MISMATCH);
  EXPECT_STREQ(v4.last_error(),
               "op proj: no dispatcher runs on x86-64-v3; the pack's kernels need x86-64-v4");
}

TEST_F(CpuPackTest, Avx2KernelsComputeEveryOpOnOddShapes) {
  // The AVX2-only pack runs wherever AVX2 does.
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
    GTEST_SKIP() << "this CPU has no AVX2";
  Pack pack(library("v3"));
  for (const char* op : kOps)
    for (int64_t t : {1, 2, 37, 129}) EXPECT_EQ(launch_and_check(pack, op, t, unsigned(t)), "");
}

TEST_F(CpuPackTest, TheTypedWrapperTakesHostPointersAndANullStream) {
  if (!__builtin_cpu_supports("avx2")) GTEST_SKIP() << "this CPU has no AVX2";
  Pack pack(library("v3"));
  using Wrapper = int (*)(const float*, const float*, const float*, float*, int64_t, void*);
  auto proj = reinterpret_cast<Wrapper>(dlsym(pack.handle, "cpupack_proj"));
  ASSERT_TRUE(proj);
  Problem p = make_problem("proj", 37, 5);
  ASSERT_EQ(proj(p.a.data(), p.b.data(), p.bias.data(), p.c.data(), 37, nullptr), DIETCODE_OK)
      << pack.last_error();
  EXPECT_EQ(mismatch(p), "");
  int stream = 0;
  EXPECT_EQ(proj(p.a.data(), p.b.data(), p.bias.data(), p.c.data(), 37, &stream),
            DIETCODE_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(pack.last_error(), HasSubstr("stream must be NULL"));
  // The GPU path's checks: a NULL argument, a shape value below 1, overlapping output.
  EXPECT_EQ(proj(nullptr, p.b.data(), p.bias.data(), p.c.data(), 37, nullptr),
            DIETCODE_ERR_INVALID_ARGUMENT);
  EXPECT_STREQ(pack.last_error(), "op proj: argument X is NULL");
  EXPECT_EQ(proj(p.a.data(), p.b.data(), p.bias.data(), p.c.data(), 0, nullptr),
            DIETCODE_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(proj(p.a.data(), p.b.data(), p.bias.data(), p.a.data(), 37, nullptr),
            DIETCODE_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(pack.last_error(), HasSubstr("overlaps input X"));
  EXPECT_EQ(proj(p.a.data(), p.b.data(), p.bias.data(),
                 reinterpret_cast<float*>(reinterpret_cast<char*>(p.c.data()) + 1), 37, nullptr),
            DIETCODE_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(pack.last_error(), HasSubstr("not aligned"));
}

TEST_F(CpuPackTest, Avx512KernelsRunWhereTheCpuHasThem) {
  if (!cpu_has_avx512()) GTEST_SKIP() << "this CPU has no AVX-512";
  for (const char* name : {"both", "v4"}) {
    Pack pack(library(name));
    for (const char* op : kOps)
      for (int64_t t : {1, 37, 100, 129})
        EXPECT_EQ(launch_and_check(pack, op, t, unsigned(t) + 7), "") << name;
  }
}

TEST_F(CpuPackTest, ACpuCappedAtV3UsesTheAvx2DispatcherOrIsRefused) {
  if (!__builtin_cpu_supports("avx2")) GTEST_SKIP() << "this CPU has no AVX2";
  // Read by each pack on its first launch; these copies are loaded for this test alone.
  ASSERT_EQ(setenv("DIETCODE_CPU_LEVEL", "3", 1), 0);
  Pack both(library("both")), v4(library("v4"));
  // T = 129 is the AVX-512 kernel's on v4: on this "v3" CPU the v3 dispatcher answers.
  for (const char* op : kOps) EXPECT_EQ(launch_and_check(both, op, 129, 11), "");
  Problem p = make_problem("proj", 129, 3);
  EXPECT_EQ(v4.launch("proj", p.args.data(), 4, &p.t, 1, nullptr), DIETCODE_ERR_ARCH_MISMATCH);
  EXPECT_STREQ(v4.last_error(),
               "op proj: this CPU is x86-64-v3; the pack's kernels need x86-64-v4");
  unsetenv("DIETCODE_CPU_LEVEL");
}

TEST_F(CpuPackTest, SeveralThreadsLaunchAtOnce) {
  if (!__builtin_cpu_supports("avx2")) GTEST_SKIP() << "this CPU has no AVX2";
  Pack pack(library(cpu_has_avx512() ? "both" : "v3"));
  ASSERT_EQ(pack.set_num_threads(3), DIETCODE_OK);
  std::vector<std::string> errors(4);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&, i] {
      for (int round = 0; round < 6 && errors[i].empty(); ++round) {
        const char* op = kOps[(i + round) % 3];
        int64_t t = (i * 41 + round * 23) % 129 + 1;
        errors[i] = launch_and_check(pack, op, t, unsigned(i * 100 + round));
      }
    });
  for (std::thread& t : threads) t.join();
  for (const std::string& e : errors) EXPECT_EQ(e, "");
}

// Launches op with p's arguments at p.t; "" when the result is right.
std::string relaunch_and_check(const Pack& pack, const std::string& op, Problem& p) {
  std::fill(p.c.begin(), p.c.end(), NAN);
  int status = pack.launch(op.c_str(), p.args.data(), int(p.args.size()), &p.t, 1, nullptr);
  if (status != DIETCODE_OK) return "status " + std::to_string(status) + ": " + pack.last_error();
  return mismatch(p);
}

// Gives p the operands and reference of q (same op and T) in p's own buffers, so p's argument
// pointers stay the same and its weights change in place.
void overwrite(Problem& p, const Problem& q) {
  std::copy(q.a.begin(), q.a.end(), p.a.begin());
  std::copy(q.b.begin(), q.b.end(), p.b.begin());
  std::copy(q.bias.begin(), q.bias.end(), p.bias.begin());
  p.want = q.want, p.scale = q.scale;
}

// Declared weights are packed once per kernel layout and read from that copy: right results at
// T values that pick every kernel (three layouts with AVX-512), again from the copy; the copy,
// not W, is what a launch reads while W is declared (changed weights give the old result until
// declared again); forgetting returns to W itself.
TEST_F(CpuPackTest, DeclaredConstantWeightsArePackedOnceAndReadFromTheCopy) {
  if (!__builtin_cpu_supports("avx2")) GTEST_SKIP() << "this CPU has no AVX2";
  Pack pack(library(cpu_has_avx512() ? "both" : "v3"));
  for (const char* op : {"proj", "conv"})
    for (int64_t t : {1, 37, 129}) {
      SCOPED_TRACE(std::string(op) + " T=" + std::to_string(t));
      Problem p = make_problem(op, t, 7);
      ASSERT_EQ(pack.declare_constant(op, 1, p.b.data()), DIETCODE_OK) << pack.last_error();
      EXPECT_EQ(relaunch_and_check(pack, op, p), "");  // packs the copy
      EXPECT_EQ(relaunch_and_check(pack, op, p), "");  // reads it
      overwrite(p, make_problem(op, t, 8));
      EXPECT_NE(relaunch_and_check(pack, op, p), "") << "the launch did not read the copy";
      ASSERT_EQ(pack.declare_constant(op, 1, p.b.data()), DIETCODE_OK);  // W changed: again
      EXPECT_EQ(relaunch_and_check(pack, op, p), "");
      ASSERT_EQ(pack.forget_constant(op, 1, p.b.data()), DIETCODE_OK) << pack.last_error();
      overwrite(p, make_problem(op, t, 9));
      EXPECT_EQ(relaunch_and_check(pack, op, p), "");  // W itself again
    }
}

TEST_F(CpuPackTest, ConstantDeclarationsAreChecked) {
  Pack pack(library("v3"));
  float w[4];
  auto refused = [&](int status, int code, const char* says) {
    EXPECT_EQ(status, code);
    EXPECT_THAT(std::string(pack.last_error()), HasSubstr(says));
  };
  refused(pack.declare_constant(nullptr, 1, w), DIETCODE_ERR_INVALID_ARGUMENT, "op is NULL");
  refused(pack.declare_constant("nope", 1, w), DIETCODE_ERR_UNKNOWN_OP, "unknown op 'nope'");
  refused(pack.declare_constant("scores", 1, w), DIETCODE_ERR_INVALID_ARGUMENT,
          "op scores has no weights to declare constant");
  refused(pack.declare_constant("proj", 0, w), DIETCODE_ERR_INVALID_ARGUMENT,
          "argument 0 is not its weights; only argument 1 (W)");
  refused(pack.declare_constant("conv", 3, w), DIETCODE_ERR_INVALID_ARGUMENT,
          "argument 3 is not its weights");
  refused(pack.declare_constant("proj", 1, nullptr), DIETCODE_ERR_INVALID_ARGUMENT,
          "data (W) is NULL");
  refused(pack.forget_constant("proj", 1, w), DIETCODE_ERR_INVALID_ARGUMENT,
          "was not declared constant");
  EXPECT_EQ(pack.declare_constant("proj", 1, w), DIETCODE_OK);
  EXPECT_EQ(pack.declare_constant("proj", 1, w), DIETCODE_OK);  // again: fine
  refused(pack.forget_constant("conv", 1, w), DIETCODE_ERR_INVALID_ARGUMENT,
          "op conv: 0x");  // declared for proj, not for conv
  EXPECT_EQ(pack.forget_constant("proj", 1, w), DIETCODE_OK);
  refused(pack.forget_constant("proj", 1, w), DIETCODE_ERR_INVALID_ARGUMENT, "not declared");
}

// Launches of declared weights from several threads while another declares them again and
// forgets them over and over: every launch is right, whichever copy (or W) it reads.
TEST_F(CpuPackTest, ConstantWeightsUnderConcurrentLaunchesAndRedeclarations) {
  if (!__builtin_cpu_supports("avx2")) GTEST_SKIP() << "this CPU has no AVX2";
  Pack pack(library(cpu_has_avx512() ? "both" : "v3"));
  ASSERT_EQ(pack.set_num_threads(2), DIETCODE_OK);
  // Problems shared by every thread (each thread has its own output): two ops, two T each.
  const std::vector<std::pair<const char*, int64_t>> cases = {
      {"proj", 1}, {"proj", 129}, {"conv", 1}, {"conv", 37}};
  std::vector<Problem> shared;
  for (const auto& [op, t] : cases) {
    shared.push_back(make_problem(op, t, 11));
    ASSERT_EQ(pack.declare_constant(op, 1, shared.back().b.data()), DIETCODE_OK);
  }
  std::atomic<bool> done{false};
  std::thread churn([&] {
    for (int i = 0; !done; ++i) {
      const size_t c = size_t(i) % cases.size();
      if (i / cases.size() % 2)
        pack.forget_constant(cases[c].first, 1, shared[c].b.data());
      else
        pack.declare_constant(cases[c].first, 1, shared[c].b.data());
    }
  });
  std::vector<std::string> errors(3);
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i)
    threads.emplace_back([&, i] {
      for (int round = 0; round < 16 && errors[i].empty(); ++round) {
        const size_t c = size_t(i + round) % cases.size();
        Problem p = shared[c];  // copies: its own output, the shared inputs
        p.args = shared[c].args;
        p.args.back() = p.c.data();
        errors[i] = relaunch_and_check(pack, cases[c].first, p);
      }
    });
  for (std::thread& t : threads) t.join();
  done = true;
  churn.join();
  for (const std::string& e : errors) EXPECT_EQ(e, "");
}

TEST_F(CpuPackTest, TheThreadCountIsSettable) {
  if (!__builtin_cpu_supports("avx2")) GTEST_SKIP() << "this CPU has no AVX2";
  Pack pack(library("v3"));
  const int cores = pack.num_threads();
  EXPECT_GE(cores, 1);
  EXPECT_EQ(pack.set_num_threads(-1), DIETCODE_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(pack.last_error(), HasSubstr("dietcode_set_num_threads(-1)"));
  EXPECT_EQ(pack.num_threads(), cores);
  for (int n : {1, 3, 0}) {
    ASSERT_EQ(pack.set_num_threads(n), DIETCODE_OK);
    EXPECT_EQ(pack.num_threads(), n == 0 ? cores : n);
    EXPECT_EQ(launch_and_check(pack, "proj", 129, unsigned(n)), "");
    EXPECT_EQ(pack.num_threads(), n == 0 ? cores : n);
  }
}

double process_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

// CPU time the process spends in the 100 ms after a launch on a fresh pool of 2 threads made
// with DIETCODE_CPU_SPIN_US set to `spin` (each Pack is a copy of the file with its own pool).
double cpu_seconds_after_a_launch(const fs::path& library, const char* spin) {
  setenv("DIETCODE_CPU_SPIN_US", spin, 1);
  Pack pack(library);
  EXPECT_EQ(pack.set_num_threads(2), DIETCODE_OK);
  EXPECT_EQ(launch_and_check(pack, "proj", 37, 5), "");
  unsetenv("DIETCODE_CPU_SPIN_US");
  const double before = process_cpu_seconds();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  return process_cpu_seconds() - before;
}

TEST_F(CpuPackTest, ItsPoolPollsAsLongAsTheEnvironmentSays) {
  if (!__builtin_cpu_supports("avx2")) GTEST_SKIP() << "this CPU has no AVX2";
  // 0: the pool thread sleeps at once. 1 s: it polls through the whole 100 ms (on a loaded
  // machine it still gets a good share of a core).
  const double quiet = cpu_seconds_after_a_launch(library("v3"), "0");
  EXPECT_LT(quiet, 0.010) << "a pool told to poll 0 us spent " << quiet << " s of CPU in 0.1 s";
  const double polling = cpu_seconds_after_a_launch(library("v3"), "1000000");
  EXPECT_GT(polling, 0.020) << "a pool told to poll 1 s spent " << polling << " s of CPU in 0.1 s";
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));  // until it sleeps
}

TEST_F(CpuPackTest, ExportsTheAbiAndNeverTouchesTheDriver) {
  fs::path lib = library("v3");
  Shell nm = run("nm -D --defined-only '" + lib.string() + "' | awk '{print $3}' | sort");
  ASSERT_EQ(nm.exit_code, 0);
  EXPECT_EQ(nm.out,
            "cpupack_conv\ncpupack_proj\ncpupack_scores\n"
            "dietcode_abi_version\ndietcode_declare_constant\ndietcode_forget_constant\n"
            "dietcode_last_error\ndietcode_launch\ndietcode_manifest\n"
            "dietcode_num_threads\ndietcode_select\ndietcode_select_arch\n"
            "dietcode_set_num_threads\n");
  Shell readelf = run("readelf -d '" + lib.string() + "'");
  EXPECT_THAT(readelf.out, Not(HasSubstr("libcuda")));
  // Nor at run time: the pack's launches leave libcuda unloaded.
  if (!__builtin_cpu_supports("avx2")) return;
  Pack pack(lib);
  EXPECT_EQ(launch_and_check(pack, "scores", 5, 1), "");
  Shell maps = run("cat /proc/" + std::to_string(getpid()) + "/maps");
  EXPECT_THAT(maps.out, Not(HasSubstr("libcuda")));
}

// A program written for ABI 2 (checking >= 2, calling dietcode_select_arch with the level) and
// examples/c/run_pack.c (ABI 1 calls, and ABI 4's constant weights where the pack has them)
// both work with a CPU pack unchanged.
TEST_F(CpuPackTest, ProgramsForOlderAbiVersionsKeepWorking) {
  if (!__builtin_cpu_supports("avx2")) GTEST_SKIP() << "this CPU has no AVX2";
  std::ofstream(*dir_ / "abi2.c")
      << "#include <dlfcn.h>\n#include <stdint.h>\n#include <stdio.h>\n"
         "int main(int argc, char** argv) {\n"
         "  void* pack = dlopen(argv[1], RTLD_NOW);\n"
         "  if (!pack) return 10;\n"
         "  int (*abi)(void) = (int (*)(void))dlsym(pack, \"dietcode_abi_version\");\n"
         "  if (abi() < 2) return 11;  /* what it needs: select_arch, added in 2 */\n"
         "  int (*select_arch)(const char*, int, const int64_t*, int) =\n"
         "      (int (*)(const char*, int, const int64_t*, int))dlsym(pack, "
         "\"dietcode_select_arch\");\n"
         "  int (*launch)(const char*, void* const*, int, const int64_t*, int, void*) =\n"
         "      (int (*)(const char*, void* const*, int, const int64_t*, int, void*))dlsym(\n"
         "          pack, \"dietcode_launch\");\n"
         "  int64_t t = 2;\n"
         "  float a[3 * 2 * 129], b[3 * 129 * 37], c[3 * 2 * 37];\n"
         "  for (int i = 0; i < 3 * 2 * 129; ++i) a[i] = 1;\n"
         "  for (int i = 0; i < 3 * 129 * 37; ++i) b[i] = 0.5f;\n"
         "  void* args[] = {a, b, c};\n"
         "  if (select_arch(\"scores\", 3, &t, 1) < 0) return 12;\n"
         "  if (launch(\"scores\", args, 3, &t, 1, NULL) != 0) return 13;\n"
         "  for (int i = 0; i < 3 * 2 * 37; ++i) if (c[i] != 64.5f) return 14;\n"
         "  printf(\"abi %d ok\\n\", abi());\n"
         "  return 0;\n}\n";
  fs::path abi2 = *dir_ / "abi2", run_pack = *dir_ / "run_pack";
  Shell cc = run("cc -std=c99 -Wall -Werror -o '" + abi2.string() + "' '" +
                 (*dir_ / "abi2.c").string() + "' -ldl && cc -std=c99 -O2 -Wall -Wextra -o '" +
                 run_pack.string() + "' '" DIETCODE_SOURCE_DIR "/examples/c/run_pack.c' -ldl -lm");
  ASSERT_EQ(cc.exit_code, 0) << cc.out;
  Shell r = run("'" + abi2.string() + "' '" + library("v3").string() + "'");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, "abi 4 ok\n");
  for (const char* args : {"proj T=37", "scores T=129", "proj T=1"}) {
    Shell example = run("'" + run_pack.string() + "' '" + library("v3").string() + "' " + args);
    EXPECT_EQ(example.exit_code, 0) << example.out;
    EXPECT_THAT(example.out, HasSubstr("OK: "));
    // dense ops: weights declared constant, packed once and read twice, the result checked
    if (std::string(args).rfind("proj", 0) == 0)
      EXPECT_THAT(example.out, HasSubstr("weights declared constant: packed once, read twice"));
  }
  if (run("python3 --version").exit_code != 0) return;
  Shell py = run("python3 '" DIETCODE_SOURCE_DIR "/examples/python/run_pack.py' '" +
                 library("v3").string() + "' scores T=5");
  EXPECT_EQ(py.exit_code, 0) << py.out;
  EXPECT_THAT(py.out, HasSubstr("OK on the CPU"));
}

// Each kernel of a CPU pack is compiled once, into the object the pack links
// (pack_object_compiler.h). Those objects and the runtime's are cached (object_cache.h): a
// rebuild compiles none of them and gives the same bytes; an entry that is not what it says
// (here: its object's last byte cut off) is compiled again, not linked.
TEST_F(CpuPackTest, ARebuildTakesItsKernelObjectsFromTheCacheAndIsTheSamePack) {
  const fs::path cache = *dir_ / "private-cache";
  // The same file name in three folders: the name is in the pack (its soname).
  auto build_into = [&](const std::string& folder) {
    fs::create_directories(*dir_ / folder);
    Shell r = run("cd '" + dir_->string() + "' && DIETCODE_CACHE_DIR='" + cache.string() +
                  "' '" DIETCODE_CLI_PATH "' build cpupack.json --log avx2.jsonl --json -o " +
                  folder + "/libcpupack.so");
    EXPECT_EQ(r.exit_code, 0) << r.out;
    return nlohmann::json::parse(r.out.substr(r.out.find('{')));
  };
  auto bytes = [&](const std::string& folder) {
    std::ifstream in(*dir_ / folder / "libcpupack.so", std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  nlohmann::json first = build_into("first");
  const int kernels = first["kernel_objects"].get<int>();
  ASSERT_GT(kernels, 1);
  EXPECT_EQ(first["kernels_compiled"], kernels);
  EXPECT_EQ(first["kernels_cached"], 0);
  EXPECT_EQ(first["kernel_objects_reused"], kernels) << "the writer compiled kernels again";
  EXPECT_EQ(first["runtime_object_cached"], false);
  nlohmann::json second = build_into("second");
  EXPECT_EQ(second["kernels_cached"], kernels);
  EXPECT_EQ(second["kernel_objects_reused"], kernels);
  EXPECT_EQ(second["runtime_object_cached"], true) << "the loader runtime was compiled again";
  EXPECT_TRUE(bytes("first") == bytes("second")) << "the cached objects made another pack";

  // One entry per kernel object and one for the runtime's.
  std::vector<fs::path> entries;
  for (const auto& e : fs::directory_iterator(cache / "pack-objects")) entries.push_back(e.path());
  ASSERT_EQ(int(entries.size()), kernels + 1);
  fs::resize_file(entries[0], fs::file_size(entries[0]) - 1);
  nlohmann::json third = build_into("third");
  EXPECT_EQ(third["kernels_cached"].get<int>() + int(third["runtime_object_cached"].get<bool>()),
            kernels)
      << "the damaged entry was taken, or a sound one was not";
  EXPECT_TRUE(bytes("first") == bytes("third")) << "a damaged entry changed the pack";
}

// Python loads extension modules, and the OpenMP runtime they bring, RTLD_LOCAL. With
// OMP_PROC_BIND set, that runtime binds the main thread to one CPU as it starts, and its place
// API is not in the global scope: a pack that asked only there counted one usable CPU and ran
// every launch on a pool of one thread.
TEST_F(CpuPackTest, ItsDefaultThreadCountSeesAnOpenMpRuntimeLoadedLocally) {
  Shell r = run("'" DIETCODE_PACK_THREADS_PROBE "' '" + library("v3").string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  int before = 0, after = 0, threads = 0;
  ASSERT_EQ(std::sscanf(r.out.c_str(), "before %d after %d threads %d", &before, &after, &threads),
            3)
      << r.out;
  if (before < 2) GTEST_SKIP() << "needs two CPUs: " << r.out;
  ASSERT_EQ(after, 1) << "the OpenMP runtime did not bind the main thread: " << r.out;
  EXPECT_EQ(threads, before) << r.out;
}

TEST_F(CpuPackTest, BuildRefusesForeignArchsAndTargets) {
  Shell r = run("cd '" + dir_->string() + "' && '" DIETCODE_CLI_PATH
                "' build cpupack.json --log avx2.jsonl -o bad.so --arch sm_90");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.out, HasSubstr("--arch: 'sm_90' is not an x86-64 level of a CPU pack"));
  r = run("cd '" + dir_->string() + "' && '" DIETCODE_CLI_PATH
          "' build cpupack.json --log avx2.jsonl -o bad.so --target tpu");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.out, HasSubstr("--target: expected cuda or cpu, got 'tpu'"));
}

}  // namespace
}  // namespace dietcode

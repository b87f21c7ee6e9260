// CxxCompiler: real g++/clang++ output that dlopens and runs, one shared object per ISA level,
// compile errors and timeouts as results, the exact "no compiler" error, batches where a bad
// candidate fails alone, fake compilers (shell scripts) for timeouts and garbage, the cache
// key, and concurrent compiles. DISABLED_BatchTiming measures 1 vs 8 candidates per compile.
#include "x86/cxx_compiler.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>

#include "common/error.h"
#include "nvrtc/kernel_cache.h"
#include "nvrtc/parallel_compile.h"

namespace dietcode {
namespace {

namespace fs = std::filesystem;

class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (fs::temp_directory_path() / "cxx-compiler-test-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

  fs::path write(const std::string& name, const std::string& text, bool executable = false) {
    fs::path file = path_ / name;
    std::ofstream(file, std::ios::binary) << text;
    if (executable) ::chmod(file.c_str(), 0755);
    return file;
  }

 private:
  fs::path path_;
};

// Sets (or unsets, for nullopt) an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = ::getenv(name)) old_ = old;
    if (value)
      ::setenv(name, value->c_str(), 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// A shared object's bytes, loaded from a file of their own: dlopen needs a path.
class LoadedImage {
 public:
  LoadedImage(const ScratchDir& dir, const std::string& bytes) {
    static int counter = 0;
    fs::path file = dir.path() / ("image" + std::to_string(counter++) + ".so");
    std::ofstream(file, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
    handle_ = ::dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle_) error_ = ::dlerror();
  }
  ~LoadedImage() {
    if (handle_) ::dlclose(handle_);
  }
  bool ok() const { return handle_ != nullptr; }
  const std::string& error() const { return error_; }
  template <typename F>
  F* symbol(const char* name) const {
    return reinterpret_cast<F*>(::dlsym(handle_, name));
  }

 private:
  void* handle_ = nullptr;
  std::string error_;
};

const char kGoodSource[] = R"(#include <immintrin.h>
namespace good {
int hidden_helper(int x) { return x * 3; }
}
extern "C" __attribute__((visibility("default"))) int dc_test_sum8(int base) {
  __m256i v = _mm256_set1_epi32(base);
  __m256i w = _mm256_add_epi32(v, _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  alignas(32) int out[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(out), w);
  int sum = 0;
  for (int x : out) sum += x;
  return sum + good::hidden_helper(0);
}
)";

// Entry `name` returns `value`; nothing else at namespace scope, so any number of these batch.
std::string tiny_source(const std::string& name, int value) {
  return "extern \"C\" __attribute__((visibility(\"default\"))) int " + name + "() { return " +
         std::to_string(value) + "; }\n";
}

CompileRequest request(const std::string& name, const std::string& source,
                       std::vector<std::string> archs = {"x86-64-v3"}) {
  CompileRequest r;
  r.name = name;
  r.source = source;
  r.archs = std::move(archs);
  return r;
}

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

// A stand-in compiler: answers --version, then runs `body` for a compile.
fs::path fake_compiler(ScratchDir& dir, const std::string& name, const std::string& body) {
  return dir.write(name,
                   "#!/bin/sh\n"
                   "if [ \"$1\" = --version ]; then echo \"" +
                       name + " 0.1 (fake)\"; exit 0; fi\n" + body + "\n",
                   /*executable=*/true);
}

TEST(CxxCompiler, GoodSourceDlopensAndRuns) {
  CxxCompiler compiler;
  CompileResult result = compiler.compile(request("sum8.cc", kGoodSource));
  ASSERT_TRUE(result.ok) << result.log;
  ASSERT_EQ(result.binaries.size(), 1u);
  EXPECT_EQ(result.binaries[0].arch, "x86-64-v3");
  EXPECT_GT(result.seconds, 0);
  ScratchDir dir;
  LoadedImage image(dir, result.binaries[0].cubin);
  ASSERT_TRUE(image.ok()) << image.error();
  auto* sum8 = image.symbol<int(int)>("dc_test_sum8");
  ASSERT_NE(sum8, nullptr);
  EXPECT_EQ(sum8(10), 8 * 10 + 28);
  // -fvisibility=hidden: only the entry is exported.
  EXPECT_EQ(image.symbol<int(int)>("_ZN4good13hidden_helperEi"), nullptr);
}

TEST(CxxCompiler, OneSharedObjectPerLevel) {
  CxxCompiler compiler;
  // A loop the vectorizer widens differently for AVX2 and AVX-512.
  std::string source =
      "extern \"C\" __attribute__((visibility(\"default\"))) void dc_scale(float* x, int n) {\n"
      "  for (int i = 0; i < n; ++i) x[i] *= 2.0f;\n}\n";
  CompileResult result = compiler.compile(request("scale.cc", source, {"x86-64-v3", "x86-64-v4"}));
  ASSERT_TRUE(result.ok) << result.log;
  ASSERT_EQ(result.binaries.size(), 2u);
  EXPECT_EQ(result.binaries[0].arch, "x86-64-v3");
  EXPECT_EQ(result.binaries[1].arch, "x86-64-v4");
  for (const ArchBinary& b : result.binaries)
    EXPECT_EQ(b.cubin.substr(0, 4),
              "\x7f"
              "ELF");
  EXPECT_NE(result.binaries[0].cubin, result.binaries[1].cubin);
  ASSERT_NE(result.binary("x86-64-v4"), nullptr);
  // Both levels compile on any machine; loading the v4 image is fine on any x86-64, calling
  // it needs AVX-512 (F, CD, BW, DQ, VL), which some of our machines have and some lack.
  ScratchDir dir;
  for (const ArchBinary& b : result.binaries) {
    LoadedImage image(dir, b.cubin);
    ASSERT_TRUE(image.ok()) << image.error();
    bool runs_here = b.arch == "x86-64-v3" ||
                     (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
                      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
                      __builtin_cpu_supports("avx512vl"));
    if (!runs_here) continue;
    float x[37];
    for (int i = 0; i < 37; ++i) x[i] = float(i);
    image.symbol<void(float*, int)>("dc_scale")(x, 37);
    EXPECT_EQ(x[36], 72.0f) << b.arch;
    EXPECT_EQ(x[1], 2.0f) << b.arch;
  }
}

TEST(CxxCompiler, SyntaxErrorIsAResultWhoseFirstLineSaysWhere) {
  CxxCompiler compiler;
  CompileResult result = compiler.compile(
      request("broken.cc", "int fine() { return 1; }\n\nint broken() { return 2 }\n"));
  EXPECT_FALSE(result.ok);
  EXPECT_TRUE(result.binaries.empty());
  std::string line = first_line(result.log);
  EXPECT_EQ(line.rfind("broken.cc:3:", 0), 0u) << result.log;
  EXPECT_NE(line.find("error"), std::string::npos) << result.log;
  EXPECT_NE(result.log.find("-march=x86-64-v3:\n"), std::string::npos) << result.log;
  // The temporary folder never shows: the log is the same on every run.
  EXPECT_EQ(result.log.find("dietcode-cxx-"), std::string::npos) << result.log;
}

TEST(CxxCompiler, OptionsReachTheCompiler) {
  CxxCompiler compiler;
  ScratchDir dir;
  dir.write("value.h", "#define DC_VALUE 41\n");
  CompileRequest r = request("opts.cc",
                             "#include \"value.h\"\n"
                             "extern \"C\" __attribute__((visibility(\"default\"))) int dc_v() "
                             "{ return DC_VALUE + EXTRA; }\n");
  r.options = {"-I" + dir.path().string(), "-DEXTRA=1"};
  CompileResult result = compiler.compile(r);
  ASSERT_TRUE(result.ok) << result.log;
  LoadedImage image(dir, result.binaries[0].cubin);
  ASSERT_TRUE(image.ok()) << image.error();
  EXPECT_EQ(image.symbol<int()>("dc_v")(), 42);
}

TEST(CxxCompiler, UnknownLevelIsTheUsersError) {
  CxxCompiler compiler;
  EXPECT_THROW(compiler.compile(request("a.cc", "int x;", {"sm_90"})), UserError);
  EXPECT_THROW(compiler.compile_batch({request("a.cc", "int x;", {"haswell"})}), UserError);
}

TEST(CxxCompiler, NoCompilerOnPathGivesTheExactMessage) {
  ScratchDir empty;
  ScopedEnv path("PATH", empty.path().string());
  ScopedEnv cxx("CXX", std::nullopt);
  try {
    CxxCompiler compiler;
    FAIL() << "found " << compiler.argv()[0];
  } catch (const EnvironmentError& e) {
    EXPECT_STREQ(e.what(),
                 "no C++ compiler found (tried g++, clang++); install g++ or pass --cxx PATH");
  }
}

TEST(CxxCompiler, MissingExplicitOrEnvironmentCompilerIsAnEnvironmentError) {
  try {
    CxxCompiler compiler(CxxCompilerOptions{"/nonexistent/g++"});
    FAIL();
  } catch (const EnvironmentError& e) {
    EXPECT_STREQ(e.what(),
                 "C++ compiler '/nonexistent/g++' (from --cxx) is not an executable file");
  }
  ScopedEnv cxx("CXX", std::string("no-such-cxx-12"));
  try {
    CxxCompiler compiler;
    FAIL();
  } catch (const EnvironmentError& e) {
    EXPECT_STREQ(e.what(),
                 "C++ compiler 'no-such-cxx-12' (from $CXX) not found; fix CXX or pass --cxx PATH");
  }
}

TEST(CxxCompiler, FindsTheCompilerByExplicitPathThenCxxThenPath) {
  ScratchDir dir;
  fs::path fake = fake_compiler(dir, "fake-cxx", "exit 1");
  {
    ScopedEnv cxx("CXX", std::string("clang++"));
    EXPECT_EQ(CxxCompiler(CxxCompilerOptions{fake.string()}).argv()[0], fake.string());
    EXPECT_EQ(fs::path(CxxCompiler().argv()[0]).filename(), "clang++");
  }
  ScopedEnv cxx("CXX", std::nullopt);
  CxxCompiler plain;
  EXPECT_EQ(fs::path(plain.argv()[0]).filename(), "g++");
  EXPECT_EQ(plain.version_line().rfind("g++", 0), 0u) << plain.version_line();
}

TEST(CxxCompiler, FingerprintNamesTheCompilerAndChangesWithIt) {
  ScratchDir dir;
  CxxCompiler gxx(CxxCompilerOptions{"g++"});
  CxxCompiler fake(CxxCompilerOptions{fake_compiler(dir, "fake-cxx", "exit 1").string()});
  EXPECT_NE(gxx.fingerprint().find(gxx.version_line()), std::string::npos);
  EXPECT_NE(gxx.fingerprint().find("-march=LEVEL"), std::string::npos) << gxx.fingerprint();
  EXPECT_NE(gxx.fingerprint(), fake.fingerprint());
  EXPECT_NE(fake.fingerprint().find("fake-cxx 0.1 (fake)"), std::string::npos);
  EXPECT_EQ(gxx.fingerprint(), CxxCompiler(CxxCompilerOptions{"g++"}).fingerprint());
  if (::access("/usr/bin/clang++", X_OK) == 0) {
    EXPECT_NE(gxx.fingerprint(), CxxCompiler(CxxCompilerOptions{"clang++"}).fingerprint());
  }
}

TEST(CxxCompiler, TimeoutKillsTheCompilerAndIsAResult) {
  ScratchDir dir;
  fs::path pid_file = dir.path() / "child.pid";
  // The script starts a grandchild as cc1plus would: the timeout must kill it too.
  fs::path script =
      fake_compiler(dir, "slow-cxx", "sleep 30 &\necho $! > " + pid_file.string() + "\nwait\n");
  CxxCompiler compiler(CxxCompilerOptions{script.string(), 0.5});
  auto start = std::chrono::steady_clock::now();
  CompileResult result = compiler.compile(request("slow.cc", "int x;"));
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_FALSE(result.ok);
  EXPECT_EQ(first_line(result.log), "compiler timed out after 0.5 s");
  EXPECT_LT(elapsed, 5);
  std::ifstream in(pid_file);
  pid_t child = 0;
  ASSERT_TRUE(in >> child);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::ifstream stat("/proc/" + std::to_string(child) + "/stat");
  std::string pid, comm, state;
  if (stat >> pid >> comm >> state) {
    EXPECT_EQ(state, "Z") << "sleep survived the timeout";
  }
}

TEST(CxxCompiler, DefaultTimeoutIsSixtySeconds) {
  EXPECT_EQ(CxxCompilerOptions{}.timeout_seconds, 60);
}

TEST(CxxCompiler, GarbageFromAFailingCompilerIsInTheLog) {
  ScratchDir dir;
  fs::path script = fake_compiler(dir, "junk-cxx", "echo 'x$%^ garbage'; echo more >&2; exit 3");
  CxxCompiler compiler(CxxCompilerOptions{script.string()});
  CompileResult result = compiler.compile(request("a.cc", "int x;"));
  EXPECT_FALSE(result.ok);
  EXPECT_EQ(first_line(result.log), "junk-cxx exited with status 3");
  EXPECT_NE(result.log.find("x$%^ garbage\nmore\n"), std::string::npos) << result.log;
}

TEST(CxxCompiler, CompilerThatSucceedsWithoutAnImageIsBroken) {
  ScratchDir dir;
  fs::path script = fake_compiler(dir, "liar-cxx", "echo done; exit 0");
  CxxCompiler compiler(CxxCompilerOptions{script.string()});
  EXPECT_THROW(compiler.compile(request("a.cc", "int x;")), EnvironmentError);
  fs::path script2 = fake_compiler(dir, "text-cxx", "echo 'not elf' > out.so; exit 0");
  EXPECT_THROW(CxxCompiler(CxxCompilerOptions{script2.string()}).compile(request("a.cc", "int x;")),
               EnvironmentError);
}

TEST(CxxCompiler, CompilerThatDoesNotAnswerVersionIsBroken) {
  ScratchDir dir;
  fs::path script = dir.write("mute-cxx", "#!/bin/sh\nexit 1\n", true);
  try {
    CxxCompiler compiler(CxxCompilerOptions{script.string()});
    FAIL();
  } catch (const EnvironmentError& e) {
    EXPECT_EQ(std::string(e.what()),
              "C++ compiler " + script.string() + " does not answer --version (exit status 1)");
  }
}

TEST(CxxCompiler, BatchIsOneSharedObjectForAll) {
  CxxCompiler compiler;
  std::vector<CompileRequest> batch;
  for (int i = 0; i < 4; ++i)
    batch.push_back(
        request("c" + std::to_string(i) + ".cc", tiny_source("dc_c" + std::to_string(i), i * 10)));
  std::vector<CompileResult> results = compiler.compile_batch(batch);
  ASSERT_EQ(results.size(), 4u);
  double seconds = 0;
  for (const CompileResult& r : results) {
    ASSERT_TRUE(r.ok) << r.log;
    ASSERT_EQ(r.binaries.size(), 1u);
    EXPECT_EQ(r.binaries[0].cubin, results[0].binaries[0].cubin);
    seconds += r.seconds;
  }
  EXPECT_GT(seconds, 0);
  ScratchDir dir;
  LoadedImage image(dir, results[0].binaries[0].cubin);
  ASSERT_TRUE(image.ok()) << image.error();
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(image.symbol<int()>(("dc_c" + std::to_string(i)).c_str())(), i * 10);
}

TEST(CxxCompiler, BadRequestInABatchFailsAlone) {
  CxxCompiler compiler;
  std::vector<CompileRequest> batch = {
      request("a.cc", tiny_source("dc_a", 1)),
      request("bad.cc", "extern \"C\" int dc_bad() { return undefined_name; }\n"),
      request("b.cc", tiny_source("dc_b", 2)),
      request("c.cc", tiny_source("dc_c", 3)),
  };
  std::vector<CompileResult> results = compiler.compile_batch(batch);
  ASSERT_EQ(results.size(), 4u);
  EXPECT_FALSE(results[1].ok);
  EXPECT_TRUE(results[1].binaries.empty());
  EXPECT_EQ(first_line(results[1].log).rfind("bad.cc:1:", 0), 0u) << results[1].log;
  // Its own log: no other candidate is in it.
  EXPECT_EQ(results[1].log.find("a.cc"), std::string::npos) << results[1].log;
  ScratchDir dir;
  for (size_t i : {0, 2, 3}) {
    ASSERT_TRUE(results[i].ok) << results[i].log;
    EXPECT_EQ(results[i].binaries[0].cubin, results[0].binaries[0].cubin);
  }
  LoadedImage image(dir, results[0].binaries[0].cubin);
  ASSERT_TRUE(image.ok()) << image.error();
  EXPECT_EQ(image.symbol<int()>("dc_a")(), 1);
  EXPECT_EQ(image.symbol<int()>("dc_b")(), 2);
  EXPECT_EQ(image.symbol<int()>("dc_c")(), 3);
  EXPECT_EQ(image.symbol<int()>("dc_bad"), nullptr);
}

TEST(CxxCompiler, BlamedRequestsAreSplitOffAndTheRestBatchedAgain) {
  // A wrapper that counts invocations: a failed batch of four with one bad candidate costs
  // three compiles (the batch, the bad one alone, the other three again), not five.
  ScratchDir dir;
  fs::path calls = dir.path() / "calls";
  fs::path script =
      fake_compiler(dir, "counting-cxx", "echo call >> " + calls.string() + "\nexec g++ \"$@\"");
  CxxCompiler compiler(CxxCompilerOptions{script.string()});
  std::vector<CompileResult> results = compiler.compile_batch({
      request("a.cc", tiny_source("dc_a", 1)),
      request("b.cc", tiny_source("dc_b", 2)),
      request("bad.cc", "extern \"C\" int dc_bad() { return 1 }\n"),
      request("c.cc", tiny_source("dc_c", 3)),
  });
  ASSERT_EQ(results.size(), 4u);
  EXPECT_FALSE(results[2].ok);
  for (size_t i : {0, 1, 3}) EXPECT_TRUE(results[i].ok) << results[i].log;
  std::ifstream in(calls);
  int lines = 0;
  for (std::string line; std::getline(in, line);) ++lines;
  EXPECT_EQ(lines, 3);
}

TEST(CxxCompiler, ClashingRequestsInABatchStillCompile) {
  // Both define dc_same: together they cannot link, alone each is fine.
  CxxCompiler compiler;
  std::vector<CompileResult> results = compiler.compile_batch(
      {request("one.cc", tiny_source("dc_same", 1)), request("two.cc", tiny_source("dc_same", 2))});
  ASSERT_EQ(results.size(), 2u);
  ScratchDir dir;
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(results[i].ok) << results[i].log;
    LoadedImage image(dir, results[i].binaries[0].cubin);
    ASSERT_TRUE(image.ok()) << image.error();
    EXPECT_EQ(image.symbol<int()>("dc_same")(), i + 1);
  }
}

TEST(CxxCompiler, BatchGroupsByOptionsAndLevels) {
  CxxCompiler compiler;
  std::string source =
      "extern \"C\" __attribute__((visibility(\"default\"))) int NAME() { return VALUE; }\n";
  CompileRequest a = request("a.cc", source), b = a, c = a;
  a.options = {"-DNAME=dc_a", "-DVALUE=1"};
  b.options = {"-DNAME=dc_b", "-DVALUE=2"};
  c.options = a.options;
  c.archs = {"x86-64-v3", "x86-64-v4"};
  std::vector<CompileResult> results = compiler.compile_batch({a, b, c});
  ASSERT_EQ(results.size(), 3u);
  for (const CompileResult& r : results) ASSERT_TRUE(r.ok) << r.log;
  EXPECT_NE(results[0].binaries[0].cubin, results[1].binaries[0].cubin);
  EXPECT_EQ(results[2].binaries.size(), 2u);
  ScratchDir dir;
  LoadedImage image(dir, results[1].binaries[0].cubin);
  ASSERT_TRUE(image.ok());
  EXPECT_EQ(image.symbol<int()>("dc_b")(), 2);
}

TEST(CxxCompiler, ConcurrentCompilesFromParallelCompile) {
  CxxCompiler compiler;
  std::vector<CompileRequest> batch;
  for (int i = 0; i < 4; ++i)
    batch.push_back(request("p" + std::to_string(i) + ".cc", tiny_source("dc_p", i)));
  batch[2].source = "int oops(";
  ParallelCompileOptions options;
  options.jobs = 2;
  std::vector<CompileResult> results = compile_all(compiler, batch, options);
  ASSERT_EQ(results.size(), 4u);
  ScratchDir dir;
  for (int i = 0; i < 4; ++i) {
    if (i == 2) {
      EXPECT_FALSE(results[i].ok);
      EXPECT_EQ(first_line(results[i].log).rfind("p2.cc:1:", 0), 0u) << results[i].log;
      continue;
    }
    ASSERT_TRUE(results[i].ok) << results[i].log;
    LoadedImage image(dir, results[i].binaries[0].cubin);
    ASSERT_TRUE(image.ok());
    EXPECT_EQ(image.symbol<int()>("dc_p")(), i);
  }
}

TEST(CxxCompiler, CachingCompilerCachesItUnchanged) {
  CxxCompiler compiler;
  ScratchDir dir;
  CachingCompiler cache(compiler, compiler.fingerprint(), dir.path() / "kernels");
  CompileRequest r = request("cached.cc", tiny_source("dc_cached", 7));
  CompileResult first = cache.compile(r);
  CompileResult second = cache.compile(r);
  ASSERT_TRUE(first.ok) << first.log;
  EXPECT_FALSE(first.cache_hit);
  EXPECT_TRUE(second.cache_hit);
  ASSERT_EQ(second.binaries.size(), 1u);
  EXPECT_EQ(second.binaries[0].cubin, first.binaries[0].cubin);
  EXPECT_EQ(second.binaries[0].arch, "x86-64-v3");
  // The same request under another compiler is another entry.
  CachingCompiler other(compiler, compiler.fingerprint() + "x", dir.path() / "kernels");
  EXPECT_NE(other.entry_path(r), cache.entry_path(r));
}

// Compile cost of 1 vs 8 small AVX2 candidates per compiler invocation, g++ and clang++:
//   ./cxx_compiler_test --gtest_also_run_disabled_tests --gtest_filter='*BatchTiming*'
const char kMicroKernelHeader[] = R"(#ifndef DC_TEST_MICRO_KERNEL_H
#define DC_TEST_MICRO_KERNEL_H
#include <immintrin.h>
// C[MR x 8*NV] += A[MR x K] * B[K x 8*NV], accumulators in registers.
template <int MR, int NV>
inline void dc_micro_kernel(int K, const float* A, int lda, const float* B, int ldb, float* C,
                            int ldc) {
  __m256 acc[MR][NV];
  for (int m = 0; m < MR; ++m)
    for (int v = 0; v < NV; ++v) acc[m][v] = _mm256_loadu_ps(C + m * ldc + 8 * v);
  for (int k = 0; k < K; ++k) {
    __m256 b[NV];
    for (int v = 0; v < NV; ++v) b[v] = _mm256_loadu_ps(B + k * ldb + 8 * v);
    for (int m = 0; m < MR; ++m) {
      __m256 a = _mm256_broadcast_ss(A + m * lda + k);
      for (int v = 0; v < NV; ++v) acc[m][v] = _mm256_fmadd_ps(a, b[v], acc[m][v]);
    }
  }
  for (int m = 0; m < MR; ++m)
    for (int v = 0; v < NV; ++v) _mm256_storeu_ps(C + m * ldc + 8 * v, acc[m][v]);
}
#endif
)";

std::string micro_kernel_candidate(int i) {
  static const int shapes[8][2] = {{6, 2}, {4, 3}, {8, 1}, {3, 4}, {5, 2}, {2, 4}, {4, 2}, {1, 4}};
  return "#include <immintrin.h>\n#include \"dc_micro_kernel.h\"\n"
         "extern \"C\" __attribute__((visibility(\"default\"))) void dc_mk" +
         std::to_string(i) +
         "(int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc) {\n"
         "  dc_micro_kernel<" +
         std::to_string(shapes[i][0]) + ", " + std::to_string(shapes[i][1]) +
         ">(K, A, lda, B, ldb, C, ldc);\n}\n";
}

TEST(CxxCompiler, DISABLED_BatchTiming) {
  ScratchDir dir;
  dir.write("dc_micro_kernel.h", kMicroKernelHeader);
  std::vector<CompileRequest> eight;
  for (int i = 0; i < 8; ++i) {
    eight.push_back(request("mk" + std::to_string(i) + ".cc", micro_kernel_candidate(i)));
    eight.back().options = {"-I" + dir.path().string()};
  }
  for (const char* cxx : {"g++", "clang++"}) {
    if (::access((std::string("/usr/bin/") + cxx).c_str(), X_OK) != 0) continue;
    CxxCompiler compiler(CxxCompilerOptions{cxx});
    auto wall = [](auto&& f) {
      auto start = std::chrono::steady_clock::now();
      f();
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    const int rounds = 3;
    double one = 1e9, batch = 1e9, alone = 1e9;
    for (int round = 0; round < rounds; ++round) {
      one = std::min(one, wall([&] { ASSERT_TRUE(compiler.compile(eight[0]).ok); }));
      batch = std::min(batch, wall([&] {
                         for (const CompileResult& r : compiler.compile_batch(eight))
                           ASSERT_TRUE(r.ok) << r.log;
                       }));
    }
    alone = wall([&] {
      for (const CompileRequest& r : eight) ASSERT_TRUE(compiler.compile(r).ok);
    });
    std::printf("%-8s 1 candidate %.2f s | 8 in one batch %.2f s (%.2f s each) | 8 alone %.2f s\n",
                cxx, one, batch, batch / 8, alone);
  }
}

}  // namespace
}  // namespace dietcode

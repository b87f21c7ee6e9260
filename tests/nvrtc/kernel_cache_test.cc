// CachingCompiler: hits skip the inner compiler, every part of the key matters, damaged or
// colliding entries are misses, and the real NVRTC round-trips through the cache.
#include "nvrtc/kernel_cache.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>
#include <mutex>

#include "nvrtc/cache_entry.h"
#include "nvrtc/nvrtc_compiler.h"
#include "nvrtc/stable_hash.h"

namespace dietcode {
namespace {

namespace fs = std::filesystem;

// Counts calls and returns a result made from the request, so a test can tell whose it got.
class CountingCompiler : public Compiler {
 public:
  CompileResult compile(const CompileRequest& request) override {
    std::lock_guard<std::mutex> lock(mutex_);
    ++calls;
    CompileResult r;
    r.ok = request.source.find("error") == std::string::npos;
    r.log = "compiled " + request.name + (r.ok ? "" : ": error");
    r.seconds = 0.25;
    if (!r.ok) return r;
    for (const std::string& arch : request.archs) {
      ArchBinary b;
      b.arch = arch;
      b.cubin = std::string(
                    "\x7f"
                    "ELF\0\1\2",
                    7) +
                arch + request.source;
      b.resources.push_back({"k", 40, 0, 0, 4096, 0});
      r.binaries.push_back(b);
    }
    if (request.want_ptx) {
      r.ptx = ".target sm_90";
      r.ptx_arch = "compute_90";
    }
    return r;
  }
  int calls = 0;

 private:
  std::mutex mutex_;
};

class KernelCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "dietcode-cache-test-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = fs::path(pattern) / "kernels";  // created by the cache on its first write
  }
  void TearDown() override { fs::remove_all(dir_.parent_path()); }

  static CompileRequest request() {
    CompileRequest r;
    r.name = "k.cu";
    r.source = "extern \"C\" __global__ void k() {}";
    r.options = {"-DBM=64"};
    r.archs = {"sm_80", "sm_90"};
    r.want_ptx = true;
    return r;
  }

  fs::path dir_;
};

void expect_same(const CompileResult& a, const CompileResult& b) {
  EXPECT_EQ(a.ok, b.ok);
  EXPECT_EQ(a.log, b.log);
  EXPECT_EQ(a.ptx, b.ptx);
  EXPECT_EQ(a.ptx_arch, b.ptx_arch);
  ASSERT_EQ(a.binaries.size(), b.binaries.size());
  for (size_t i = 0; i < a.binaries.size(); ++i) {
    EXPECT_EQ(a.binaries[i].arch, b.binaries[i].arch);
    EXPECT_EQ(a.binaries[i].cubin, b.binaries[i].cubin);
    ASSERT_EQ(a.binaries[i].resources.size(), b.binaries[i].resources.size());
    for (size_t j = 0; j < a.binaries[i].resources.size(); ++j) {
      const KernelResources& x = a.binaries[i].resources[j];
      const KernelResources& y = b.binaries[i].resources[j];
      EXPECT_EQ(x.entry, y.entry);
      EXPECT_EQ(x.registers, y.registers);
      EXPECT_EQ(x.spill_stores, y.spill_stores);
      EXPECT_EQ(x.spill_loads, y.spill_loads);
      EXPECT_EQ(x.static_smem, y.static_smem);
      EXPECT_EQ(x.stack_frame, y.stack_frame);
    }
  }
}

TEST_F(KernelCacheTest, SecondCompileIsAHitWithoutTheInnerCompiler) {
  CountingCompiler inner;
  CachingCompiler cache(inner, "fake 1.0", dir_);
  CompileResult first = cache.compile(request());
  EXPECT_EQ(inner.calls, 1);
  EXPECT_FALSE(first.cache_hit);
  EXPECT_EQ(first.seconds, 0.25);
  EXPECT_TRUE(fs::exists(cache.entry_path(request())));

  CompileResult second = cache.compile(request());
  EXPECT_EQ(inner.calls, 1);
  EXPECT_TRUE(second.cache_hit);
  EXPECT_EQ(second.seconds, 0);
  expect_same(first, second);

  // A new process (a new CachingCompiler) finds it too.
  CachingCompiler again(inner, "fake 1.0", dir_);
  EXPECT_TRUE(again.compile(request()).cache_hit);
  EXPECT_EQ(inner.calls, 1);
  EXPECT_EQ(cache.stats().hits, 1);
  EXPECT_EQ(cache.stats().misses, 1);
  EXPECT_EQ(cache.stats().write_failures, 0);
}

TEST_F(KernelCacheTest, EveryPartOfTheKeyMatters) {
  CountingCompiler inner;
  CachingCompiler cache(inner, "fake 1.0", dir_);
  cache.compile(request());
  std::vector<CompileRequest> variants(6, request());
  variants[0].source += " ";
  variants[1].options = {"-DBM=128"};
  variants[2].archs = {"sm_80"};
  variants[3].archs = {"sm_90", "sm_80"};
  variants[4].want_ptx = false;
  variants[5].name = "other.cu";
  for (const CompileRequest& r : variants) EXPECT_FALSE(cache.compile(r).cache_hit);
  EXPECT_EQ(inner.calls, 7);
  // Options are not concatenated into one string: {"-DA", "B"} is not {"-DAB"}.
  CompileRequest split = request(), joined = request();
  split.options = {"-DA", "B"};
  joined.options = {"-DAB"};
  EXPECT_NE(cache.key_text(split), cache.key_text(joined));
  // Another compiler version is another key.
  CachingCompiler newer(inner, "fake 1.1", dir_);
  EXPECT_FALSE(newer.compile(request()).cache_hit);
  EXPECT_EQ(inner.calls, 8);
  EXPECT_NE(newer.entry_path(request()), cache.entry_path(request()));
}

TEST_F(KernelCacheTest, CompileErrorsAreCachedToo) {
  CountingCompiler inner;
  CachingCompiler cache(inner, "fake 1.0", dir_);
  CompileRequest bad = request();
  bad.source = "error";
  EXPECT_FALSE(cache.compile(bad).ok);
  CompileResult again = cache.compile(bad);
  EXPECT_FALSE(again.ok);
  EXPECT_TRUE(again.cache_hit);
  EXPECT_EQ(again.log, "compiled k.cu: error");
  EXPECT_EQ(inner.calls, 1);
}

TEST_F(KernelCacheTest, DamagedEntryIsAMissAndIsRepaired) {
  CountingCompiler inner;
  CachingCompiler cache(inner, "fake 1.0", dir_);
  cache.compile(request());
  fs::path path = cache.entry_path(request());
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  // One flipped bit inside the CUBIN, then a file cut in half.
  std::string flipped = bytes;
  flipped[bytes.find("ELF") + 1] ^= 1;
  for (const std::string& damaged : {flipped, bytes.substr(0, bytes.size() / 2)}) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << damaged;
    int before = inner.calls;
    EXPECT_FALSE(cache.compile(request()).cache_hit);
    EXPECT_EQ(inner.calls, before + 1);
    EXPECT_TRUE(cache.compile(request()).cache_hit);  // the miss rewrote the entry
  }
}

TEST_F(KernelCacheTest, CollidingEntryIsAMiss) {
  // An intact entry under the right file name but for another key: what a hash collision
  // would look like.
  CountingCompiler inner;
  CachingCompiler cache(inner, "fake 1.0", dir_);
  CompileResult other;
  other.ok = true;
  other.log = "someone else's kernel";
  fs::create_directories(dir_);
  std::ofstream(cache.entry_path(request()), std::ios::binary)
      << encode_cache_entry("a different key", other);
  CompileResult result = cache.compile(request());
  EXPECT_FALSE(result.cache_hit);
  EXPECT_EQ(result.log, "compiled k.cu");
  EXPECT_EQ(inner.calls, 1);
}

TEST_F(KernelCacheTest, UnwritableCacheStillCompiles) {
  CountingCompiler inner;
  fs::create_directories(dir_.parent_path());
  std::ofstream(dir_) << "a file where the folder should be";
  CachingCompiler cache(inner, "fake 1.0", dir_);
  EXPECT_TRUE(cache.compile(request()).ok);
  EXPECT_TRUE(cache.compile(request()).ok);
  EXPECT_EQ(inner.calls, 2);
  EXPECT_EQ(cache.stats().write_failures, 2);
}

TEST_F(KernelCacheTest, LeavesNoTemporaryFiles) {
  CountingCompiler inner;
  CachingCompiler cache(inner, "fake 1.0", dir_);
  cache.compile(request());
  CompileRequest other = request();
  other.source += "//";
  cache.compile(other);
  int files = 0;
  for (const auto& entry : fs::directory_iterator(dir_)) {
    ++files;
    EXPECT_EQ(entry.path().extension(), ".entry") << entry.path();
    EXPECT_EQ(entry.path().stem().string().size(), 16u);
  }
  EXPECT_EQ(files, 2);
}

TEST_F(KernelCacheTest, RealNvrtcRoundTrip) {
  NvrtcCompiler nvrtc;
  CachingCompiler cache(nvrtc, nvrtc.fingerprint(), dir_);
  CompileRequest r;
  r.name = "axpy.cu";
  r.source = R"(extern "C" __global__ void axpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += a * x[i];
})";
  r.archs = {"sm_80", "sm_90a"};
  CompileResult cold = cache.compile(r);
  ASSERT_TRUE(cold.ok) << cold.log;
  EXPECT_GT(cold.seconds, 0);
  CompileResult warm = cache.compile(r);
  EXPECT_TRUE(warm.cache_hit);
  EXPECT_EQ(warm.seconds, 0);
  expect_same(cold, warm);
  ASSERT_NE(warm.binary("sm_90a"), nullptr);
  EXPECT_EQ(warm.binary("sm_90a")->resources.at(0).entry, "axpy");
}

TEST(CacheEntry, EveryTruncationIsRejected) {
  CompileResult result;
  result.ok = true;
  result.log = "checksum 0000000000000000\n";  // a decoy line inside the data
  result.binaries.push_back({"sm_90", std::string("\0\1\n\2", 4), {{"k", 32, 0, 0, 0, 16}}});
  std::string bytes = encode_cache_entry("key", result);
  std::string key;
  CompileResult decoded;
  ASSERT_TRUE(decode_cache_entry(bytes, &key, &decoded));
  EXPECT_EQ(key, "key");
  expect_same(result, decoded);
  for (size_t n = 0; n < bytes.size(); ++n)
    EXPECT_FALSE(decode_cache_entry(bytes.substr(0, n), &key, &decoded)) << n;
  EXPECT_FALSE(decode_cache_entry(bytes + "x", &key, &decoded));
}

TEST(StableHash, MatchesPublishedFnv1aValues) {
  EXPECT_EQ(stable_hash_hex(""), "cbf29ce484222325");
  EXPECT_EQ(stable_hash_hex("a"), "af63dc4c8601ec8c");
  EXPECT_EQ(stable_hash_hex("foobar"), "85944171f73967e8");
}

}  // namespace
}  // namespace dietcode

// NvrtcCompiler against the real NVRTC: CUBINs for several archs with their ptxas report, PTX
// for newer GPUs, compile errors as results. No GPU needed.
#include "nvrtc/nvrtc_compiler.h"

#include <gtest/gtest.h>

#include "common/error.h"

namespace dietcode {
namespace {

// Static shared memory and a barrier, so the report has something to say.
const char* kScaleKernel = R"(
extern "C" __global__ void scale(const float* x, float* y, int n, float alpha) {
  __shared__ float tile[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  tile[threadIdx.x] = i < n ? x[i] : 0.f;
  __syncthreads();
  if (i < n) y[i] = alpha * tile[threadIdx.x ^ 1];
}
)";

CompileRequest request(std::vector<std::string> archs, bool want_ptx = false) {
  CompileRequest r;
  r.name = "scale.cu";
  r.source = kScaleKernel;
  r.archs = std::move(archs);
  r.want_ptx = want_ptx;
  return r;
}

// A CUBIN is an ELF file.
bool is_elf(const std::string& bytes) {
  return bytes.size() > 4 && bytes.compare(0, 4,
                                           "\x7f"
                                           "ELF") == 0;
}

TEST(NvrtcCompiler, CompilesForEachArchWithResources) {
  NvrtcCompiler compiler;
  CompileResult result = compiler.compile(request({"sm_80", "sm_90", "sm_90a"}));
  ASSERT_TRUE(result.ok) << result.log;
  ASSERT_EQ(result.binaries.size(), 3u);
  for (const char* arch : {"sm_80", "sm_90", "sm_90a"}) {
    SCOPED_TRACE(arch);
    const ArchBinary* binary = result.binary(arch);
    ASSERT_NE(binary, nullptr);
    EXPECT_TRUE(is_elf(binary->cubin));
    ASSERT_EQ(binary->resources.size(), 1u);
    const KernelResources& r = binary->resources[0];
    EXPECT_EQ(r.entry, "scale");
    EXPECT_GT(r.registers, 0);
    EXPECT_LE(r.registers, 255);
    EXPECT_EQ(r.static_smem, 1024);
    EXPECT_EQ(r.spill_stores, 0);
    EXPECT_EQ(r.spill_loads, 0);
    EXPECT_NE(result.log.find("Compiling entry function 'scale' for '" + std::string(arch) + "'"),
              std::string::npos);
  }
  EXPECT_EQ(result.binary("sm_75"), nullptr);
  EXPECT_FALSE(result.spills());
  EXPECT_TRUE(result.ptx.empty());
  EXPECT_EQ(result.log.find('\0'), std::string::npos);
  EXPECT_GT(result.seconds, 0);
  EXPECT_FALSE(result.cache_hit);
}

TEST(NvrtcCompiler, SyntaxErrorIsAResultWithTheLog) {
  NvrtcCompiler compiler;
  CompileRequest r = request({"sm_80", "sm_90"});
  r.name = "broken.cu";
  r.source = "extern \"C\" __global__ void k(int* p) { p[0] = 1 }\n";
  CompileResult result = compiler.compile(r);
  EXPECT_FALSE(result.ok);
  EXPECT_TRUE(result.binaries.empty());
  EXPECT_NE(result.log.find("broken.cu(1): error: expected a \";\""), std::string::npos)
      << result.log;
}

TEST(NvrtcCompiler, ArchSpecificErrorIsAResult) {
  // wgmma exists only on sm_90a: the sm_90a compile succeeds, the sm_80 one fails in ptxas.
  NvrtcCompiler compiler;
  CompileRequest r = request({"sm_90a", "sm_80"});
  r.source = R"(
extern "C" __global__ void fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
)";
  CompileResult result = compiler.compile(r);
  EXPECT_FALSE(result.ok);
  ASSERT_EQ(result.binaries.size(), 1u);
  EXPECT_EQ(result.binaries[0].arch, "sm_90a");
  EXPECT_NE(result.log.find("-arch=sm_80:"), std::string::npos) << result.log;
  EXPECT_NE(result.log.find("-arch=sm_80:\nptxas application ptx input, line "), std::string::npos)
      << result.log;
  EXPECT_NE(result.log.find("error   : Instruction 'wgmma.fence' not supported on .target "
                            "'sm_80'"),
            std::string::npos)
      << result.log;
  EXPECT_EQ(result.log.find('\0'), std::string::npos);
}

TEST(NvrtcCompiler, PtxForTheNewestArch) {
  NvrtcCompiler compiler;
  CompileResult result = compiler.compile(request({"sm_80", "sm_90"}, /*want_ptx=*/true));
  ASSERT_TRUE(result.ok) << result.log;
  EXPECT_EQ(result.ptx_arch, "compute_90");
  EXPECT_NE(result.ptx.find(".target sm_90\n"), std::string::npos);
  EXPECT_NE(result.ptx.find(".entry scale("), std::string::npos);
  EXPECT_EQ(result.ptx.find('\0'), std::string::npos);
}

TEST(NvrtcCompiler, PtxIsPortableWhenOnlyAnArchSpecificTargetIsAsked) {
  // sm_90a code runs on nothing but sm_90: the PTX must be plain compute_90.
  NvrtcCompiler compiler;
  CompileResult result = compiler.compile(request({"sm_90a"}, /*want_ptx=*/true));
  ASSERT_TRUE(result.ok) << result.log;
  EXPECT_EQ(result.ptx_arch, "compute_90");
  EXPECT_NE(result.ptx.find(".target sm_90\n"), std::string::npos);
  ASSERT_EQ(result.binaries.size(), 1u);
  EXPECT_TRUE(is_elf(result.binaries[0].cubin));
}

TEST(NvrtcCompiler, ReportsSpills) {
  NvrtcCompiler compiler;
  CompileRequest r = request({"sm_90"});
  r.options = {"--maxrregcount=32"};
  r.source = R"(
extern "C" __global__ void regs(const float* __restrict__ x, float* y) {
  float acc[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) acc[i] = x[threadIdx.x + i * 128];
#pragma unroll
  for (int r = 0; r < 8; ++r)
#pragma unroll
    for (int i = 0; i < 64; ++i) acc[i] = acc[i] * acc[(i + 1) & 63] + acc[(i + 7) & 63];
  float s = 0;
#pragma unroll
  for (int i = 0; i < 64; ++i) s += acc[i];
  y[threadIdx.x] = s;
}
)";
  CompileResult result = compiler.compile(r);
  ASSERT_TRUE(result.ok) << result.log;
  ASSERT_EQ(result.binaries.size(), 1u);
  ASSERT_EQ(result.binaries[0].resources.size(), 1u);
  EXPECT_EQ(result.binaries[0].resources[0].registers, 32);
  EXPECT_GT(result.binaries[0].resources[0].spill_stores, 0);
  EXPECT_TRUE(result.spills());
}

TEST(NvrtcCompiler, FindsToolkitHeaders) {
  NvrtcCompiler compiler;
  ASSERT_FALSE(compiler.include_dirs().empty());
  CompileRequest r = request({"sm_80"});
  r.source = R"(
#include <cuda_fp16.h>
#include <cuda/pipeline>
extern "C" __global__ void half_copy(const __half* x, __half* y) { y[threadIdx.x] = x[threadIdx.x]; }
)";
  CompileResult result = compiler.compile(r);
  EXPECT_TRUE(result.ok) << result.log;
}

TEST(NvrtcCompiler, UnknownArchIsAUserError) {
  NvrtcCompiler compiler;
  try {
    compiler.compile(request({"sm_80", "sm_99"}));
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    std::string expected = "unsupported GPU architecture 'sm_99': NVRTC " +
                           NvrtcCompiler::version() + " compiles for sm_75, sm_80";
    EXPECT_EQ(std::string(e.what()).substr(0, expected.size()), expected) << e.what();
  }
}

TEST(NvrtcCompiler, VersionAndFingerprint) {
  NvrtcCompiler compiler;
  std::string version = NvrtcCompiler::version();
  EXPECT_NE(version.find('.'), std::string::npos);
  std::string fingerprint = compiler.fingerprint();
  EXPECT_EQ(fingerprint.rfind("nvrtc " + version + " (libnvrtc", 0), 0u) << fingerprint;
  EXPECT_NE(fingerprint.find(" -I" + compiler.include_dirs()[0]), std::string::npos);
  NvrtcCompiler elsewhere(std::vector<std::string>{"/opt/other/include"});
  EXPECT_NE(elsewhere.fingerprint(), fingerprint);
}

TEST(ParseArch, AcceptsRealAndArchSpecificTargets) {
  int number = 0;
  std::string suffix;
  ASSERT_TRUE(parse_arch("sm_90a", &number, &suffix));
  EXPECT_EQ(number, 90);
  EXPECT_EQ(suffix, "a");
  ASSERT_TRUE(parse_arch("sm_121", &number, &suffix));
  EXPECT_EQ(number, 121);
  EXPECT_EQ(suffix, "");
  EXPECT_FALSE(parse_arch("compute_90", &number, &suffix));
  EXPECT_FALSE(parse_arch("sm_", &number, &suffix));
  EXPECT_FALSE(parse_arch("sm_90x", &number, &suffix));
}

}  // namespace
}  // namespace dietcode

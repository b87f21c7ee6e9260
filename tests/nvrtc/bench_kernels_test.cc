// bench's helper kernels (elementwise epilogue for the unfused cuBLAS baseline, spin,
// im2col for the conv2d fallback) compile with NVRTC for every arch bench may meet, with no spills;
// and the arch bench picks for a GPU from what NVRTC supports. No GPU needed.
#include "bench/bench_kernels.h"

#include <gtest/gtest.h>

#include <set>

#include "bench/im2col_index.h"
#include "nvrtc/nvrtc_compiler.h"

namespace dietcode {
namespace {

TEST(BenchKernels, CompileForEveryArchWithoutSpills) {
  NvrtcCompiler compiler;
  for (const char* arch : {"sm_75", "sm_80", "sm_90", "sm_100"}) {
    SCOPED_TRACE(arch);
    const CompileResult result = compiler.compile(bench_kernels_request(arch));
    ASSERT_TRUE(result.ok) << result.log;
    ASSERT_EQ(result.binaries.size(), 1u);
    EXPECT_FALSE(result.binaries[0].cubin.empty());
    EXPECT_FALSE(result.spills());
    std::set<std::string> entries;
    for (const KernelResources& r : result.binaries[0].resources) entries.insert(r.entry);
    EXPECT_EQ(entries,
              (std::set<std::string>{"dietcode_bench_epilogue_f32", "dietcode_bench_epilogue_f16",
                                     "dietcode_bench_epilogue_bf16", "dietcode_bench_spin",
                                     "dietcode_bench_im2col_32", "dietcode_bench_im2col_16"}));
  }
}

TEST(BenchKernels, PtxForAGpuNewerThanNvrtc) {
  NvrtcCompiler compiler;
  CompileRequest request = bench_kernels_request("sm_90");
  request.want_ptx = true;
  const CompileResult result = compiler.compile(request);
  ASSERT_TRUE(result.ok) << result.log;
  EXPECT_NE(result.ptx.find(".entry dietcode_bench_spin"), std::string::npos);
  // The L2 flush is not among them: bench loads the tuner's (cuda/l2_flush.h).
  EXPECT_EQ(result.ptx.find("flush"), std::string::npos);
}

// The GPU's im2col indexes with exactly the function the host tests check (im2col_index.h).
TEST(BenchKernels, Im2colUsesTheSharedIndexFunction) {
  const std::string source = bench_kernels_source();
  const std::string device_function =
      DIETCODE_STRINGIZE_EXPANDED(DIETCODE_IM2COL_INDEX_FUNCTION(__device__ __forceinline__));
  EXPECT_EQ(
      device_function.rfind("__device__ __forceinline__ long long dietcode_im2col_source(", 0), 0u)
      << device_function;
  EXPECT_NE(source.find(device_function), std::string::npos);
  EXPECT_NE(source.find("const long long from = dietcode_im2col_source(i, gemm_k, c, s, p, q, h, "
                        "w, stride_h,"),
            std::string::npos);
  // Both element sizes are in the sm_80 and sm_90 cubins' PTX.
  NvrtcCompiler compiler;
  for (const char* arch : {"sm_80", "sm_90"}) {
    CompileRequest request = bench_kernels_request(arch);
    request.want_ptx = true;
    const CompileResult result = compiler.compile(request);
    ASSERT_TRUE(result.ok) << result.log;
    EXPECT_NE(result.ptx.find(".entry dietcode_bench_im2col_32"), std::string::npos) << arch;
    EXPECT_NE(result.ptx.find(".entry dietcode_bench_im2col_16"), std::string::npos) << arch;
  }
}

TEST(BenchKernels, ArchChoice) {
  const std::vector<int> supported = {75, 80, 86, 89, 90, 100, 120};
  bool ptx = true;
  EXPECT_EQ(bench_kernels_arch(90, supported, &ptx), "sm_90");
  EXPECT_FALSE(ptx);
  EXPECT_EQ(bench_kernels_arch(87, supported, &ptx), "sm_86");  // same major, older minor: PTX
  EXPECT_TRUE(ptx);
  EXPECT_EQ(bench_kernels_arch(130, supported, &ptx), "sm_120");
  EXPECT_TRUE(ptx);
  EXPECT_EQ(bench_kernels_arch(70, supported, &ptx), "");
}

}  // namespace
}  // namespace dietcode

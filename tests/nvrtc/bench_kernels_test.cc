// bench's helper kernels (elementwise epilogue for the unfused cuBLAS baseline, L2 flush, spin)
// compile with NVRTC for every arch bench may meet, with no spills; and the arch bench picks
// for a GPU from what NVRTC supports. No GPU needed.
#include "bench/bench_kernels.h"

#include <gtest/gtest.h>

#include <set>

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
                                     "dietcode_bench_epilogue_bf16", "dietcode_bench_flush",
                                     "dietcode_bench_spin"}));
  }
}

TEST(BenchKernels, PtxForAGpuNewerThanNvrtc) {
  NvrtcCompiler compiler;
  CompileRequest request = bench_kernels_request("sm_90");
  request.want_ptx = true;
  const CompileResult result = compiler.compile(request);
  ASSERT_TRUE(result.ok) << result.log;
  EXPECT_NE(result.ptx.find(".entry dietcode_bench_flush"), std::string::npos);
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

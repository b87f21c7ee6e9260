// float16 / bfloat16 batch_matmul on the tensor-core templates, through generate_kernel as the
// tuner makes them: A[b] = [M,K] and B[b] stored [N,K] (attention scores Q.K^T) compile with
// NVRTC and no register spills for dense_tc on sm_80 and sm_90 and for dense_wgmma (both
// producers) on sm_90a; B[b] stored [K,N] (probs.V) for dense_tc; the 16-bit reference kernel
// compiles for every batch_matmul layout. (What code generation passes for them:
// tests/unit/tensor_core_bmm_codegen_test.cc.) Prints registers and compile time per
// kernel and arch.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "codegen/generated_kernel.h"
#include "nvrtc/dense_f32_nvrtc.h"
#include "nvrtc/tc_compile_check.h"

namespace dietcode {
namespace {

using testing::tc_params;
using testing::wg_params;

using ::testing::Contains;
using ::testing::Not;

Expr dim(int64_t value, const char* var) {
  return value > 0 ? Expr::constant(value) : Expr::parse(var);
}

// BERT attention's shapes by default: 192 heads x batch, sequence T, head size 64.
OpSpec bmm_op(int64_t n, int64_t k, DType dtype, bool transpose_a = false,
              bool transpose_b = true) {
  OpSpec op;
  op.name = "qk";
  op.kind = OpKind::kBatchMatmul;
  op.dtype = dtype;
  op.transpose_a = transpose_a, op.transpose_b = transpose_b;
  op.dims = {
      {"B", Expr::constant(192)}, {"M", Expr::parse("T")}, {"N", dim(n, "T")}, {"K", dim(k, "T")}};
  op.vars = {"T"};
  return op;
}

struct Case {
  std::string label;
  std::string tmpl;
  std::map<std::string, int> params;
  int64_t n = 0, k = 64;  // 0: dynamic (T)
  DType dtype = DType::kBFloat16;
  bool transpose_b = true;  // false: B stored [K,N] (probs.V), dense_tc only
};

// Every case through generate_kernel, then compiled and checked (tc_compile_check.h).
void compile_cases(const std::vector<Case>& cases) {
  std::vector<testing::LabelledKernel> kernels;
  for (const Case& c : cases)
    kernels.push_back({c.label, generate_kernel(bmm_op(c.n, c.k, c.dtype, false, c.transpose_b),
                                                MicroKernel{c.tmpl, c.params})});
  testing::compile_and_check_all(kernels);
}

TEST(BatchMatmulTcTemplate, DenseTcVariantsCompileWithoutSpills) {
  compile_cases({
      {"QK^T defaults bf16 K=64", "dense_tc", {}},
      {"QK^T f16 16x8 warp, dynamic N", "dense_tc", tc_params(1, 1, 16, 8, 32, 2), 0, 64,
       DType::kFloat16},
      {"QK^T 2x2 warps 32x32 BK64 SPLITK=2", "dense_tc", tc_params(2, 2, 32, 32, 64, 3, 2)},
      {"dynamic K (scalar fallback) N=128", "dense_tc", tc_params(2, 2, 64, 32, 32, 3), 128, 0},
      {"static K=72 N=45 f16 SPLITK=3", "dense_tc", tc_params(1, 2, 48, 16, 32, 4, 3), 45, 72,
       DType::kFloat16},
  });
}

// probs.V: B stored [K,N], read with ldmatrix .trans; N = 64 (the head size) or runtime, and
// block tiles whose B rows have 1, 2, 4, 8 and 16 chunks (every swizzle width).
TEST(BatchMatmulTcTemplate, DenseTcWithBStoredKNCompilesWithoutSpills) {
  const bool kn = false;
  compile_cases({
      {"PV defaults bf16 N=64", "dense_tc", {}, 64, 0, DType::kBFloat16, kn},
      {"PV f16 16x8 warp (1 chunk), dynamic N", "dense_tc", tc_params(1, 1, 16, 8, 32, 2), 0, 0,
       DType::kFloat16, kn},
      {"PV 2x2 warps 32x24 (6 chunks) SPLITK=3", "dense_tc", tc_params(2, 2, 32, 24, 64, 3, 3), 64,
       0, DType::kBFloat16, kn},
      {"PV 1x2 warps 48x16 (4 chunks) static K=72", "dense_tc", tc_params(1, 2, 48, 16, 32, 4), 64,
       72, DType::kFloat16, kn},
      {"PV 2x2 warps 64x64 (16 chunks) BK64 4 stages", "dense_tc", tc_params(2, 2, 64, 64, 64, 4),
       0, 0, DType::kBFloat16, kn},
      {"PV largest: 4x2 warps of 64x64 BK64 4 stages", "dense_tc", tc_params(4, 2, 64, 64, 64, 4),
       0, 0, DType::kBFloat16, kn},
      {"PV one warp 128x32", "dense_tc", tc_params(1, 1, 128, 32, 32, 3), 64, 0, DType::kBFloat16,
       kn},
      {"PV one warp 16x128 BK64 4 stages", "dense_tc", tc_params(1, 1, 16, 128, 64, 4), 0, 0,
       DType::kFloat16, kn},
      {"PV 32 warps 8x4 of 16x16, 1024 threads", "dense_tc", tc_params(8, 4, 16, 16, 32, 2), 64, 0,
       DType::kBFloat16, kn},
      {"PV static N=45 (2-byte B loads)", "dense_tc", tc_params(2, 2, 32, 32, 32, 3), 45, 0,
       DType::kFloat16, kn},
  });
}

TEST(BatchMatmulTcTemplate, DenseWgmmaVariantsCompileWithoutSpillsForBothProducers) {
  std::vector<Case> cases;
  for (int producer : {0, 1}) {
    const std::string p = producer ? "TMA " : "cp.async ";
    cases.push_back({p + "QK^T WG_M=1 BN=64", "dense_wgmma", wg_params(1, 64, 4, 1, producer)});
    cases.push_back({p + "QK^T WG_M=2 BN=128 SPLITK=2 f16", "dense_wgmma",
                     wg_params(2, 128, 3, 2, producer), 0, 64, DType::kFloat16});
    cases.push_back({p + "static N=512 K=64 BN=256", "dense_wgmma",
                     wg_params(2, 256, 4, 1, producer), 512, 64});
  }
  cases.push_back({"cp.async dynamic K", "dense_wgmma", wg_params(2, 128, 4, 1, 0), 0, 0});
  compile_cases(cases);
}

TEST(BatchMatmulTcTemplate, ReferenceKernelCompilesForEveryLayout) {
  for (const DType dtype : {DType::kFloat16, DType::kBFloat16})
    for (const bool ta : {false, true})
      for (const bool tb : {false, true}) {
        const auto k = generate_reference_kernel(bmm_op(0, 0, dtype, ta, tb));
        EXPECT_THAT(k.options, Not(Contains("-DCONV_NHWC=1")));
        for (const std::string arch : {"sm_80", "sm_90"}) {
          const auto build = testing::nvrtc_build("reference_gemm.cu", k.source, k.options, arch);
          ASSERT_TRUE(build.ok) << to_string(dtype) << " " << ta << tb << " " << arch << "\n"
                                << build.log;
          ASSERT_NE(build.entry("dietcode_reference_gemm"), nullptr);
        }
      }
}

}  // namespace
}  // namespace dietcode

// Code generation for 16-bit batch_matmul on the tensor-core templates: the batch and M stay
// runtime values while a constant N or K becomes STATIC_N / STATIC_K, dense_tc is told how B is
// stored (B_K_CONTIGUOUS), the plan's alignment follows the pitches that 16-byte copies walk,
// the TMA producer's plan, the batch in the grid's z, and refusals that name the layout.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "codegen/generated_kernel.h"
#include "common/error.h"

namespace dietcode {
namespace {

using ::testing::Contains;

Expr dim(int64_t value, const char* var) {
  return value > 0 ? Expr::constant(value) : Expr::parse(var);
}

// BERT attention's shapes: 192 heads x batch, sequence T; n, k constant when positive.
OpSpec bmm_op(int64_t n, int64_t k, bool transpose_a, bool transpose_b,
              DType dtype = DType::kBFloat16) {
  OpSpec op;
  op.name = "bmm";
  op.kind = OpKind::kBatchMatmul;
  op.dtype = dtype;
  op.transpose_a = transpose_a, op.transpose_b = transpose_b;
  op.dims = {
      {"B", Expr::constant(192)}, {"M", Expr::parse("T")}, {"N", dim(n, "T")}, {"K", dim(k, "T")}};
  op.vars = {"T"};
  return op;
}

bool has_prefix(const std::vector<std::string>& options, const std::string& prefix) {
  for (const auto& o : options)
    if (o.rfind(prefix, 0) == 0) return true;
  return false;
}

TEST(TensorCoreBmmCodegen, ScoresOnDenseTcAreReadLikeDense) {
  const auto qk = generate_kernel(bmm_op(0, 64, false, true), MicroKernel{"dense_tc", {}});
  EXPECT_THAT(qk.options, Contains("-DSTATIC_K=64"));
  EXPECT_THAT(qk.options, Contains("-DDTYPE=2"));
  EXPECT_THAT(qk.options, Contains("-DB_K_CONTIGUOUS=1"));
  for (const char* absent : {"-DSTATIC_N", "-DSTATIC_M", "-DSTATIC_B", "-DA_K_CONTIGUOUS"})
    EXPECT_FALSE(has_prefix(qk.options, absent)) << absent;
  EXPECT_EQ(qk.plan.min_alignment_bytes, 16);
  unsigned grid[3];
  qk.plan.grid(GemmShape{192, 100, 100, 64}, grid);
  EXPECT_EQ(grid[0], 2u);    // ceil(100 / 64)
  EXPECT_EQ(grid[2], 192u);  // the batch in z
}

TEST(TensorCoreBmmCodegen, ValuesOnDenseTcReadBStoredKN) {
  const auto pv = generate_kernel(bmm_op(64, 0, false, false), MicroKernel{"dense_tc", {}});
  EXPECT_THAT(pv.options, Contains("-DB_K_CONTIGUOUS=0"));
  EXPECT_THAT(pv.options, Contains("-DSTATIC_N=64"));
  EXPECT_FALSE(has_prefix(pv.options, "-DSTATIC_K"));
  EXPECT_EQ(pv.plan.min_alignment_bytes, 16);
  // A's pitch K and B's pitch N both static and not multiples of 8: only 2-byte loads remain,
  // and the packed 32-bit stores want 4 bytes.
  EXPECT_EQ(generate_kernel(bmm_op(45, 13, false, false), MicroKernel{"dense_tc", {}})
                .plan.min_alignment_bytes,
            4);
  // Either one a multiple of 8 (or dynamic) keeps 16-byte copies for its operand.
  EXPECT_EQ(generate_kernel(bmm_op(45, 64, false, false), MicroKernel{"dense_tc", {}})
                .plan.min_alignment_bytes,
            16);
  EXPECT_EQ(generate_kernel(bmm_op(64, 13, false, false), MicroKernel{"dense_tc", {}})
                .plan.min_alignment_bytes,
            16);
  EXPECT_EQ(generate_kernel(bmm_op(0, 13, false, false), MicroKernel{"dense_tc", {}})
                .plan.min_alignment_bytes,
            16);
  // With B stored [N,K] only K counts, as for dense.
  EXPECT_EQ(generate_kernel(bmm_op(64, 13, false, true), MicroKernel{"dense_tc", {}})
                .plan.min_alignment_bytes,
            4);
}

TEST(TensorCoreBmmCodegen, ScoresOnDenseWgmmaBothProducers) {
  const auto cp =
      generate_kernel(bmm_op(0, 64, false, true, DType::kFloat16), MicroKernel{"dense_wgmma", {}});
  EXPECT_EQ(cp.arch_suffix, "a");
  EXPECT_EQ(cp.plan.tma_box_k, 0);
  EXPECT_FALSE(has_prefix(cp.options, "-DB_K_CONTIGUOUS"));  // it reads one layout only
  const auto tma = generate_kernel(bmm_op(128, 64, false, true, DType::kFloat16),
                                   MicroKernel{"dense_wgmma", {{"WG_M", 1}, {"PRODUCER", 1}}});
  EXPECT_THAT(tma.options, Contains("-DSTATIC_N=128"));
  EXPECT_EQ(tma.plan.tma_box_k, 64);
  EXPECT_EQ(tma.plan.min_alignment_bytes, 16);
  try {
    generate_kernel(bmm_op(0, 0, false, true), MicroKernel{"dense_wgmma", {{"PRODUCER", 1}}});
    FAIL() << "a TMA producer took a dynamic K";
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(),
                 "op \"bmm\": dense_wgmma with PRODUCER=1 (TMA) needs a static K that is a "
                 "multiple of 8");
  }
}

TEST(TensorCoreBmmCodegen, LayoutsATemplateDoesNotReadAreRefusedByName) {
  const std::pair<std::string, OpSpec> cases[] = {
      {"dense_wgmma", bmm_op(64, 0, false, false)},
      {"dense_tc", bmm_op(0, 64, true, false)},
      {"dense_wgmma", bmm_op(0, 64, true, true)},
  };
  const char* messages[] = {
      "template \"dense_wgmma\" cannot compute op \"bmm\" (batch_matmul, bfloat16, A stored "
      "[M,K], B stored [K,N])",
      "template \"dense_tc\" cannot compute op \"bmm\" (batch_matmul, bfloat16, A stored [K,M], "
      "B stored [K,N])",
      "template \"dense_wgmma\" cannot compute op \"bmm\" (batch_matmul, bfloat16, A stored "
      "[K,M], B stored [N,K])",
  };
  for (size_t i = 0; i < 3; ++i) {
    try {
      generate_kernel(cases[i].second, MicroKernel{cases[i].first, {}});
      ADD_FAILURE() << messages[i];
    } catch (const UserError& e) {
      EXPECT_STREQ(e.what(), messages[i]);
    }
  }
}

}  // namespace
}  // namespace dietcode

// Every branch of templates/batch_matmul_f32.cu compiles with NVRTC for sm_80 and sm_90 with no
// register spills: each transpose combination with static and with dynamic M, N and K, each
// pipeline mode, split-K with its reduction, the epilogues a batch_matmul can have, tiles whose
// row count VEC does not divide, and the BERT attention shapes. Kernels go through
// generate_kernel, so the plan's compile-time checks (DIETCODE_EXPECT_SMEM/THREADS) run too.
// Prints registers and compile time per kernel.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "codegen/generated_kernel.h"
#include "codegen/template_source.h"
#include "nvrtc/gemm_f32_compile_check.h"
#include "nvrtc/simt_tile_params.h"

namespace dietcode {
namespace {

using testing::simt_tile;

Expr dim(const std::string& text) {
  return std::isdigit(static_cast<unsigned char>(text[0])) ? Expr::constant(std::stoll(text))
                                                           : Expr::parse(text);
}

OpSpec bmm_op(bool ta, bool tb, const std::string& m, const std::string& n, const std::string& k,
              Epilogue epilogue = Epilogue::kNone) {
  OpSpec op;
  op.name = "bmm";
  op.kind = OpKind::kBatchMatmul;
  op.epilogue = epilogue;
  op.transpose_a = ta;
  op.transpose_b = tb;
  op.dims = {{"B", Expr::parse("B")}, {"M", dim(m)}, {"N", dim(n)}, {"K", dim(k)}};
  op.vars = {"B", "T"};
  return op;
}

void compile(const std::string& label, const OpSpec& op, const std::map<std::string, int>& p) {
  testing::compile_and_check(label, generate_kernel(op, MicroKernel{"batch_matmul_f32", p}));
}

const char* layout_name(bool ta, bool tb) {
  return ta ? (tb ? "A^T B^T" : "A^T B") : (tb ? "A B^T" : "A B");
}

TEST(BatchMatmulF32Template, CompilesAloneAtItsDefaults) {
  const std::string source = load_template_source("batch_matmul_f32.cu");
  for (const std::string arch : {"sm_80", "sm_90"}) {
    const auto build = testing::nvrtc_build("batch_matmul_f32.cu", source, {}, arch);
    ASSERT_TRUE(build.ok) << build.log;
    ASSERT_NE(build.entry("dietcode_batch_matmul_f32"), nullptr);
    EXPECT_EQ(build.entry("dietcode_batch_matmul_f32")->spill_stores, 0);
    ASSERT_NE(build.entry("dietcode_batch_matmul_f32_reduce"), nullptr);
  }
}

TEST(BatchMatmulF32Template, EveryTransposeStaticAndDynamic) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      const std::string name = layout_name(ta, tb);
      compile(name + " defaults, static 128x64x256", bmm_op(ta, tb, "128", "64", "256"), {});
      compile(name + " defaults, dynamic M N K", bmm_op(ta, tb, "T", "T+1", "2*T"), {});
    }
}

TEST(BatchMatmulF32Template, EveryPipelineModeEveryLayout) {
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (int stages = 1; stages <= 4; ++stages)
        compile(std::string(layout_name(ta, tb)) + " STAGES=" + std::to_string(stages),
                bmm_op(ta, tb, "T", "64", "T"),
                simt_tile(2, 2, 4, 8, 4, 8, stages >= 3 ? 1 : 4, stages));
}

TEST(BatchMatmulF32Template, SplitKWithReductionAndEpilogues) {
  compile("A B^T SPLITK=4 cp.async relu", bmm_op(false, true, "T", "T", "64", Epilogue::kRelu),
          simt_tile(1, 2, 4, 4, 4, 16, 1, 3, 4));
  compile("A^T B SPLITK=3 vec4 gelu", bmm_op(true, false, "T", "64", "T", Epilogue::kGelu),
          simt_tile(2, 1, 8, 4, 4, 8, 4, 2, 3));
  compile("A^T B^T SPLITK=16 BK=32 cp.async3, one warp", bmm_op(true, true, "T", "T", "T"),
          simt_tile(1, 1, 4, 4, 4, 32, 1, 3, 16));
  compile("A^T B^T SPLITK=8 BK=16 cp.async4, one warp", bmm_op(true, true, "T", "T", "T"),
          simt_tile(1, 1, 4, 4, 4, 16, 1, 4, 8));
}

TEST(BatchMatmulF32Template, TilesVecDoesNotDivideAndExtremes) {
  compile("A^T B BM=6 BN=48 vec4", bmm_op(true, false, "T", "T", "T"),
          simt_tile(1, 1, 2, 3, 3, 8, 4, 2));
  compile("A B BN=3 vec4 single buffer", bmm_op(false, false, "T", "T", "T"),
          simt_tile(1, 1, 32, 2, 3, 4, 4, 1));
  compile("smallest: 1x1 warps, 1x32 lanes, 1x4", bmm_op(true, false, "T", "T", "T"),
          simt_tile(1, 1, 1, 1, 4, 4, 1, 1));
  compile("largest: 256x128, 512 threads, 3 stages", bmm_op(true, false, "T", "T", "T"),
          simt_tile(4, 4, 8, 8, 8, 16, 1, 3));
  compile("largest: 128x256 BK 32 4 stages", bmm_op(false, false, "T", "T", "T"),
          simt_tile(2, 4, 8, 8, 8, 32, 1, 4));
}

TEST(BatchMatmulF32Template, BertAttention) {
  // qk: [T,64] x [T,64]^T per head; av: [T,T] x [T,64].
  compile("qk B^T K=64 64x64 vec4", bmm_op(false, true, "T", "T", "64"),
          simt_tile(2, 2, 4, 8, 4, 16, 4, 2));
  compile("av N=64 32x64 cp.async3", bmm_op(false, false, "T", "64", "T"),
          simt_tile(2, 2, 4, 4, 4, 16, 1, 3));
}

}  // namespace
}  // namespace dietcode

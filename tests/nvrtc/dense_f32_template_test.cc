// Every branch of templates/dense_f32.cu compiles with NVRTC for sm_80 and sm_90 with no
// register spills: defaults, smallest and largest tiles, each pipeline mode, each vector
// width, PRELOAD, split-K with its reduction, every epilogue, static and dynamic N/K, and N=1000,
// K=771. Kernels go through generate_kernel, so the plan's compile-time checks
// (DIETCODE_EXPECT_SMEM/THREADS) run too. Prints registers and compile time per kernel.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "codegen/generated_kernel.h"
#include "codegen/template_source.h"
#include "common/paths.h"
#include "nvrtc/dense_f32_nvrtc.h"
#include "nvrtc/gemm_f32_compile_check.h"
#include "nvrtc/simt_tile_params.h"

namespace dietcode {
namespace {

using testing::simt_tile;

OpSpec dense_op(int64_t n, int64_t k, Epilogue epilogue) {
  OpSpec op;
  op.name = "fc";
  op.kind = OpKind::kDense;
  op.dtype = DType::kFloat32;
  op.epilogue = epilogue;
  op.dims = {{"M", Expr::parse("16*T")},
             {"N", n > 0 ? Expr::constant(n) : Expr::parse("N")},
             {"K", k > 0 ? Expr::constant(k) : Expr::parse("K")}};
  op.vars = {"T"};
  return op;
}

struct Case {
  std::string label;
  std::map<std::string, int> params;
  int64_t n = 2304, k = 768;  // 0: dynamic
  Epilogue epilogue = Epilogue::kNone;
};

// Compiles for both archs, asserts success and no spills in either entry.
void compile_case(const Case& c) {
  testing::compile_and_check(
      c.label, generate_kernel(dense_op(c.n, c.k, c.epilogue), MicroKernel{"dense_f32", c.params}));
}

TEST(DenseF32Template, CompilesAloneAtItsDefaults) {
  // No options at all: the template's own #ifndef defaults, dynamic N and K.
  const std::string source = load_template_source("dense_f32.cu");
  for (const std::string arch : {"sm_80", "sm_90"}) {
    const auto build = testing::nvrtc_build("dense_f32.cu", source, {}, arch);
    ASSERT_TRUE(build.ok) << build.log;
    ASSERT_NE(build.entry("dietcode_dense_f32"), nullptr);
    EXPECT_EQ(build.entry("dietcode_dense_f32")->spill_stores, 0);
    ASSERT_NE(build.entry("dietcode_dense_f32_reduce"), nullptr);
  }
}

TEST(DenseF32Template, DefaultsThroughCodegen) { compile_case({"defaults, static 2304x768", {}}); }

TEST(DenseF32Template, SmallestAndLargestTiles) {
  compile_case({"smallest: 1x1 warps, 1x32 lanes, 1x4", simt_tile(1, 1, 1, 1, 4, 4, 1, 1)});
  compile_case(
      {"small-M split-K: 16x64, SPLITK 4", simt_tile(1, 2, 4, 4, 4, 16, 4, 2, 4), 768, 3072});
  compile_case({"largest: 256x128, 512 threads, 3 stages", simt_tile(4, 4, 8, 8, 8, 16, 1, 3)});
  compile_case({"largest: 128x256 BK 32 4 stages", simt_tile(2, 4, 8, 8, 8, 32, 1, 4)});
}

TEST(DenseF32Template, MinBlocksCapsRegistersWithoutSpills) {
  auto params = simt_tile(4, 2, 4, 8, 8, 8, 1, 3);
  params["MIN_BLOCKS"] = 2;
  compile_case({"128x128 bk8 cp.async3 MIN_BLOCKS=2", params});
  params = simt_tile(2, 2, 4, 8, 4, 16, 4, 2);
  params["MIN_BLOCKS"] = 2;
  compile_case({"64x64 bk16 vec4 MIN_BLOCKS=2", params});
}

// PRELOAD at the seeds' 128 outputs per thread, where it costs the most registers (251-253 of
// 255 on sm_90, register staged). (At 512 threads, whose cap is 128 registers, it spills; the
// space's register estimate rules those tiles out with or without it.)
TEST(DenseF32Template, PreloadWithoutSpills) {
  for (int stages : {2, 3, 4}) {
    auto params = simt_tile(2, 2, 4, 16, 8, 8, stages >= 3 ? 1 : 4, stages);
    params["PRELOAD"] = 1;
    compile_case({"128x128 16x8/thread PRELOAD STAGES=" + std::to_string(stages), params});
    params = simt_tile(1, 4, 4, 16, 8, 8, stages >= 3 ? 1 : 4, stages);
    params["PRELOAD"] = 1;
    compile_case({"64x256 16x8/thread PRELOAD STAGES=" + std::to_string(stages), params});
  }
}

TEST(DenseF32Template, EveryPipelineMode) {
  for (int stages = 1; stages <= 4; ++stages)
    compile_case({"STAGES=" + std::to_string(stages),
                  simt_tile(4, 2, 4, 8, 8, 8, stages >= 3 ? 1 : 4, stages)});
}

TEST(DenseF32Template, EveryVectorWidth) {
  for (int vec : {1, 2, 4})
    compile_case(
        {"VEC=" + std::to_string(vec) + " dynamic K", simt_tile(2, 2, 8, 4, 4, 16, vec, 2), 0, 0});
}

TEST(DenseF32Template, SplitKWithReduction) {
  compile_case(
      {"SPLITK=16 cp.async", simt_tile(1, 1, 4, 4, 4, 32, 1, 3, 16), 768, 3072, Epilogue::kBias});
  compile_case(
      {"SPLITK=3 dynamic N,K", simt_tile(1, 4, 4, 4, 4, 8, 4, 2, 3), 0, 0, Epilogue::kBiasGelu});
}

TEST(DenseF32Template, EveryEpilogue) {
  for (int e = 0; e <= 5; ++e)
    compile_case({"EPILOGUE=" + std::to_string(e), simt_tile(2, 2, 4, 4, 8, 8, 4, 2), 3072, 768,
                  static_cast<Epilogue>(e)});
}

TEST(DenseF32Template, OddShapesAndNonPowerOfTwoThreadTiles) {
  compile_case({"N=1000 K=771 (VEC falls back to 1)", simt_tile(2, 2, 4, 8, 8, 8, 4, 2), 1000, 771,
                Epilogue::kBiasRelu});
  compile_case({"TM=3 TN=6", simt_tile(2, 2, 8, 3, 6, 8, 2, 2), 1000, 771});
  compile_case({"TM=6 TN=3 cp.async", simt_tile(2, 2, 2, 6, 3, 16, 1, 4), 0, 0, Epilogue::kGelu});
}

}  // namespace
}  // namespace dietcode

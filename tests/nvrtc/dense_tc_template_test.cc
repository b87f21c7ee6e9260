// Every branch of the tensor-core templates compiles with NVRTC and no register spills:
// dense_tc (mma.sync) for sm_80 and sm_90 — defaults, smallest and largest tiles, each
// pipeline depth with each BK, odd n8 counts, split-K with its reduction, every epilogue, f16
// and bf16, static and dynamic N/K, a K that is not a multiple of 8, an odd N, MIN_BLOCKS, and
// Llama-7B MLP layers — and dense_wgmma for sm_90a over power-of-two and other tile widths, one
// to four consumer warpgroups and every pipeline depth, with the cp.async producer and with the
// TMA one; and the 16-bit reference kernel for every arch. Kernels go through generate_kernel, so the plans' compile-time checks run too. The
// templates refuse archs they cannot serve with a clear #error. Prints registers and compile time
// per kernel and arch.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "codegen/generated_kernel.h"
#include "codegen/template_source.h"
#include "common/error.h"
#include "nvrtc/dense_f32_nvrtc.h"
#include "nvrtc/tc_compile_check.h"

namespace dietcode {
namespace {

using testing::tc_params;
using testing::wg_params;

OpSpec dense_op(int64_t n, int64_t k, DType dtype, Epilogue epilogue) {
  OpSpec op;
  op.name = "fc";
  op.kind = OpKind::kDense;
  op.dtype = dtype;
  op.epilogue = epilogue;
  op.dims = {{"M", Expr::parse("16*T")},
             {"N", n > 0 ? Expr::constant(n) : Expr::parse("N")},
             {"K", k > 0 ? Expr::constant(k) : Expr::parse("K")}};
  op.vars = {"T"};
  return op;
}

struct Case {
  std::string label;
  std::string tmpl;
  std::map<std::string, int> params;
  int64_t n = 3072, k = 768;  // 0: dynamic
  DType dtype = DType::kBFloat16;
  Epilogue epilogue = Epilogue::kNone;
};

// Every case through generate_kernel, then compiled and checked (tc_compile_check.h).
void compile_cases(const std::vector<Case>& cases) {
  std::vector<testing::LabelledKernel> kernels;
  for (const Case& c : cases)
    kernels.push_back({c.label, generate_kernel(dense_op(c.n, c.k, c.dtype, c.epilogue),
                                                MicroKernel{c.tmpl, c.params})});
  testing::compile_and_check_all(kernels);
}

// The TMA producer's variant of wg_params().
std::map<std::string, int> tma(int wg_m, int bn, int stages, int split = 1) {
  return wg_params(wg_m, bn, stages, split, 1);
}

TEST(DenseTcTemplate, CompilesAloneAtItsDefaults) {
  const std::string source = load_template_source("dense_tc.cu");
  for (const std::string arch : {"sm_80", "sm_86", "sm_89", "sm_90"}) {
    const auto build = testing::nvrtc_build("dense_tc.cu", source, {}, arch);
    ASSERT_TRUE(build.ok) << arch << "\n" << build.log;
    ASSERT_NE(build.entry("dietcode_dense_tc"), nullptr);
    EXPECT_EQ(build.entry("dietcode_dense_tc")->spill_stores, 0);
    ASSERT_NE(build.entry("dietcode_dense_tc_reduce"), nullptr);
  }
}

TEST(DenseTcTemplate, RefusesArchsWithoutItsInstructions) {
  const auto build =
      testing::nvrtc_build("dense_tc.cu", load_template_source("dense_tc.cu"), {}, "sm_75");
  EXPECT_FALSE(build.ok);
  EXPECT_NE(build.log.find("the tensor-core templates need sm_80 or newer"), std::string::npos)
      << build.log;
}

TEST(DenseTcTemplate, DefaultsBothTypesEveryStageAndBk) {
  std::vector<Case> cases = {{"defaults bf16 3072x768", "dense_tc", {}},
                             {"defaults f16 3072x768", "dense_tc", {}, 3072, 768, DType::kFloat16}};
  for (int bk : {32, 64})
    for (int stages = 2; stages <= 4; ++stages)
      cases.push_back({"128x64 BK=" + std::to_string(bk) + " STAGES=" + std::to_string(stages),
                       "dense_tc", tc_params(2, 2, 64, 32, bk, stages)});
  compile_cases(cases);
}

TEST(DenseTcTemplate, SmallestAndLargestTiles) {
  compile_cases({
      {"smallest: 1 warp 16x8", "dense_tc", tc_params(1, 1, 16, 8, 32, 2), 768, 768},
      {"1x8 warps of 16x8 (16x64)", "dense_tc", tc_params(1, 8, 16, 8, 32, 3), 768, 768},
      {"odd n8 count: 2x2 warps 32x24", "dense_tc", tc_params(2, 2, 32, 24, 64, 3), 1000, 776},
      {"one warp 128x32", "dense_tc", tc_params(1, 1, 128, 32, 32, 3)},
      {"one warp 16x128", "dense_tc", tc_params(1, 1, 16, 128, 64, 4)},
      {"largest: 4x2 warps of 64x64 (256x128) BK64 4 stages", "dense_tc",
       tc_params(4, 2, 64, 64, 64, 4)},
      {"8 warps 2x4 of 64x32 (128x128)", "dense_tc", tc_params(2, 4, 64, 32, 32, 4)},
      {"16 warps 8x2 of 16x64 (128x128)", "dense_tc", tc_params(8, 2, 16, 64, 32, 3)},
      {"32 warps 8x4 of 16x16 (128x64), 1024 threads", "dense_tc", tc_params(8, 4, 16, 16, 32, 2)},
  });
}

TEST(DenseTcTemplate, SplitKEpiloguesAndDimensions) {
  std::vector<Case> cases = {
      {"SPLITK=16 bias f16", "dense_tc", tc_params(1, 2, 16, 32, 32, 4, 16), 768, 3072,
       DType::kFloat16, Epilogue::kBias},
      {"SPLITK=3 dynamic N,K bias_gelu", "dense_tc", tc_params(2, 2, 32, 32, 64, 3, 3), 0, 0,
       DType::kBFloat16, Epilogue::kBiasGelu},
      {"static K=771 (scalar loads), N=1001", "dense_tc", tc_params(2, 2, 64, 32, 32, 3), 1001, 771,
       DType::kFloat16, Epilogue::kBiasRelu},
      {"dynamic N,K defaults", "dense_tc", {}, 0, 0},
      {"MIN_BLOCKS=2 128x64", "dense_tc",
       [] {
         auto p = tc_params(2, 2, 64, 32, 32, 3);
         p["MIN_BLOCKS"] = 2;
         return p;
       }()},
      {"Llama up 11008x4096 128x128", "dense_tc", tc_params(2, 2, 64, 64, 32, 4), 11008, 4096},
      {"Llama down 4096x11008 SPLITK=4", "dense_tc", tc_params(1, 4, 16, 32, 64, 4, 4), 4096,
       11008},
  };
  for (int e = 0; e <= 5; ++e)
    cases.push_back({"EPILOGUE=" + std::to_string(e) + " f16", "dense_tc",
                     tc_params(2, 2, 32, 32, 32, 3), 3072, 768, DType::kFloat16,
                     static_cast<Epilogue>(e)});
  compile_cases(cases);
}

TEST(ReferenceGemm, SixteenBitVariantsCompileForEveryArch) {
  for (const DType dtype : {DType::kFloat16, DType::kBFloat16}) {
    const auto k = generate_reference_kernel(dense_op(0, 0, dtype, Epilogue::kBiasGelu));
    for (const std::string arch : {"sm_75", "sm_80", "sm_90"}) {
      const auto build = testing::nvrtc_build("reference_gemm.cu", k.source, k.options, arch);
      ASSERT_TRUE(build.ok) << to_string(dtype) << " " << arch << "\n" << build.log;
      ASSERT_NE(build.entry("dietcode_reference_gemm"), nullptr);
    }
  }
}

TEST(DenseWgmmaTemplate, CompilesAloneAtItsDefaultsForSm90aOnly) {
  const std::string source = load_template_source("dense_wgmma.cu");
  const auto build = testing::nvrtc_build("dense_wgmma.cu", source, {}, "sm_90a");
  ASSERT_TRUE(build.ok) << build.log;
  ASSERT_NE(build.entry("dietcode_dense_wgmma"), nullptr);
  EXPECT_EQ(build.entry("dietcode_dense_wgmma")->spill_stores, 0);
  ASSERT_NE(build.entry("dietcode_dense_wgmma_reduce"), nullptr);
  const auto plain = testing::nvrtc_build("dense_wgmma.cu", source, {}, "sm_90");
  EXPECT_FALSE(plain.ok);
  EXPECT_NE(plain.log.find("dense_wgmma needs sm_90a (wgmma.mma_async)"), std::string::npos)
      << plain.log;
}

TEST(DenseWgmmaTemplate, EveryWarpgroupShapeAndStage) {
  std::vector<Case> cases;
  for (int wg_m : {1, 2})
    for (int bn : {64, 128, 256})
      cases.push_back({"WG_M=" + std::to_string(wg_m) + " BN=" + std::to_string(bn) + " 4 stages",
                       "dense_wgmma", wg_params(wg_m, bn, 4)});
  for (int stages : {2, 3, 5, 6})
    cases.push_back({"WG_M=1 BN=128 STAGES=" + std::to_string(stages), "dense_wgmma",
                     wg_params(1, 128, stages)});
  compile_cases(cases);
}

// Widths that are not powers of two (the ones that fit Llama-7B's 11008 columns to 132 SMs) and
// three and four consumer warpgroups at the widest tile the space's register estimate lets each
// have: 512 threads get 128 registers, 640 get 96.
TEST(DenseWgmmaTemplate, TileWidthsOfEveryN8AndUpToFourConsumers) {
  std::vector<Case> cases = {
      {"WG_M=1 BN=88", "dense_wgmma", wg_params(1, 88, 6), 11008, 4096},
      {"WG_M=2 BN=168", "dense_wgmma", wg_params(2, 168, 4), 11008, 4096},
      {"WG_M=2 BN=72 static odd N", "dense_wgmma", wg_params(2, 72, 4), 1001, 771},
      {"WG_M=3 BN=176", "dense_wgmma", wg_params(3, 176, 3), 11008, 4096},
      {"WG_M=3 BN=88 SPLITK=2", "dense_wgmma", wg_params(3, 88, 4, 2), 4096, 11008},
      {"WG_M=4 BN=112", "dense_wgmma", wg_params(4, 112, 3), 11008, 4096},
      {"WG_M=4 BN=64 dynamic N,K", "dense_wgmma", wg_params(4, 64, 4), 0, 0, DType::kBFloat16,
       Epilogue::kBiasGelu},
      {"TMA WG_M=1 BN=88", "dense_wgmma", tma(1, 88, 6), 11008, 4096},
      {"TMA WG_M=2 BN=168", "dense_wgmma", tma(2, 168, 4), 11008, 4096},
      {"TMA WG_M=3 BN=176", "dense_wgmma", tma(3, 176, 3), 11008, 4096},
      {"TMA WG_M=4 BN=112 SPLITK=3", "dense_wgmma", tma(4, 112, 3, 3), 4096, 11008},
  };
  compile_cases(cases);
}

// The staged store (EPI_SMEM=1): every epilogue, widths that are and are not multiples of its
// 64-column chunks, both producers, an odd static N; the accumulators stay in registers.
TEST(DenseWgmmaTemplate, StagedStoreEveryEpilogueAndWidth) {
  auto staged = [](std::map<std::string, int> p) {
    p["EPI_SMEM"] = 1;
    return p;
  };
  std::vector<Case> cases = {
      {"EPI_SMEM WG_M=2 BN=256", "dense_wgmma", staged(wg_params(2, 256, 3)), 3072, 768},
      {"EPI_SMEM WG_M=3 BN=88", "dense_wgmma", staged(wg_params(3, 88, 4)), 11008, 4096},
      {"EPI_SMEM WG_M=2 BN=168 TMA", "dense_wgmma", staged(tma(2, 168, 4)), 11008, 4096},
      {"EPI_SMEM static odd N=1001 K=771", "dense_wgmma", staged(wg_params(2, 128, 3)), 1001, 771,
       DType::kFloat16, Epilogue::kRelu},
      {"EPI_SMEM dynamic N,K", "dense_wgmma", staged(wg_params(1, 64, 4)), 0, 0,
       DType::kBFloat16, Epilogue::kBiasGelu},
  };
  for (int e = 0; e <= 5; ++e)
    cases.push_back({"EPI_SMEM EPILOGUE=" + std::to_string(e), "dense_wgmma",
                     staged(tma(2, 128, 4)), 3072, 768, DType::kBFloat16,
                     static_cast<Epilogue>(e)});
  auto m_first = [](std::map<std::string, int> p) {
    p["M_FASTEST"] = 1;
    return p;
  };
  cases.push_back({"M_FASTEST WG_M=1 BN=88", "dense_wgmma", m_first(tma(1, 88, 6)), 11008, 4096});
  cases.push_back({"M_FASTEST EPI_SMEM WG_M=2 BN=168", "dense_wgmma",
                   m_first(staged(wg_params(2, 168, 4))), 11008, 4096});
  compile_cases(cases);
}

TEST(DenseWgmmaTemplate, SplitKEpiloguesAndDimensions) {
  std::vector<Case> cases = {
      {"SPLITK=8 bias f16", "dense_wgmma", wg_params(1, 64, 4, 8), 768, 3072, DType::kFloat16,
       Epilogue::kBias},
      {"dynamic N,K SPLITK=3 bias_gelu", "dense_wgmma", wg_params(2, 128, 4, 3), 0, 0,
       DType::kBFloat16, Epilogue::kBiasGelu},
      {"static K=771 (scalar loads), N=1001", "dense_wgmma", wg_params(2, 128, 3), 1001, 771,
       DType::kFloat16, Epilogue::kRelu},
      {"Llama up 11008x4096 128x256", "dense_wgmma", wg_params(2, 256, 4), 11008, 4096},
      {"Llama down 4096x11008 SPLITK=2", "dense_wgmma", wg_params(2, 128, 5, 2), 4096, 11008},
  };
  for (int e = 0; e <= 5; ++e)
    cases.push_back({"EPILOGUE=" + std::to_string(e) + " f16", "dense_wgmma", wg_params(2, 128, 4),
                     3072, 768, DType::kFloat16, static_cast<Epilogue>(e)});
  compile_cases(cases);
}

TEST(DenseWgmmaTemplate, TmaProducerEveryShapeStageSplitKAndEpilogue) {
  std::vector<Case> cases;
  for (int wg_m : {1, 2})
    for (int bn : {64, 128, 256})
      cases.push_back({"TMA WG_M=" + std::to_string(wg_m) + " BN=" + std::to_string(bn),
                       "dense_wgmma", tma(wg_m, bn, 4)});
  for (int stages : {2, 3, 5, 6})
    cases.push_back(
        {"TMA WG_M=2 BN=128 STAGES=" + std::to_string(stages), "dense_wgmma", tma(2, 128, stages)});
  cases.push_back({"TMA SPLITK=8 bias f16", "dense_wgmma", tma(1, 64, 4, 8), 768, 3072,
                   DType::kFloat16, Epilogue::kBias});
  cases.push_back({"TMA Llama up 11008x4096 128x256", "dense_wgmma", tma(2, 256, 4), 11008, 4096});
  cases.push_back({"TMA Llama down SPLITK=2 dynamic N", "dense_wgmma", tma(2, 128, 5, 2), 0, 11008,
                   DType::kBFloat16, Epilogue::kBiasGelu});
  for (int e = 0; e <= 5; ++e)
    cases.push_back({"TMA EPILOGUE=" + std::to_string(e) + " f16", "dense_wgmma", tma(2, 128, 4),
                     3072, 768, DType::kFloat16, static_cast<Epilogue>(e)});
  compile_cases(cases);
}

// The plan tells the launchers to pass tensor maps; a K the maps cannot promise to address is
// refused at generation, before anything is compiled.
TEST(DenseWgmmaTemplate, TmaProducerPlanAndRefusals) {
  const auto plain = generate_kernel(dense_op(3072, 768, DType::kBFloat16, Epilogue::kNone),
                                     MicroKernel{"dense_wgmma", wg_params(2, 128, 4)});
  EXPECT_EQ(plain.plan.tma_box_k, 0);
  const auto with_tma = generate_kernel(dense_op(3072, 768, DType::kBFloat16, Epilogue::kNone),
                                        MicroKernel{"dense_wgmma", tma(2, 128, 4)});
  EXPECT_EQ(with_tma.plan.tma_box_k, 64);
  EXPECT_EQ(with_tma.plan.min_alignment_bytes, 16);
  for (int64_t k : {0, 771}) {
    try {
      generate_kernel(dense_op(3072, k, DType::kBFloat16, Epilogue::kNone),
                      MicroKernel{"dense_wgmma", tma(2, 128, 4)});
      ADD_FAILURE() << "K " << k << " was accepted";
    } catch (const UserError& e) {
      EXPECT_STREQ(e.what(),
                   "op \"fc\": dense_wgmma with PRODUCER=1 (TMA) needs a static K that is a "
                   "multiple of 8");
    }
  }
  // Compiled alone (no generator to stop it), the template refuses such a K itself.
  const auto build = testing::nvrtc_build("dense_wgmma.cu", load_template_source("dense_wgmma.cu"),
                                          {"-DPRODUCER=1", "-DSTATIC_K=771"}, "sm_90a");
  EXPECT_FALSE(build.ok);
  EXPECT_NE(build.log.find("the TMA producer needs K % 8 == 0"), std::string::npos) << build.log;
}

// M_TILES only shapes the grid, but the template still refuses what the space forbids: a walk
// of more than four tiles, and M-first numbering, which needs a block per M tile.
TEST(DenseWgmmaTemplate, RefusesMTilesOutsideItsRangeAndWithMFastest) {
  const std::string source = load_template_source("dense_wgmma.cu");
  const auto walk = testing::nvrtc_build("dense_wgmma.cu", source, {"-DM_TILES=2"}, "sm_90a");
  EXPECT_TRUE(walk.ok) << walk.log;
  const auto too_long = testing::nvrtc_build("dense_wgmma.cu", source, {"-DM_TILES=5"}, "sm_90a");
  EXPECT_FALSE(too_long.ok);
  EXPECT_NE(too_long.log.find("M_TILES must be in 1..4"), std::string::npos) << too_long.log;
  const auto renumbered =
      testing::nvrtc_build("dense_wgmma.cu", source, {"-DM_TILES=3", "-DM_FASTEST=1"}, "sm_90a");
  EXPECT_FALSE(renumbered.ok);
  EXPECT_NE(renumbered.log.find("it needs M_TILES == 1"), std::string::npos) << renumbered.log;
}

}  // namespace
}  // namespace dietcode

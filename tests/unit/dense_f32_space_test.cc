// The dense_f32 space: each constraint rejects what it must, the defaults are legal, and the
// full cross product of the tunable lists leaves hundreds of candidates for BERT's fp32 dense
// layers on H100 limits, small tiles and split-K among them.
#include <gtest/gtest.h>

#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "common/error.h"
#include "space/gpu_spec.h"
#include "space/space.h"
#include "space/template_space.h"
#include "space/templates.h"

namespace dietcode {
namespace {

GpuSpec h100() {
  GpuSpec g;
  g.id = "h100";
  g.cc_major = 9, g.cc_minor = 0;
  g.sms = 132;
  g.max_threads_per_block = 1024;
  g.smem_per_block_optin = 227 * 1024;
  g.regs_per_sm = 65536, g.regs_per_block = 65536, g.max_regs_per_thread = 255;
  return g;
}

OpSpec dense_op(const std::string& name, int64_t n, int64_t k) {
  OpSpec op;
  op.name = name;
  op.kind = OpKind::kDense;
  op.dtype = DType::kFloat32;
  op.dims = {{"M", Expr::parse("16*T")}, {"N", Expr::constant(n)}, {"K", Expr::constant(k)}};
  op.vars = {"T"};
  return op;
}

MicroKernel with(std::map<std::string, int> changes) {
  MicroKernel mk{"dense_f32", {}};
  for (const auto& t : dense_f32_space().tunables) mk.params[t.name] = t.default_value;
  for (const auto& [name, value] : changes) mk.params[name] = value;
  return mk;
}

std::vector<std::string> violations(const MicroKernel& mk, const SpaceContext& ctx) {
  std::vector<std::string> out;
  for (const auto& c : dense_f32_space().constraints)
    if (!c.holds(mk, ctx)) out.push_back(c.description);
  return out;
}

bool rejected_by(const MicroKernel& mk, const SpaceContext& ctx, const std::string& prefix) {
  for (const auto& v : violations(mk, ctx))
    if (v.rfind(prefix, 0) == 0) return true;
  return false;
}

class DenseF32Space : public ::testing::Test {
 protected:
  GpuSpec gpu = h100();
  OpSpec fc2 = dense_op("fc2", 768, 3072);
  SpaceContext ctx{gpu, fc2, GemmShape{1, 2048, 768, 3072}};
};

TEST_F(DenseF32Space, RegisteredByNameAndForFloat32DenseOnly) {
  EXPECT_EQ(&template_space("dense_f32"), &dense_f32_space());
  ASSERT_EQ(template_spaces_for(fc2).size(), 1u);
  OpSpec half = fc2;
  half.dtype = DType::kFloat16;
  EXPECT_FALSE(dense_f32_space().supports(half));
  OpSpec bmm = fc2;
  bmm.kind = OpKind::kBatchMatmul;
  EXPECT_FALSE(dense_f32_space().supports(bmm));
  try {
    template_space("dense_f33");
    FAIL() << "no exception";
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "unknown template \"dense_f33\"");
  }
}

TEST_F(DenseF32Space, DefaultsAreLegalAndMatchTheTemplate) {
  EXPECT_TRUE(violations(with({}), ctx).empty());
  const auto g = DenseF32Geometry::of(with({}));
  EXPECT_EQ(g.threads, 256);
  EXPECT_EQ(g.bm, 128);
  EXPECT_EQ(g.bn, 128);
  EXPECT_EQ(g.lda, 132);
  EXPECT_EQ(g.smem_bytes, 2 * 8 * (132 + 132) * 4);
  const auto res = dense_f32_space().resources(with({}));
  EXPECT_EQ(res.threads, 256);
  EXPECT_EQ(res.dynamic_smem_bytes, g.smem_bytes);
}

// The seeds are cuBLAS's fp32 tiles for BERT on Hopper (64 x 256 and 128 x 128 blocks of four
// warps, 16 x 8 outputs per thread), each with the cp.async and the register-staged pipeline,
// and all of them legal for BERT's fc2 on H100 limits; the default comes first.
TEST_F(DenseF32Space, SeedsAreCublasTilesAndLegalForBert) {
  const std::vector<MicroKernel> start = dense_f32_space().starting_kernels();
  ASSERT_EQ(start.size(), 7u);
  EXPECT_EQ(start[0], with({}));
  std::set<std::tuple<int, int, int, int>> tiles;  // BM, BN, STAGES, PRELOAD
  for (size_t i = 1; i < start.size(); ++i) {
    SCOPED_TRACE(start[i].key());
    EXPECT_TRUE(violations(start[i], ctx).empty());
    const auto g = DenseF32Geometry::of(start[i]);
    EXPECT_EQ(g.threads, 128);
    EXPECT_EQ(start[i].get("TM") * start[i].get("TN"), 128);
    tiles.insert({g.bm, g.bn, start[i].get("STAGES"), start[i].get("PRELOAD")});
  }
  // Both of cuBLAS's tiles in both pipelines, and with cp.async also with PRELOAD.
  EXPECT_EQ(tiles, (std::set<std::tuple<int, int, int, int>>{{64, 256, 2, 0},
                                                             {64, 256, 3, 0},
                                                             {64, 256, 3, 1},
                                                             {128, 128, 2, 0},
                                                             {128, 128, 3, 0},
                                                             {128, 128, 3, 1}}));
  // A seed that names a tunable the space lacks is a programming error, caught at once.
  TemplateSpace broken = dense_f32_space();
  broken.seeds.push_back({{"NO_SUCH_TUNABLE", 1}});
  EXPECT_THROW(broken.starting_kernels(), std::logic_error);
}

TEST_F(DenseF32Space, PreloadNeedsASecondBufferAndCostsRegisters) {
  const MicroKernel single = with({{"STAGES", 1}, {"VEC", 4}, {"PRELOAD", 1}});
  EXPECT_FALSE(violations(single, ctx).empty());
  EXPECT_TRUE(violations(with({{"STAGES", 1}, {"VEC", 4}, {"PRELOAD", 0}}), ctx).empty());
  const MicroKernel plain = with({{"STAGES", 2}, {"PRELOAD", 0}});
  const MicroKernel preloaded = with({{"STAGES", 2}, {"PRELOAD", 1}});
  EXPECT_TRUE(violations(preloaded, ctx).empty());
  // Half of TM + TN more fragment registers (8 x 8 per thread at the defaults).
  EXPECT_EQ(DenseF32Geometry::of(preloaded).register_estimate -
                DenseF32Geometry::of(plain).register_estimate,
            8);
}

TEST_F(DenseF32Space, PaddedPitchIsFourModEight) {
  EXPECT_EQ(dense_f32_padded_pitch(1), 4);
  EXPECT_EQ(dense_f32_padded_pitch(3), 4);
  EXPECT_EQ(dense_f32_padded_pitch(8), 12);
  EXPECT_EQ(dense_f32_padded_pitch(12), 12);
  EXPECT_EQ(dense_f32_padded_pitch(24), 28);
  EXPECT_EQ(dense_f32_padded_pitch(128), 132);
}

TEST_F(DenseF32Space, ChainsBuildTheBlockTile) {
  const auto& s = dense_f32_space();
  ASSERT_EQ(s.chains.size(), 2u);
  EXPECT_EQ(s.chains[0].extent, "BM");
  EXPECT_EQ(s.chains[0].levels, (std::vector<std::string>{"WARPS_M", "THREADS_M", "TM"}));
  EXPECT_EQ(s.chains[1].extent, "BN");
  EXPECT_EQ(s.chains[1].levels, (std::vector<std::string>{"WARPS_N", "THREADS_N", "TN"}));
}

TEST_F(DenseF32Space, RejectsLanesThatDoNotFillAWarp) {
  EXPECT_TRUE(
      rejected_by(with({{"THREADS_M", 4}, {"THREADS_N", 4}}), ctx, "THREADS_M * THREADS_N"));
}

TEST_F(DenseF32Space, RejectsThreadTilesTooSmallToFeedTheFmas) {
  EXPECT_TRUE(rejected_by(with({{"TM", 1}, {"TN", 3}}), ctx, "TM * TN >= 4"));
  EXPECT_FALSE(rejected_by(with({{"TM", 1}, {"TN", 4}}), ctx, "TM * TN >= 4"));
}

TEST_F(DenseF32Space, MinBlocksMustFitAnSm) {
  EXPECT_FALSE(rejected_by(with({{"MIN_BLOCKS", 2}}), ctx, "MIN_BLOCKS blocks fit"));
  // Two blocks of 1024 threads fit 2048 threads per SM, not 1536.
  const auto big = with({{"MIN_BLOCKS", 2}, {"WARPS_M", 8}, {"WARPS_N", 4}, {"TM", 2}, {"TN", 2}});
  EXPECT_FALSE(rejected_by(big, ctx, "MIN_BLOCKS blocks fit"));
  GpuSpec ampere = gpu;
  ampere.max_threads_per_sm = 1536;
  EXPECT_TRUE(rejected_by(big, SpaceContext{ampere, fc2, ctx.largest}, "MIN_BLOCKS blocks fit"));
  // 512 threads x 2 blocks leave 64 registers, fewer than an 8 x 8 tile's 64 + 16 + 24.
  EXPECT_TRUE(rejected_by(with({{"MIN_BLOCKS", 2}, {"WARPS_M", 4}, {"WARPS_N", 4}}), ctx,
                          "MIN_BLOCKS blocks fit"));
}

TEST_F(DenseF32Space, RejectsTooManyThreads) {
  auto mk = with({{"WARPS_M", 8}, {"WARPS_N", 8}, {"TM", 2}, {"TN", 2}});
  EXPECT_TRUE(rejected_by(mk, ctx, "threads per block"));
  EXPECT_FALSE(rejected_by(with({{"WARPS_M", 8}, {"WARPS_N", 4}, {"TM", 2}, {"TN", 2}}), ctx,
                           "threads per block"));
}

TEST_F(DenseF32Space, RejectsSharedMemoryPastTheOptInLimit) {
  // 512 x 32 tile, 32 deep, 2 stages: 2 * 32 * (516 + 36) * 4 = 141 KB fits; 4 stages do not.
  auto mk = with({{"WARPS_M", 8},
                  {"THREADS_M", 8},
                  {"TM", 8},
                  {"WARPS_N", 1},
                  {"THREADS_N", 4},
                  {"TN", 8},
                  {"BK", 32},
                  {"STAGES", 2}});
  EXPECT_FALSE(rejected_by(mk, ctx, "shared memory"));
  mk.params["STAGES"] = 4;
  mk.params["VEC"] = 1;
  EXPECT_TRUE(rejected_by(mk, ctx, "shared memory"));
}

TEST_F(DenseF32Space, RejectsRegisterHungryThreadTiles) {
  EXPECT_FALSE(rejected_by(with({}), ctx, "register estimate per thread"));
  GpuSpec small = gpu;
  small.max_regs_per_thread = 128;
  SpaceContext tight{small, fc2, ctx.largest};
  EXPECT_TRUE(
      rejected_by(with({{"TM", 8}, {"TN", 8}, {"BK", 32}}), tight, "register estimate per thread"));
  // 1024 threads x ~100 registers exceed a block's 64K registers.
  EXPECT_TRUE(rejected_by(with({{"WARPS_M", 8}, {"WARPS_N", 4}, {"TM", 4}, {"TN", 4}}), ctx,
                          "register estimate * threads"));
}

TEST_F(DenseF32Space, BoundsTilesByTheLargestExtents) {
  SpaceContext small_m{gpu, fc2, GemmShape{1, 16, 768, 3072}};  // 1.1 * 16 -> 32
  EXPECT_FALSE(rejected_by(with({{"WARPS_M", 1}, {"THREADS_M", 4}, {"THREADS_N", 8}, {"TM", 8}}),
                           small_m, "BM <="));
  EXPECT_TRUE(rejected_by(with({{"WARPS_M", 2}, {"THREADS_M", 4}, {"THREADS_N", 8}, {"TM", 8}}),
                          small_m, "BM <="));
  // BN = 8 * 32 * 8 = 2048 > 1.1 * 768 -> 1024.
  EXPECT_TRUE(
      rejected_by(with({{"WARPS_N", 8}, {"THREADS_N", 32}, {"THREADS_M", 1}}), ctx, "BN <="));
  SpaceContext tiny_k{gpu, fc2, GemmShape{1, 2048, 768, 3}};
  EXPECT_TRUE(rejected_by(with({{"BK", 8}}), tiny_k, "BK <="));
  EXPECT_FALSE(rejected_by(with({{"BK", 4}}), tiny_k, "BK <="));
}

TEST_F(DenseF32Space, RejectsVectorWidthsTheTemplateCannotUse) {
  EXPECT_TRUE(rejected_by(with({{"BK", 2}, {"VEC", 4}}), ctx, "VEC divides BK"));
  EXPECT_TRUE(rejected_by(with({{"STAGES", 3}, {"VEC", 4}}), ctx, "VEC == 1 when STAGES >= 3"));
  EXPECT_FALSE(rejected_by(with({{"STAGES", 3}, {"VEC", 1}}), ctx, "VEC == 1 when STAGES >= 3"));
  OpSpec odd = dense_op("odd", 1000, 771);
  SpaceContext odd_ctx{gpu, odd, GemmShape{1, 2048, 1000, 771}};
  EXPECT_TRUE(rejected_by(with({{"VEC", 4}}), odd_ctx, "VEC divides K"));
  EXPECT_FALSE(rejected_by(with({{"VEC", 1}}), odd_ctx, "VEC divides K"));
}

TEST_F(DenseF32Space, CpAsyncNeedsAmpere) {
  GpuSpec turing = gpu;
  turing.cc_major = 7, turing.cc_minor = 5;
  SpaceContext t{turing, fc2, ctx.largest};
  EXPECT_TRUE(rejected_by(with({{"STAGES", 3}, {"VEC", 1}}), t, "STAGES >= 3 needs"));
  EXPECT_FALSE(rejected_by(with({{"STAGES", 2}}), t, "STAGES >= 3 needs"));
}

TEST_F(DenseF32Space, SplitKNeedsAFullTilePerSlice) {
  SpaceContext k500{gpu, fc2, GemmShape{1, 2048, 768, 500}};
  EXPECT_TRUE(rejected_by(with({{"SPLITK", 16}, {"BK", 32}}), k500, "SPLITK == 1 or"));
  EXPECT_FALSE(rejected_by(with({{"SPLITK", 16}, {"BK", 16}}), k500, "SPLITK == 1 or"));
}

// Valid candidates with MIN_BLOCKS 1 (2 only narrows what 1 allows), enumerated as the tuner
// enumerates: each constraint checked as soon as its tunables are chosen, so whole subtrees
// are pruned, then the launch resources. The space holds over a million for these layers; the
// first 20,000 in enumeration order are a lower bound on every count below, and take well
// under a second where a loop over the full product took 37 s.
struct Census {
  int valid = 0, small_m_tiles_split = 0, stages[5] = {};
};

Census enumerate(const SpaceContext& ctx) {
  TemplateSpace space = dense_f32_space();
  for (Tunable& t : space.tunables)
    if (t.name == "MIN_BLOCKS") t.values = {1};
  SearchLimits limits;
  limits.max_candidates = 20000;
  const Enumeration all = SearchSpace(space, ctx, limits).enumerate();
  Census census;
  for (const MicroKernel& mk : all.candidates) {
    ++census.valid;
    ++census.stages[mk.get("STAGES")];
    const auto g = DenseF32Geometry::of(mk);
    if (g.bm <= 16 && mk.get("SPLITK") > 1) ++census.small_m_tiles_split;
  }
  return census;
}

TEST_F(DenseF32Space, HundredsOfCandidatesForBertOnH100) {
  struct Layer {
    int64_t n, k;
  };
  // The widest and the split-K-hungry layer of BERT-base (qkv and fc2); the others differ
  // only in N, which bounds nothing at these sizes.
  for (const Layer layer : {Layer{2304, 768}, Layer{768, 3072}}) {
    OpSpec op = dense_op("layer", layer.n, layer.k);
    SpaceContext c{gpu, op, GemmShape{1, 16 * 128, layer.n, layer.k}};
    const Census census = enumerate(c);
    SCOPED_TRACE("N=" + std::to_string(layer.n) + " K=" + std::to_string(layer.k));
    EXPECT_GE(census.valid, 300);
    for (int stages = 1; stages <= 4; ++stages) EXPECT_GT(census.stages[stages], 0);
    if (layer.n == 768 && layer.k == 3072) EXPECT_GT(census.small_m_tiles_split, 0);
    std::printf("N=%lld K=%lld: at least %d valid candidates, %d with BM <= 16 and SPLITK > 1\n",
                (long long)layer.n, (long long)layer.k, census.valid, census.small_m_tiles_split);
  }
}

}  // namespace
}  // namespace dietcode

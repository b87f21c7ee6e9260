// The tensor-core spaces: dense_tc (mma.sync, sm_80+) and dense_wgmma (sm_90a only). Each is
// registered for float16 / bfloat16 dense ops and batch_matmul with both operands K-contiguous
// only, its defaults are legal and match the templates' geometry, each constraint rejects what
// it must, and the enumerated spaces for BERT's and Llama's layers are non-trivial on H100
// limits, empty where the GPU lacks the tensor cores or the instructions.
#include "space/dense_tc_space.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "space/gpu_spec.h"
#include "space/op_computation.h"
#include "space/space.h"
#include "space/template_space.h"

namespace dietcode {
namespace {

GpuSpec gpu_with(int major, int minor, double bf16_tflops = 989) {
  GpuSpec g;
  g.id = "test";
  g.cc_major = major, g.cc_minor = minor;
  g.smem_per_block_optin = 227 * 1024;
  g.smem_per_sm = 228 * 1024;
  g.fp16_tensor_tflops = 989;
  g.bf16_tensor_tflops = bf16_tflops;
  return g;
}

OpSpec dense_op(int64_t n, int64_t k, DType dtype) {
  OpSpec op;
  op.name = "fc";
  op.kind = OpKind::kDense;
  op.dtype = dtype;
  op.dims = {{"M", Expr::parse("16*T")}, {"N", Expr::constant(n)}, {"K", Expr::constant(k)}};
  op.vars = {"T"};
  return op;
}

MicroKernel with(const TemplateSpace& space, std::map<std::string, int> changes) {
  MicroKernel mk = space.defaults();
  for (const auto& [name, value] : changes) mk.params[name] = value;
  return mk;
}

bool rejected_by(const TemplateSpace& space, const MicroKernel& mk, const SpaceContext& ctx,
                 const std::string& prefix) {
  for (const auto& c : space.constraints)
    if (c.description.rfind(prefix, 0) == 0) return !c.holds(mk, ctx);
  ADD_FAILURE() << "no constraint starts with \"" << prefix << "\"";
  return false;
}

std::vector<std::string> violations(const TemplateSpace& space, const MicroKernel& mk,
                                    const SpaceContext& ctx) {
  std::vector<std::string> out;
  for (const auto& c : space.constraints)
    if (!c.holds(mk, ctx)) out.push_back(c.description);
  return out;
}

class TensorCoreSpaces : public ::testing::Test {
 protected:
  GpuSpec h100 = gpu_with(9, 0);
  OpSpec fc1 = dense_op(3072, 768, DType::kBFloat16);
  SpaceContext ctx{h100, fc1, GemmShape{1, 2048, 3072, 768}};
  const TemplateSpace& tc = dense_tc_space();
  const TemplateSpace& wg = dense_wgmma_space();
};

TEST_F(TensorCoreSpaces, RegisteredForSixteenBitKContiguousGemms) {
  EXPECT_EQ(&template_space("dense_tc"), &tc);
  EXPECT_EQ(&template_space("dense_wgmma"), &wg);
  std::vector<std::string> names;
  for (const auto* s : template_spaces_for(fc1)) names.push_back(s->tmpl);
  EXPECT_EQ(names, (std::vector<std::string>{"dense_tc", "dense_wgmma"}));
  OpSpec half = fc1;
  half.dtype = DType::kFloat16;
  EXPECT_TRUE(tc.supports(half) && wg.supports(half));
  OpSpec f32 = fc1;
  f32.dtype = DType::kFloat32;
  EXPECT_FALSE(tc.supports(f32) || wg.supports(f32));
  OpSpec conv = fc1;
  conv.kind = OpKind::kConv2d;
  EXPECT_FALSE(tc.supports(conv) || wg.supports(conv));
}

// batch_matmul: dense_wgmma only for A stored [M,K] with B stored [N,K] (transpose_b), the
// layout it reads as dense; dense_tc for A stored [M,K] with either B; A stored [K,M] is left
// to batch_matmul_f32 (float32) or to nobody, and the words dietcode uses for such an op name
// its layout.
TEST_F(TensorCoreSpaces, BatchMatmulLayoutsEachTemplateReads) {
  OpSpec bmm = fc1;
  bmm.name = "qk";
  bmm.kind = OpKind::kBatchMatmul;
  bmm.dims = {{"B", Expr::constant(192)},
              {"M", Expr::parse("T")},
              {"N", Expr::parse("T")},
              {"K", Expr::constant(64)}};
  for (const DType dtype : {DType::kFloat16, DType::kBFloat16, DType::kFloat32})
    for (const bool ta : {false, true})
      for (const bool tb : {false, true}) {
        bmm.dtype = dtype, bmm.transpose_a = ta, bmm.transpose_b = tb;
        const bool half = dtype != DType::kFloat32;
        SCOPED_TRACE(op_computation_text(bmm));
        EXPECT_EQ(tc.supports(bmm), half && !ta);
        EXPECT_EQ(wg.supports(bmm), half && !ta && tb);
        std::vector<std::string> names;
        for (const auto* space : template_spaces_for(bmm)) names.push_back(space->tmpl);
        std::vector<std::string> want;
        if (!half) want = {"batch_matmul_f32"};
        if (half && !ta) want = {"dense_tc"};
        if (half && !ta && tb) want.push_back("dense_wgmma");
        EXPECT_EQ(names, want);
      }
  bmm.dtype = DType::kBFloat16, bmm.transpose_a = true, bmm.transpose_b = false;
  EXPECT_EQ(op_computation_text(bmm),
            "bfloat16 batch_matmul with A stored [K,M] (transpose_a) and B stored [K,N]");
  bmm.transpose_b = true;
  EXPECT_EQ(op_computation_text(bmm),
            "bfloat16 batch_matmul with A stored [K,M] (transpose_a) and B stored [N,K] "
            "(transpose_b)");
  EXPECT_EQ(op_computation_text(fc1), "bfloat16 dense");
  // The defaults are legal for BERT attention on an H100: Q.K^T (K = 64, both templates) and
  // probs.V (N = 64, dense_tc).
  bmm.transpose_a = false;
  const SpaceContext qk{h100, bmm, GemmShape{192, 128, 128, 64}};
  EXPECT_TRUE(violations(tc, tc.defaults(), qk).empty());
  EXPECT_TRUE(violations(wg, with(wg, {{"WG_M", 1}, {"PRODUCER", 1}}), qk).empty());
  bmm.transpose_b = false;
  bmm.dims["N"] = Expr::constant(64), bmm.dims["K"] = Expr::parse("T");
  EXPECT_TRUE(
      violations(tc, tc.defaults(), SpaceContext{h100, bmm, GemmShape{192, 128, 64, 128}}).empty());
}

TEST_F(TensorCoreSpaces, DenseTcDefaultsAreLegalAndMatchTheTemplate) {
  EXPECT_TRUE(violations(tc, tc.defaults(), ctx).empty());
  const auto g = DenseTcGeometry::of(tc.defaults());
  EXPECT_EQ(g.threads, 128);
  EXPECT_EQ(g.bm, 128);  // 2 warps x 64
  EXPECT_EQ(g.bn, 64);   // 2 warps x 32
  EXPECT_EQ(g.smem_bytes, 3 * (128 + 64) * 32 * 2);
  EXPECT_EQ(g.register_estimate, 64 * 32 / 32 + 32 + 16 + 40);
  EXPECT_EQ(tc.resources(tc.defaults()).dynamic_smem_bytes, g.smem_bytes);
  EXPECT_EQ(tc.extent(tc.defaults(), "BM"), 128);
  EXPECT_EQ(tc.extent(tc.defaults(), "BN"), 64);
}

TEST_F(TensorCoreSpaces, DenseTcNeedsTensorCoresForTheType) {
  const std::string rule = "the GPU has tensor cores";
  EXPECT_FALSE(rejected_by(tc, tc.defaults(), ctx, rule));
  const GpuSpec t4 = gpu_with(7, 5, 0);  // Turing: no bf16, and no m16n8k16 / cp.async
  EXPECT_TRUE(rejected_by(tc, tc.defaults(), SpaceContext{t4, fc1, ctx.largest}, rule));
  OpSpec half = fc1;
  half.dtype = DType::kFloat16;
  EXPECT_TRUE(rejected_by(tc, tc.defaults(), SpaceContext{t4, half, ctx.largest}, rule));
  const GpuSpec no_bf16 = gpu_with(8, 9, 0);
  EXPECT_TRUE(rejected_by(tc, tc.defaults(), SpaceContext{no_bf16, fc1, ctx.largest}, rule));
  EXPECT_FALSE(rejected_by(tc, tc.defaults(), SpaceContext{no_bf16, half, ctx.largest}, rule));
}

TEST_F(TensorCoreSpaces, DenseTcLimits) {
  EXPECT_TRUE(rejected_by(tc, with(tc, {{"WARPS_M", 8}, {"WARPS_N", 8}}), ctx, "threads per"));
  EXPECT_FALSE(rejected_by(tc, with(tc, {{"WARPS_M", 8}, {"WARPS_N", 4}}), ctx, "threads per"));
  EXPECT_TRUE(rejected_by(tc, with(tc, {{"WM", 128}, {"WN", 48}}), ctx, "warp tile"));
  EXPECT_FALSE(rejected_by(tc, with(tc, {{"WM", 64}, {"WN", 64}}), ctx, "warp tile"));
  // 4 stages of 512 x 512 x 64 tiles: 512 KB.
  const auto huge = with(
      tc, {{"WARPS_M", 8}, {"WARPS_N", 4}, {"WN", 128}, {"BK", 64}, {"STAGES", 4}, {"WM", 64}});
  EXPECT_TRUE(rejected_by(tc, huge, ctx, "shared memory per block"));
  // 8 warps of 64 x 64: 200 estimated registers x 256 threads fit; 16 warps do not.
  EXPECT_FALSE(
      rejected_by(tc, with(tc, {{"WARPS_N", 4}, {"WN", 64}}), ctx, "register estimate * threads"));
  EXPECT_TRUE(rejected_by(tc, with(tc, {{"WARPS_M", 4}, {"WARPS_N", 4}, {"WN", 64}}), ctx,
                          "register estimate * threads"));
  // Two blocks of 128 threads leave 255 registers each; of 512 threads 64, fewer than the 152
  // a 64 x 32 warp tile needs.
  EXPECT_FALSE(rejected_by(tc, with(tc, {{"MIN_BLOCKS", 2}}), ctx, "MIN_BLOCKS"));
  EXPECT_TRUE(rejected_by(tc, with(tc, {{"MIN_BLOCKS", 2}, {"WARPS_M", 4}, {"WARPS_N", 4}}), ctx,
                          "MIN_BLOCKS"));
}

TEST_F(TensorCoreSpaces, DenseTcTilesFollowTheShapes) {
  // M up to 8: BM 16 is the floor, 32 is too tall.
  const SpaceContext small{h100, fc1, GemmShape{1, 8, 3072, 768}};
  EXPECT_FALSE(rejected_by(tc, with(tc, {{"WARPS_M", 1}, {"WM", 16}}), small, "BM <="));
  EXPECT_TRUE(rejected_by(tc, with(tc, {{"WARPS_M", 2}, {"WM", 16}}), small, "BM <="));
  const SpaceContext narrow{h100, fc1, GemmShape{1, 2048, 4, 768}};
  EXPECT_FALSE(rejected_by(tc, with(tc, {{"WARPS_N", 1}, {"WN", 8}}), narrow, "BN <="));
  EXPECT_TRUE(rejected_by(tc, with(tc, {{"WARPS_N", 1}, {"WN", 16}}), narrow, "BN <="));
  const SpaceContext shallow{h100, fc1, GemmShape{1, 2048, 3072, 24}};
  EXPECT_FALSE(rejected_by(tc, with(tc, {{"BK", 32}}), shallow, "BK =="));
  EXPECT_TRUE(rejected_by(tc, with(tc, {{"BK", 64}}), shallow, "BK =="));
  EXPECT_FALSE(rejected_by(tc, with(tc, {{"SPLITK", 16}, {"BK", 32}}), ctx, "SPLITK =="));
  EXPECT_TRUE(rejected_by(tc, with(tc, {{"SPLITK", 16}, {"BK", 64}}), ctx, "SPLITK =="));
}

TEST_F(TensorCoreSpaces, DenseTcEnumeratesSmallAndLargeTilesAndSplitK) {
  const OpSpec down = dense_op(4096, 11008, DType::kFloat16);
  const SearchSpace space(tc, SpaceContext{h100, down, GemmShape{1, 2048, 4096, 11008}});
  const auto all = space.enumerate();
  ASSERT_TRUE(all.complete);
  EXPECT_GT(all.candidates.size(), 1000u);
  auto any = [&](auto pred) {
    return std::any_of(all.candidates.begin(), all.candidates.end(), pred);
  };
  EXPECT_TRUE(any([&](const MicroKernel& m) { return tc.extent(m, "BM") == 16; }));
  EXPECT_TRUE(any([&](const MicroKernel& m) { return tc.extent(m, "BM") == 256; }));
  EXPECT_TRUE(any([](const MicroKernel& m) { return m.get("SPLITK") == 16; }));
  EXPECT_TRUE(any([](const MicroKernel& m) { return m.get("WN") == 24; }));
  const GpuSpec turing = gpu_with(7, 5, 0);
  EXPECT_TRUE(SearchSpace(tc, SpaceContext{turing, down, GemmShape{1, 2048, 4096, 11008}})
                  .enumerate()
                  .candidates.empty());
}

TEST_F(TensorCoreSpaces, WgmmaDefaultsAreLegalAndMatchTheTemplate) {
  EXPECT_TRUE(violations(wg, wg.defaults(), ctx).empty());
  const auto g = DenseWgmmaGeometry::of(wg.defaults());
  EXPECT_EQ(g.threads, 384);
  EXPECT_EQ(g.bm, 128);
  EXPECT_EQ(g.bn, 128);
  EXPECT_EQ(g.smem_bytes, 4 * (128 + 128) * 128 + 2048);
  EXPECT_EQ(wg.extent(wg.defaults(), "BM"), 128);
  EXPECT_EQ(wg.extent(wg.defaults(), "BN"), 128);
}

TEST_F(TensorCoreSpaces, WgmmaOnlyOnComputeCapability90) {
  const std::string rule = "the GPU is compute capability 9.0";
  EXPECT_FALSE(rejected_by(wg, wg.defaults(), ctx, rule));
  for (const auto& other : {gpu_with(8, 0), gpu_with(8, 9), gpu_with(10, 0), gpu_with(12, 0)})
    EXPECT_TRUE(rejected_by(wg, wg.defaults(), SpaceContext{other, fc1, ctx.largest}, rule))
        << other.arch();
  const GpuSpec a100 = gpu_with(8, 0);
  EXPECT_TRUE(SearchSpace(wg, SpaceContext{a100, fc1, ctx.largest}).enumerate().candidates.empty());
}

TEST_F(TensorCoreSpaces, WgmmaLimits) {
  // Two consumers of n256: 168 estimated registers, exactly the 384-thread share.
  EXPECT_FALSE(rejected_by(wg, with(wg, {{"BN", 256}}), ctx, "register estimate"));
  GpuSpec small_rf = h100;
  small_rf.regs_per_block = 32768;
  EXPECT_TRUE(rejected_by(wg, with(wg, {{"BN", 256}}), SpaceContext{small_rf, fc1, ctx.largest},
                          "register estimate"));
  // 6 stages of 128 x 256 tiles: 288 KB.
  EXPECT_TRUE(rejected_by(wg, with(wg, {{"BN", 256}, {"STAGES", 6}}), ctx, "shared memory"));
  EXPECT_FALSE(rejected_by(wg, with(wg, {{"BN", 256}, {"STAGES", 4}}), ctx, "shared memory"));
  const SpaceContext small{h100, fc1, GemmShape{1, 48, 3072, 768}};
  EXPECT_FALSE(rejected_by(wg, with(wg, {{"WG_M", 1}}), small, "BM <="));
  EXPECT_TRUE(rejected_by(wg, with(wg, {{"WG_M", 2}}), small, "BM <="));
  EXPECT_TRUE(rejected_by(wg, with(wg, {{"SPLITK", 16}}), ctx, "SPLITK =="));
  EXPECT_FALSE(rejected_by(wg, with(wg, {{"SPLITK", 12}}), ctx, "SPLITK =="));
  const auto all = SearchSpace(wg, ctx).enumerate();
  EXPECT_GT(all.candidates.size(), 50u);
}

// Every width wgmma has from 64 to 256 in steps of 8, so a tile can fit a shape's grid to the
// SMs, and up to four consumers, each held to its share of the registers.
TEST_F(TensorCoreSpaces, WgmmaTileWidthsAndConsumers) {
  const OpSpec gate = dense_op(11008, 4096, DType::kBFloat16);
  const SpaceContext llama{h100, gate, GemmShape{1, 256, 11008, 4096}};
  const auto all = SearchSpace(wg, llama).enumerate();
  ASSERT_TRUE(all.complete);
  std::set<int> widths, consumers;
  for (const MicroKernel& m : all.candidates) {
    widths.insert(m.get("BN"));
    consumers.insert(m.get("WG_M"));
  }
  std::set<int> every_n8;
  for (int bn = 64; bn <= 256; bn += 8) every_n8.insert(bn);
  EXPECT_EQ(widths, every_n8);
  EXPECT_EQ(consumers, (std::set<int>{1, 2, 3, 4}));
  const std::string rule = "register estimate";
  // 512 threads get 128 registers each: n176 (88 accumulators) fits, n184 does not.
  EXPECT_FALSE(rejected_by(wg, with(wg, {{"WG_M", 3}, {"BN", 176}, {"STAGES", 3}}), llama, rule));
  EXPECT_TRUE(rejected_by(wg, with(wg, {{"WG_M", 3}, {"BN", 184}, {"STAGES", 3}}), llama, rule));
  // 640 threads get 96: n112 fits, n120 does not.
  EXPECT_FALSE(rejected_by(wg, with(wg, {{"WG_M", 4}, {"BN", 112}, {"STAGES", 3}}), llama, rule));
  EXPECT_TRUE(rejected_by(wg, with(wg, {{"WG_M", 4}, {"BN", 120}, {"STAGES", 3}}), llama, rule));
  // The staged store: buffers of 16 x 64 outputs (rows padded to 144 bytes) per consumer warp,
  // and only without split-K, whose slices write fp32 partial sums instead.
  const MicroKernel staged = with(wg, {{"EPI_SMEM", 1}});
  EXPECT_EQ(DenseWgmmaGeometry::of(staged).smem_bytes,
            DenseWgmmaGeometry::of(wg.defaults()).smem_bytes + 8 * 16 * 144);
  EXPECT_FALSE(rejected_by(wg, staged, llama, "EPI_SMEM == 0 or SPLITK == 1"));
  EXPECT_TRUE(rejected_by(wg, with(wg, {{"EPI_SMEM", 1}, {"SPLITK", 2}}), llama,
                          "EPI_SMEM == 0 or SPLITK == 1"));
  // Three and four consumers (BM = 192, 256) only where M goes past 1.1 x 128.
  const SpaceContext short_m{h100, gate, GemmShape{1, 116, 11008, 4096}};
  EXPECT_FALSE(rejected_by(wg, with(wg, {{"WG_M", 2}}), short_m, "BM <="));
  EXPECT_TRUE(rejected_by(wg, with(wg, {{"WG_M", 3}}), short_m, "BM <="));
}

// M_TILES: blocks walk up to four M tiles each, never with M-first numbering (which needs a
// block per M tile), and only where the largest M has that many tiles to walk.
TEST_F(TensorCoreSpaces, WgmmaMTilesPerBlock) {
  EXPECT_EQ(wg.defaults().get("M_TILES"), 1);  // logs without the tunable keep a tile per block
  const std::string pairing = "M_FASTEST == 0 or M_TILES == 1";
  EXPECT_FALSE(rejected_by(wg, with(wg, {{"M_TILES", 4}}), ctx, pairing));
  EXPECT_FALSE(rejected_by(wg, with(wg, {{"M_FASTEST", 1}}), ctx, pairing));
  EXPECT_TRUE(rejected_by(wg, with(wg, {{"M_TILES", 2}, {"M_FASTEST", 1}}), ctx, pairing));
  const std::string walk = "BM x M_TILES <=";
  const SpaceContext m300{h100, fc1, GemmShape{1, 300, 3072, 768}};  // bound 512: 4 tiles of 128
  EXPECT_FALSE(rejected_by(wg, with(wg, {{"M_TILES", 4}}), m300, walk));
  EXPECT_TRUE(rejected_by(wg, with(wg, {{"M_TILES", 4}, {"WG_M", 3}}), m300, walk));
  const SpaceContext m100{h100, fc1, GemmShape{1, 100, 3072, 768}};  // one tile of 128
  EXPECT_TRUE(rejected_by(wg, with(wg, {{"M_TILES", 2}}), m100, walk));
  std::set<int> walks;
  for (const MicroKernel& m : SearchSpace(wg, ctx).enumerate().candidates)
    walks.insert(m.get("M_TILES"));
  EXPECT_EQ(walks, (std::set<int>{1, 2, 3, 4}));
}

TEST_F(TensorCoreSpaces, WgmmaTmaProducerOnlyForAStaticKMultipleOf8) {
  const std::string rule = "PRODUCER == 0 or K is static";
  EXPECT_EQ(wg.defaults().get("PRODUCER"), 0);  // logs without the tunable keep cp.async
  EXPECT_FALSE(rejected_by(wg, with(wg, {{"PRODUCER", 1}}), ctx, rule));  // K = 768
  const OpSpec odd_k = dense_op(3072, 771, DType::kBFloat16);
  const SpaceContext odd{h100, odd_k, GemmShape{1, 2048, 3072, 771}};
  EXPECT_TRUE(rejected_by(wg, with(wg, {{"PRODUCER", 1}}), odd, rule));
  EXPECT_FALSE(rejected_by(wg, with(wg, {{"PRODUCER", 0}}), odd, rule));
  OpSpec dynamic_k = fc1;
  dynamic_k.dims["K"] = Expr::parse("8*T");
  EXPECT_TRUE(rejected_by(wg, with(wg, {{"PRODUCER", 1}}),
                          SpaceContext{h100, dynamic_k, ctx.largest}, rule));
  // Both producers are searched where both can run, only cp.async where the TMA cannot.
  auto producers = [&](const SpaceContext& c) {
    std::set<int> seen;
    for (const auto& mk : SearchSpace(wg, c).enumerate().candidates)
      seen.insert(mk.get("PRODUCER"));
    return seen;
  };
  EXPECT_EQ(producers(ctx), (std::set<int>{0, 1}));
  EXPECT_EQ(producers(odd), (std::set<int>{0}));
}

}  // namespace
}  // namespace dietcode

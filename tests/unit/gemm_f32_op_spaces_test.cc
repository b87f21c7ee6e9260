// The batch_matmul_f32 and conv2d_f32 spaces (the shared fp32 SIMT GEMM space with their own
// layout rules): each op kind finds exactly its template, VEC is held to the constant pitches
// its loads walk in every transpose combination and to a conv's channel count, the conv gather's
// registers and 32-bit pixel indices are accounted for, and ops with several dynamic variables
// (NB and T, M = NB*T) flow through instance expansion and the space report.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "space/op_computation.h"
#include "space/space_report.h"
#include "space/template_space.h"
#include "space/templates.h"

namespace dietcode {
namespace {

GpuSpec h100() {
  GpuSpec g;
  g.id = "h100";
  return g;
}

Expr dim(const std::string& text) {
  return std::isdigit(static_cast<unsigned char>(text[0])) ? Expr::constant(std::stoll(text))
                                                           : Expr::parse(text);
}

OpSpec bmm(bool ta, bool tb, const std::string& m, const std::string& n, const std::string& k) {
  OpSpec op;
  op.name = "bmm";
  op.kind = OpKind::kBatchMatmul;
  op.transpose_a = ta, op.transpose_b = tb;
  op.dims = {{"B", Expr::constant(12)}, {"M", dim(m)}, {"N", dim(n)}, {"K", dim(k)}};
  op.vars = {"T"};
  return op;
}

OpSpec conv(int64_t h, int64_t c, int64_t r, int stride, int pad) {
  OpSpec op;
  op.name = "conv";
  op.kind = OpKind::kConv2d;
  op.dims = {{"N", Expr::parse("N")},  {"H", Expr::constant(h)},  {"W", Expr::constant(h)},
             {"C", Expr::constant(c)}, {"K", Expr::constant(64)}, {"R", Expr::constant(r)},
             {"S", Expr::constant(r)}};
  op.stride[0] = op.stride[1] = stride;
  op.pad[0] = op.pad[1] = pad;
  op.vars = {"N"};
  return op;
}

MicroKernel with(const TemplateSpace& s, std::map<std::string, int> changes) {
  MicroKernel mk = s.defaults();
  for (const auto& [name, value] : changes) mk.params[name] = value;
  return mk;
}

bool rejected_by(const TemplateSpace& s, const MicroKernel& mk, const SpaceContext& ctx,
                 const std::string& prefix) {
  for (const auto& c : s.constraints)
    if (!c.holds(mk, ctx) && c.description.rfind(prefix, 0) == 0) return true;
  return false;
}

TEST(GemmF32OpSpaces, EachOpKindFindsItsTemplate) {
  const OpSpec b = bmm(false, true, "T", "T", "64");
  const OpSpec c = conv(56, 64, 3, 1, 1);
  ASSERT_EQ(template_spaces_for(b).size(), 1u);
  EXPECT_EQ(template_spaces_for(b)[0], &batch_matmul_f32_space());
  ASSERT_EQ(template_spaces_for(c).size(), 1u);
  EXPECT_EQ(template_spaces_for(c)[0], &conv2d_f32_space());
  EXPECT_EQ(&template_space("batch_matmul_f32"), &batch_matmul_f32_space());
  EXPECT_EQ(&template_space("conv2d_f32"), &conv2d_f32_space());
  OpSpec half = b;
  half.dtype = DType::kFloat16;
  EXPECT_FALSE(batch_matmul_f32_space().supports(half));
  EXPECT_FALSE(conv2d_f32_space().supports(b));
  EXPECT_FALSE(batch_matmul_f32_space().supports(c));
  // Same tunables and geometry as dense: one core.
  EXPECT_EQ(batch_matmul_f32_space().tunables.size(), dense_f32_space().tunables.size());
  EXPECT_EQ(conv2d_f32_space().defaults().params, dense_f32_space().defaults().params);
}

// dense with W stored [K,N] is the CPU templates' (the BLIS form; the dot and W-broadcast forms
// read W along K);
// no GPU template reads it, and tune's note says which layout is missing.
TEST(GemmF32OpSpaces, DenseWithWeightsStoredKNIsTheCpusAlone) {
  OpSpec d;
  d.name = "up";
  d.kind = OpKind::kDense;
  d.dims = {{"M", Expr::parse("T")}, {"N", Expr::constant(96)}, {"K", Expr::constant(64)}};
  d.vars = {"T"};
  ASSERT_EQ(template_spaces_for(d, Target::kCuda).size(), 1u);
  EXPECT_EQ(template_spaces_for(d, Target::kCpu).size(), 6u);
  d.weight_layout = WeightLayout::kKN;
  EXPECT_TRUE(template_spaces_for(d, Target::kCuda).empty());
  std::vector<std::string> cpu;
  for (const TemplateSpace* s : template_spaces_for(d, Target::kCpu)) cpu.push_back(s->tmpl);
  EXPECT_EQ(cpu, (std::vector<std::string>{"x86_avx2_f32", "x86_avx512_f32"}));
  EXPECT_EQ(op_computation_text(d), "float32 dense with W stored [K,N]");
  for (DType t : {DType::kFloat16, DType::kBFloat16}) {
    d.dtype = t;
    EXPECT_TRUE(template_spaces_for(d, Target::kCuda).empty()) << to_string(t);
  }
}

TEST(GemmF32OpSpaces, VecFollowsThePitchesEachTransposeWalks) {
  const auto& s = batch_matmul_f32_space();
  const GpuSpec gpu = h100();
  const std::string rule = "VEC divides the constant pitches";
  struct Case {
    bool ta, tb;
    const char *m, *n, *k;
    bool vec4_ok;
  };
  // The odd constant is walked by vectors only in the layouts marked false.
  const Case cases[] = {
      {false, false, "T", "30", "64", false},  // B[K,N] walks N = 30
      {false, true, "T", "30", "64", true},    // B stored [N,K] walks K = 64
      {false, true, "T", "64", "30", false},   // ... and K = 30 fails for both
      {true, false, "30", "T", "T", false},    // A stored [K,M] walks M = 30
      {false, false, "30", "T", "T", true},    // A[M,K] walks K, dynamic
      {true, true, "T", "30", "T", true},      // nothing constant is walked
  };
  for (const Case& c : cases) {
    const OpSpec op = bmm(c.ta, c.tb, c.m, c.n, c.k);
    SpaceContext ctx{gpu, op, GemmShape{12, 128, 128, 128}};
    SCOPED_TRACE(std::string(c.m) + "," + c.n + "," + c.k + " ta=" + std::to_string(c.ta) +
                 " tb=" + std::to_string(c.tb));
    EXPECT_EQ(rejected_by(s, with(s, {{"VEC", 4}}), ctx, rule), !c.vec4_ok);
    EXPECT_EQ(rejected_by(s, with(s, {{"VEC", 2}}), ctx, rule), false);
    EXPECT_FALSE(rejected_by(s, with(s, {{"VEC", 1}}), ctx, rule));
  }
}

TEST(GemmF32OpSpaces, ConvVecDividesTheChannels) {
  const auto& s = conv2d_f32_space();
  const GpuSpec gpu = h100();
  const OpSpec stem = conv(224, 3, 7, 2, 3);
  SpaceContext ctx{gpu, stem, GemmShape{1, 64 * 112 * 112, 64, 147}};
  EXPECT_TRUE(rejected_by(s, with(s, {{"VEC", 4}}), ctx, "VEC divides C"));
  EXPECT_TRUE(rejected_by(s, with(s, {{"VEC", 2}}), ctx, "VEC divides C"));
  EXPECT_FALSE(rejected_by(s, with(s, {{"VEC", 1}}), ctx, "VEC divides C"));
  const OpSpec body = conv(56, 64, 3, 1, 1);
  SpaceContext body_ctx{gpu, body, GemmShape{1, 64 * 56 * 56, 64, 576}};
  EXPECT_FALSE(rejected_by(s, with(s, {{"VEC", 4}}), body_ctx, "VEC divides C"));
}

TEST(GemmF32OpSpaces, ConvGatherRegistersCountAgainstTheBudget) {
  const GpuSpec gpu = h100();
  const OpSpec op = conv(56, 64, 3, 1, 1);
  SpaceContext ctx{gpu, op, GemmShape{1, 64 * 56 * 56, 64, 576}};
  // 256 x 64 tiles, 256 threads, cp.async, BK 32: 32 A rows per thread. The dense estimate
  // (64 + 32 + 2 * (32 + 8) + 32 = 208) fits 255; three more registers per row (304) do not.
  const std::map<std::string, int> tall = {{"WARPS_M", 4},   {"WARPS_N", 2}, {"THREADS_M", 8},
                                           {"THREADS_N", 4}, {"BK", 32},     {"VEC", 1},
                                           {"STAGES", 3}};
  const auto g = DenseF32Geometry::of(with(dense_f32_space(), tall));
  EXPECT_EQ(g.a_rows_per_thread, 32);
  EXPECT_EQ(g.register_estimate, 208);
  EXPECT_TRUE(rejected_by(conv2d_f32_space(), with(conv2d_f32_space(), tall), ctx,
                          "register estimate per thread"));
  EXPECT_FALSE(rejected_by(batch_matmul_f32_space(), with(batch_matmul_f32_space(), tall),
                           SpaceContext{gpu, op, ctx.largest}, "register estimate per thread"));
}

TEST(GemmF32OpSpaces, ConvPixelIndicesAre32Bit) {
  const auto& s = conv2d_f32_space();
  const GpuSpec gpu = h100();
  const OpSpec op = conv(224, 3, 7, 2, 3);  // P = Q = 112
  const std::string rule = "input pixels N*H*W < 2^31";
  // N = 42799 images of 224 x 224 are 2147482624 pixels; one more is too many.
  EXPECT_FALSE(
      rejected_by(s, s.defaults(), SpaceContext{gpu, op, {1, 42799LL * 112 * 112, 64, 147}}, rule));
  EXPECT_TRUE(
      rejected_by(s, s.defaults(), SpaceContext{gpu, op, {1, 42800LL * 112 * 112, 64, 147}}, rule));
  // With a dynamic H the bound is cruder (M * (stride + R - 1)^2) but still decides.
  OpSpec dynamic_h = op;
  dynamic_h.dims["H"] = Expr::parse("H");
  dynamic_h.vars = {"N", "H"};
  EXPECT_FALSE(
      rejected_by(s, s.defaults(), SpaceContext{gpu, dynamic_h, {1, 802816, 64, 147}}, rule));
  EXPECT_TRUE(
      rejected_by(s, s.defaults(), SpaceContext{gpu, dynamic_h, {1, 40000000, 64, 147}}, rule));
}

TEST(GemmF32OpSpaces, TwoDynamicVariablesFlowThroughInstancesAndTheSpace) {
  const Workload w = parse_workload(R"({
    "name": "attn",
    "shape_vars": {"NB": {"values": [1, 4, 8]}, "T": {"min": 1, "max": 64}},
    "ops": [
      {"name": "qk", "op": "batch_matmul", "dtype": "float32",
       "B": "12*NB", "M": "T", "N": "T", "K": 64, "transpose_b": true},
      {"name": "proj", "op": "dense", "dtype": "float32", "M": "NB*T", "N": 768, "K": 768},
      {"name": "conv", "op": "conv2d", "dtype": "float32", "layout": "NHWC",
       "N": "NB", "H": "T+6", "W": "T+6", "C": 16, "K": 32, "R": 3, "S": 3, "stride": 2, "pad": 1}
    ]})",
                                    "attn.json");
  const OpSpec& qk = w.ops[0];
  ASSERT_EQ(qk.vars, (std::vector<std::string>{"NB", "T"}));
  const auto instances = expand_instances(w, qk);
  ASSERT_EQ(instances.size(), 3u * 64u);
  EXPECT_EQ(instances.back().gemm.batch, 96);
  EXPECT_EQ(instances.back().gemm.M, 64);
  const GemmShape largest = largest_shape(w, qk);
  EXPECT_EQ(largest.batch, 96);
  EXPECT_EQ(largest.M, 64);
  EXPECT_EQ(largest_shape(w, w.ops[1]).M, 8 * 64);
  const GemmShape conv_largest = largest_shape(w, w.ops[2]);
  EXPECT_EQ(conv_largest.M, 8 * 35 * 35);  // P = Q = (70 + 2 - 3) / 2 + 1
  EXPECT_EQ(conv_largest.K, 3 * 3 * 16);

  SearchLimits limits;
  limits.max_candidates = 500;
  const auto reports = report_workload_space(w, h100(), limits);
  ASSERT_EQ(reports.size(), 3u);
  EXPECT_EQ(reports[0].tmpl, "batch_matmul_f32");
  EXPECT_EQ(reports[1].tmpl, "dense_f32");
  EXPECT_EQ(reports[2].tmpl, "conv2d_f32");
  for (const auto& r : reports) EXPECT_EQ(r.valid.candidates.size(), 500u) << r.op;
}

}  // namespace
}  // namespace dietcode

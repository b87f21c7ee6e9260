// Code generation for batch_matmul_f32 and conv2d_f32: the layout flags each transpose gives,
// STATIC_* for constant dimensions only, conv geometry constants (P and Q derived), the VEC
// fallback for the pitch each layout's loads walk, honest pointer alignment, launch grids with
// the batch in z, and the reference kernel's layout options.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "codegen/generated_kernel.h"
#include "common/error.h"
#include "space/templates.h"

namespace dietcode {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

Expr dim(const std::string& text) {
  return std::isdigit(static_cast<unsigned char>(text[0])) ? Expr::constant(std::stoll(text))
                                                           : Expr::parse(text);
}

OpSpec bmm(bool ta, bool tb, const std::string& m, const std::string& n, const std::string& k,
           const std::string& b = "B") {
  OpSpec op;
  op.name = "bmm";
  op.kind = OpKind::kBatchMatmul;
  op.transpose_a = ta, op.transpose_b = tb;
  op.dims = {{"B", dim(b)}, {"M", dim(m)}, {"N", dim(n)}, {"K", dim(k)}};
  op.vars = {"B", "T"};
  return op;
}

OpSpec conv(const std::string& h, const std::string& c, int r, int stride, int pad,
            int dilation = 1, Epilogue epilogue = Epilogue::kBiasRelu) {
  OpSpec op;
  op.name = "conv";
  op.kind = OpKind::kConv2d;
  op.epilogue = epilogue;
  op.dims = {{"N", Expr::parse("N")},
             {"H", dim(h)},
             {"W", dim(h)},
             {"C", dim(c)},
             {"K", Expr::constant(64)},
             {"R", Expr::constant(r)},
             {"S", Expr::constant(r)}};
  op.stride[0] = op.stride[1] = stride;
  op.pad[0] = op.pad[1] = pad;
  op.dilation[0] = op.dilation[1] = dilation;
  op.vars = {"N"};
  return op;
}

MicroKernel mk(const std::string& tmpl, std::map<std::string, int> params = {}) {
  return MicroKernel{tmpl, params};
}

std::vector<std::string> static_options(const GeneratedKernel& k) {
  std::vector<std::string> out;
  for (const auto& o : k.options)
    if (o.find("STATIC_") != std::string::npos) out.push_back(o);
  return out;
}

TEST(CodegenOps, BatchMatmulLayoutFlagsFollowTheTransposes) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      const auto k = generate_kernel(bmm(ta, tb, "T", "T", "64"), mk("batch_matmul_f32"));
      EXPECT_THAT(k.options, Contains(ta ? "-DA_K_CONTIGUOUS=0" : "-DA_K_CONTIGUOUS=1"));
      EXPECT_THAT(k.options, Contains(tb ? "-DB_K_CONTIGUOUS=1" : "-DB_K_CONTIGUOUS=0"));
      EXPECT_EQ(k.plan.entry, "dietcode_batch_matmul_f32");
      EXPECT_THAT(k.source, HasSubstr("dietcode_batch_matmul_f32("));
      EXPECT_THAT(k.source, Not(HasSubstr("#include \"")));
    }
}

TEST(CodegenOps, BatchMatmulStaticDimsOnlyWhenConstant) {
  const auto qk = generate_kernel(bmm(false, true, "T", "T", "64", "192"), mk("batch_matmul_f32"));
  EXPECT_EQ(static_options(qk), std::vector<std::string>{"-DSTATIC_K=64"});
  const auto av = generate_kernel(bmm(false, false, "T", "64", "T"), mk("batch_matmul_f32"));
  EXPECT_EQ(static_options(av), std::vector<std::string>{"-DSTATIC_N=64"});
  const auto all = generate_kernel(bmm(true, false, "32", "48", "16"), mk("batch_matmul_f32"));
  EXPECT_EQ(static_options(all),
            (std::vector<std::string>{"-DSTATIC_M=32", "-DSTATIC_N=48", "-DSTATIC_K=16"}));
  const auto two_vars =
      generate_kernel(bmm(false, false, "B*T", "T+1", "T"), mk("batch_matmul_f32"));
  EXPECT_TRUE(static_options(two_vars).empty());
}

TEST(CodegenOps, BatchMatmulVecFallsBackForTheWalkedPitchOnly) {
  const auto vec4 = mk("batch_matmul_f32", {{"VEC", 4}});
  // A stored [K,M] walks M = 30: scalar loads, 4-byte alignment.
  const auto ta = generate_kernel(bmm(true, false, "30", "T", "T"), vec4);
  EXPECT_THAT(ta.options, Contains("-DVEC=1"));
  EXPECT_EQ(ta.plan.min_alignment_bytes, 4);
  // A[M,K] walks K (dynamic): M = 30 does not matter; 16-byte alignment for float4 loads.
  const auto nn = generate_kernel(bmm(false, false, "30", "T", "T"), vec4);
  EXPECT_THAT(nn.options, Contains("-DVEC=4"));
  EXPECT_EQ(nn.plan.min_alignment_bytes, 16);
  // B[K,N] walks N = 30; B stored [N,K] walks K = 64.
  EXPECT_THAT(generate_kernel(bmm(false, false, "T", "30", "64"), vec4).options,
              Contains("-DVEC=1"));
  EXPECT_THAT(generate_kernel(bmm(false, true, "T", "30", "64"), vec4).options,
              Contains("-DVEC=4"));
  const auto half = generate_kernel(bmm(false, true, "T", "T", "30"), vec4);
  EXPECT_THAT(half.options, Contains("-DVEC=1"));
  const auto vec2 =
      generate_kernel(bmm(false, true, "T", "T", "30"), mk("batch_matmul_f32", {{"VEC", 2}}));
  EXPECT_THAT(vec2.options, Contains("-DVEC=2"));
  EXPECT_EQ(vec2.plan.min_alignment_bytes, 8);
  const auto cp_async = generate_kernel(bmm(false, false, "T", "T", "T"),
                                        mk("batch_matmul_f32", {{"VEC", 1}, {"STAGES", 3}}));
  EXPECT_EQ(cp_async.plan.min_alignment_bytes, 4);
}

TEST(CodegenOps, BatchMatmulGridHasTheBatchTimesSplitsInZ) {
  const auto k = generate_kernel(bmm(false, true, "T", "T", "64"),
                                 mk("batch_matmul_f32", {{"SPLITK", 2}, {"BK", 16}}));
  EXPECT_EQ(k.plan.reduce_entry, "dietcode_batch_matmul_f32_reduce");
  const GemmShape shape{192, 37, 37, 64};
  unsigned g[3];
  k.plan.grid(shape, g);
  EXPECT_EQ(g[0], 1u);  // ceil(37 / 128)
  EXPECT_EQ(g[1], 1u);
  EXPECT_EQ(g[2], 384u);  // 192 heads x 2 slices
  EXPECT_EQ(k.plan.workspace_bytes(shape), 192LL * 2 * 37 * 37 * 4);
  try {
    k.plan.grid(GemmShape{40000, 37, 37, 64}, g);  // 80000 > 65535 in z
    FAIL() << "no exception";
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(),
                 "shape batch=40000 M=37 N=37 K=64 needs a grid of 1 x 80000 blocks, more than "
                 "one launch allows");
  }
}

TEST(CodegenOps, ConvGeometryBecomesConstants) {
  // ResNet-50's stem: 224 x 224 x 3, 64 filters of 7 x 7, stride 2, pad 3: P = Q = 112.
  const auto stem = generate_kernel(conv("224", "3", 7, 2, 3), mk("conv2d_f32", {{"VEC", 4}}));
  EXPECT_EQ(stem.plan.entry, "dietcode_conv2d_f32");
  EXPECT_EQ(static_options(stem),
            (std::vector<std::string>{"-DSTATIC_N=64", "-DSTATIC_K=147", "-DSTATIC_H=224",
                                      "-DSTATIC_W=224", "-DSTATIC_C=3", "-DSTATIC_S=7",
                                      "-DSTATIC_P=112", "-DSTATIC_Q=112"}));
  for (const char* o :
       {"-DCONV_STRIDE_H=2", "-DCONV_STRIDE_W=2", "-DCONV_PAD_H=3", "-DCONV_PAD_W=3",
        "-DCONV_DILATION_H=1", "-DCONV_DILATION_W=1", "-DEPILOGUE=3"})
    EXPECT_THAT(stem.options, Contains(o));
  EXPECT_THAT(stem.options, Contains("-DVEC=1"));  // C = 3
  EXPECT_EQ(stem.plan.min_alignment_bytes, 4);
  const auto body = generate_kernel(conv("56", "64", 3, 1, 1, 2), mk("conv2d_f32", {{"VEC", 4}}));
  EXPECT_THAT(body.options, Contains("-DVEC=4"));
  EXPECT_THAT(body.options, Contains("-DCONV_DILATION_H=2"));
  EXPECT_THAT(body.options, Contains("-DSTATIC_P=54"));  // (56 + 2 - 4 - 1) / 1 + 1
  EXPECT_EQ(body.plan.min_alignment_bytes, 16);
}

TEST(CodegenOps, ConvDynamicExtentsStayRuntime) {
  const auto k = generate_kernel(conv("H", "C", 3, 2, 1), mk("conv2d_f32"));
  EXPECT_EQ(static_options(k), (std::vector<std::string>{"-DSTATIC_N=64", "-DSTATIC_S=3"}));
  EXPECT_THAT(k.options, Contains("-DVEC=4"));  // a dynamic C is checked at run time
  EXPECT_THAT(k.options, Contains("-DCONV_STRIDE_H=2"));
  unsigned g[3];
  k.plan.grid(GemmShape{1, 64 * 28 * 28, 64, 576}, g);
  EXPECT_EQ(g[0], 1u);
  EXPECT_EQ(g[1], unsigned(64 * 28 * 28 / 128));
  EXPECT_EQ(g[2], 1u);
}

TEST(CodegenOps, TemplatesRejectOtherOps) {
  try {
    generate_kernel(conv("56", "64", 3, 1, 1), mk("batch_matmul_f32"));
    FAIL() << "no exception";
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(),
                 "template \"batch_matmul_f32\" cannot compute op \"conv\" (conv2d, float32)");
  }
  try {
    generate_kernel(bmm(false, false, "T", "T", "T"), mk("conv2d_f32"));
    FAIL() << "no exception";
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(),
                 "template \"conv2d_f32\" cannot compute op \"bmm\" (batch_matmul, float32, A "
                 "stored [M,K], B stored [K,N])");
  }
}

TEST(CodegenOps, ReferenceKernelReadsEveryLayout) {
  EXPECT_EQ(generate_reference_kernel(bmm(true, false, "T", "T", "T")).options,
            (std::vector<std::string>{"-DEPILOGUE=0", "-DA_K_CONTIGUOUS=0", "-DB_K_CONTIGUOUS=0"}));
  EXPECT_EQ(generate_reference_kernel(bmm(false, true, "T", "T", "T")).options,
            (std::vector<std::string>{"-DEPILOGUE=0", "-DA_K_CONTIGUOUS=1", "-DB_K_CONTIGUOUS=1"}));
  EXPECT_EQ(generate_reference_kernel(conv("56", "64", 3, 1, 1)).options,
            (std::vector<std::string>{"-DEPILOGUE=3", "-DCONV_NHWC=1"}));
  // 16-bit batch_matmul in any layout: the same layout flags plus the element type.
  OpSpec half = bmm(false, false, "T", "T", "T");
  half.dtype = DType::kFloat16;
  EXPECT_EQ(generate_reference_kernel(half).options,
            (std::vector<std::string>{"-DEPILOGUE=0", "-DA_K_CONTIGUOUS=1", "-DB_K_CONTIGUOUS=0",
                                      "-DDTYPE=1"}));
  half.transpose_b = true, half.dtype = DType::kBFloat16;
  EXPECT_EQ(generate_reference_kernel(half).options,
            (std::vector<std::string>{"-DEPILOGUE=0", "-DA_K_CONTIGUOUS=1", "-DB_K_CONTIGUOUS=1",
                                      "-DDTYPE=2"}));
  OpSpec half_conv = conv("56", "64", 3, 1, 1);
  half_conv.dtype = DType::kFloat16;
  try {
    generate_reference_kernel(half_conv);
    FAIL() << "no exception";
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(),
                 "the reference kernel computes float32 ops and 16-bit dense and batch_matmul ops "
                 "only, not op \"conv\" (conv2d, float16)");
  }
}

}  // namespace
}  // namespace dietcode

// Code generation for the tensor-core templates: the element type as -DDTYPE, static and dynamic
// dimensions, the plan's geometry and alignment, split-K's reduction entry, the arch suffix that
// sends wgmma kernels to sm_90a, and the reference kernel for 16-bit ops.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "codegen/generated_kernel.h"
#include "codegen/tensor_core_rules.h"
#include "common/error.h"
#include "space/dense_tc_space.h"

namespace dietcode {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

OpSpec dense_op(int64_t n, int64_t k, DType dtype, Epilogue epilogue = Epilogue::kNone) {
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

GpuSpec gpu(int major, int minor) {
  GpuSpec g;
  g.cc_major = major, g.cc_minor = minor;
  return g;
}

TEST(TensorCoreCodegen, DenseTcOptionsAndPlan) {
  const auto k = generate_kernel(dense_op(3072, 768, DType::kFloat16, Epilogue::kBiasGelu),
                                 MicroKernel{"dense_tc", {{"WN", 24}, {"SPLITK", 3}}});
  EXPECT_EQ(k.name, "dense_tc");
  for (const auto& t : dense_tc_space().tunables) {
    const int expected = t.name == "WN" ? 24 : t.name == "SPLITK" ? 3 : t.default_value;
    EXPECT_THAT(k.options, Contains("-D" + t.name + "=" + std::to_string(expected)));
  }
  EXPECT_THAT(k.options, Contains("-DDTYPE=1"));
  EXPECT_THAT(k.options, Contains("-DSTATIC_N=3072"));
  EXPECT_THAT(k.options, Contains("-DSTATIC_K=768"));
  EXPECT_THAT(k.options, Contains("-DEPILOGUE=5"));
  EXPECT_THAT(k.options, Contains("-DDIETCODE_EXPECT_THREADS=128"));
  EXPECT_THAT(k.options, Contains("-DDIETCODE_EXPECT_SMEM=" + std::to_string(3 * (128 + 48) * 64)));
  EXPECT_EQ(k.plan.entry, "dietcode_dense_tc");
  EXPECT_EQ(k.plan.reduce_entry, "dietcode_dense_tc_reduce");
  EXPECT_EQ(k.plan.tile_m, 128);
  EXPECT_EQ(k.plan.tile_n, 48);
  EXPECT_EQ(k.plan.split_k, 3);
  EXPECT_EQ(k.plan.min_alignment_bytes, 16);
  EXPECT_EQ(k.arch_suffix, "");
  EXPECT_EQ(compile_arch(k, gpu(8, 0)), "sm_80");
  EXPECT_EQ(compile_arch(k, gpu(9, 0)), "sm_90");
  EXPECT_THAT(k.source, HasSubstr("dietcode_dense_tc("));
  EXPECT_THAT(k.source, HasSubstr("typedef struct DietcodeArgs"));
  EXPECT_THAT(k.source, HasSubstr("mma.sync.aligned.m16n8k16"));  // dietcode_tc.h inlined
  EXPECT_THAT(k.source, Not(HasSubstr("#include \"")));
}

TEST(TensorCoreCodegen, DynamicDimsAndBfloat16) {
  const auto k = generate_kernel(dense_op(0, 0, DType::kBFloat16), MicroKernel{"dense_tc", {}});
  EXPECT_THAT(k.options, Contains("-DDTYPE=2"));
  for (const auto& o : k.options) EXPECT_THAT(o, Not(HasSubstr("STATIC_")));
  EXPECT_TRUE(k.plan.reduce_entry.empty());
  EXPECT_EQ(k.plan.min_alignment_bytes, 16);
}

TEST(TensorCoreCodegen, StaticKNotAMultipleOf8NeedsOnlyFourByteAlignment) {
  const auto odd =
      generate_kernel(dense_op(1000, 771, DType::kFloat16), MicroKernel{"dense_tc", {}});
  EXPECT_THAT(odd.options, Contains("-DSTATIC_K=771"));
  EXPECT_EQ(odd.plan.min_alignment_bytes, 4);
  const auto even =
      generate_kernel(dense_op(1000, 776, DType::kFloat16), MicroKernel{"dense_tc", {}});
  EXPECT_EQ(even.plan.min_alignment_bytes, 16);
}

TEST(TensorCoreCodegen, WgmmaCompilesForSm90aOnly) {
  const auto k = generate_kernel(dense_op(4096, 11008, DType::kBFloat16, Epilogue::kRelu),
                                 MicroKernel{"dense_wgmma", {{"BN", 256}, {"SPLITK", 2}}});
  EXPECT_EQ(k.arch_suffix, "a");
  EXPECT_EQ(compile_arch(k, gpu(9, 0)), "sm_90a");
  EXPECT_EQ(k.plan.entry, "dietcode_dense_wgmma");
  EXPECT_EQ(k.plan.reduce_entry, "dietcode_dense_wgmma_reduce");
  EXPECT_EQ(k.plan.threads, 384);
  EXPECT_EQ(k.plan.tile_m, 128);
  EXPECT_EQ(k.plan.tile_n, 256);
  EXPECT_EQ(k.plan.dynamic_smem_bytes, 4 * (128 + 256) * 128 + 2048);
  EXPECT_THAT(k.options, Contains("-DWG_M=2"));
  EXPECT_THAT(k.options, Contains("-DWGM=64"));
  EXPECT_THAT(k.options, Contains("-DBK=64"));
  EXPECT_THAT(k.options, Contains("-DDTYPE=2"));
  EXPECT_THAT(k.source, HasSubstr("wgmma.mma_async"));
}

TEST(TensorCoreCodegen, RejectsFloat32AndUnknownTunables) {
  try {
    generate_kernel(dense_op(768, 768, DType::kFloat32), MicroKernel{"dense_tc", {}});
    FAIL() << "no exception";
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "template \"dense_tc\" cannot compute op \"fc\" (dense, float32)");
  }
  try {
    generate_kernel(dense_op(768, 768, DType::kFloat16), MicroKernel{"dense_tc", {{"TM", 4}}});
    FAIL() << "no exception";
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "dense_tc: unknown tunable \"TM\"");
  }
  try {
    tensor_core_dtype_code(dense_op(768, 768, DType::kFloat32));
    FAIL() << "no exception";
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "op \"fc\": tensor-core kernels take float16 or bfloat16, not float32");
  }
}

TEST(TensorCoreCodegen, ReferenceKernelForSixteenBitTypes) {
  const auto f16 = generate_reference_kernel(dense_op(1000, 771, DType::kFloat16, Epilogue::kBias));
  EXPECT_THAT(f16.options, Contains("-DDTYPE=1"));
  EXPECT_THAT(f16.options, Contains("-DEPILOGUE=1"));
  const auto bf16 = generate_reference_kernel(dense_op(1000, 771, DType::kBFloat16));
  EXPECT_THAT(bf16.options, Contains("-DDTYPE=2"));
  const auto f32 = generate_reference_kernel(dense_op(1000, 771, DType::kFloat32));
  for (const auto& o : f32.options) EXPECT_THAT(o, Not(HasSubstr("DTYPE")));
  EXPECT_EQ(f16.arch_suffix, "");
}

}  // namespace
}  // namespace dietcode

#include "measure/gpu_operands.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace dietcode {
namespace {

TEST(GpuOperands, HalfConversionRoundsToNearestEven) {
  EXPECT_EQ(float_to_half(1.0f), 0x3C00);
  EXPECT_EQ(float_to_half(-2.0f), 0xC000);
  EXPECT_EQ(float_to_half(65504.0f), 0x7BFF);
  EXPECT_EQ(float_to_half(1e6f), 0x7C00);               // overflow: infinity
  EXPECT_EQ(float_to_half(1.0f + 0x1.0p-11f), 0x3C00);  // a tie rounds to the even 1.0
  EXPECT_EQ(float_to_half(1.0f + 0x1.8p-11f), 0x3C01);
  EXPECT_EQ(float_to_half(0x1.0p-24f), 0x0001);  // the smallest subnormal
  EXPECT_EQ(half_to_float(0x0001), 0x1.0p-24f);
  EXPECT_TRUE(std::isnan(half_to_float(0x7E00)));
  EXPECT_TRUE(std::isnan(half_to_float(0xFFFF)));  // what an unwritten output reads as
  for (uint32_t h = 0; h < 0x7C00; ++h)            // every finite half survives a round trip
    ASSERT_EQ(float_to_half(half_to_float(uint16_t(h))), h) << h;
}

TEST(GpuOperands, Bfloat16ConversionRoundsToNearestEven) {
  EXPECT_EQ(float_to_bfloat16(1.0f), 0x3F80);
  EXPECT_EQ(float_to_bfloat16(1.0f + 0x1.0p-8f), 0x3F80);  // tie to even
  EXPECT_EQ(float_to_bfloat16(1.0f + 0x1.8p-8f), 0x3F81);
  EXPECT_EQ(bfloat16_to_float(0xC040), -3.0f);
  EXPECT_TRUE(std::isnan(bfloat16_to_float(0xFFFF)));
}

TEST(GpuOperands, ValuesDependOnSeedTagAndIndexOnly) {
  float lo = 1, hi = -1;
  for (int64_t i = 0; i < 100000; ++i) {
    float v = operand_value(7, 0, i);
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  EXPECT_GE(lo, -1.0f);
  EXPECT_LT(hi, 1.0f);
  EXPECT_LT(lo, -0.99f);
  EXPECT_GT(hi, 0.99f);
  EXPECT_NE(operand_value(7, 0, 5), operand_value(8, 0, 5));
  EXPECT_NE(operand_value(7, 0, 5), operand_value(7, 1, 5));
  // A longer buffer starts with the shorter one's bytes: regrowing keeps earlier contents.
  std::string small = operand_bytes(3, 1, 100, DType::kBFloat16);
  std::string large = operand_bytes(3, 1, 1000, DType::kBFloat16);
  EXPECT_EQ(large.substr(0, small.size()), small);
  auto back = output_floats(operand_bytes(3, 0, 10, DType::kFloat32), DType::kFloat32);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(back[i], operand_value(3, 0, i));
}

TEST(GpuOperands, SizesFollowTheOpKind) {
  OperandSizes dense = operand_sizes(OpKind::kDense, {1, 16, 768, 64});
  EXPECT_EQ(dense.a, 16 * 64);
  EXPECT_EQ(dense.b, 768 * 64);
  EXPECT_EQ(dense.c, 16 * 768);
  OperandSizes bmm = operand_sizes(OpKind::kBatchMatmul, {12, 128, 64, 128});
  EXPECT_EQ(bmm.b, 12 * 64 * 128);
  EXPECT_THROW(operand_sizes(OpKind::kConv2d, {}), std::invalid_argument);
}

// Sums of the same products in another order agree; one lost product does not.
TEST(GpuOperands, ComparisonToleratesReorderingButNotALostProduct) {
  const int64_t M = 4, N = 8, K = 3072;
  std::vector<float> forward(M * N), backward(M * N), lost(M * N);
  for (int64_t e = 0; e < M * N; ++e) {
    std::vector<float> products(K);
    for (int64_t k = 0; k < K; ++k)
      products[k] = operand_value(1, 0, e * K + k) * operand_value(1, 1, e * K + k);
    float f = 0, b = 0;
    for (int64_t k = 0; k < K; ++k) f += products[k];
    for (int64_t k = K - 1; k >= 0; --k) b += products[k];
    forward[e] = f;
    backward[e] = b;
    lost[e] = e == 13 ? f - products[100] : f;
  }
  GemmShape shape{1, M, N, K};
  EXPECT_TRUE(compare_outputs(backward, forward, shape, DType::kFloat32).ok);
  OutputComparison cmp = compare_outputs(lost, forward, shape, DType::kFloat32);
  EXPECT_FALSE(cmp.ok);
  EXPECT_EQ(cmp.mismatches, 1);
  EXPECT_EQ(cmp.message.substr(0, 8), "C[0,1,5]");
  EXPECT_NE(cmp.message.find("; 1 of 32 elements differ"), std::string::npos) << cmp.message;

  std::vector<float> unwritten = forward;
  unwritten[0] = std::nanf("");
  EXPECT_FALSE(compare_outputs(unwritten, forward, shape, DType::kFloat32).ok);
  EXPECT_EQ(compare_outputs({1, 2}, {1}, shape, DType::kFloat32).message,
            "the output has 2 elements, the reference 1");
  // bf16 output rounding is within its tolerance.
  std::vector<float> rounded(forward.size());
  for (size_t i = 0; i < forward.size(); ++i)
    rounded[i] = bfloat16_to_float(float_to_bfloat16(forward[i]));
  EXPECT_TRUE(compare_outputs(rounded, forward, shape, DType::kBFloat16).ok);
  EXPECT_FALSE(compare_outputs(rounded, forward, shape, DType::kFloat32).ok);
}

TEST(GpuOperands, ComparisonNamesTheFirstMismatch) {
  std::vector<float> want = {1, 2, 3, 4, 5, 6}, got = want;
  got[4] = 3.5f;
  got[5] = 7.0f;
  OutputComparison cmp = compare_outputs(got, want, {2, 1, 3, 4}, DType::kFloat32);
  EXPECT_EQ(cmp.message, "C[1,0,1] = 3.5 where the reference has 5; 2 of 6 elements differ");
}

}  // namespace
}  // namespace dietcode

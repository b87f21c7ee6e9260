// The 16-bit CPU reference: exact conversions, a hand-computed case in both types with the
// output rounded once to the type, and a comparison that accepts one unit of rounding but
// rejects two, a wrong element and a NaN.
#include "measure/cpu_reference_half.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <stdexcept>

#include "measure/gpu_operands.h"

namespace dietcode {
namespace {

TEST(CpuReferenceHalf, ConversionsRoundToNearestEven) {
  const std::vector<float> v = {1.0f, 1.0f + 0x1p-11f, 1.0f + 0x1.8p-11f, -2.5f};
  EXPECT_EQ(floats_to_elements(v, DType::kFloat16),
            (std::vector<uint16_t>{0x3C00, 0x3C00, 0x3C01, 0xC100}));
  EXPECT_EQ(round_to_dtype(v, DType::kBFloat16), (std::vector<float>{1.0f, 1.0f, 1.0f, -2.5f}));
  const uint16_t bits[] = {0x3C00, 0xC100};
  EXPECT_EQ(elements_to_floats(bits, 2, DType::kFloat16), (std::vector<float>{1.0f, -2.5f}));
  EXPECT_THROW(elements_to_floats(bits, 2, DType::kFloat32), std::invalid_argument);
}

// X = [[1, 2, 3], [-1, 0, 2]], W = [[1, 0, -1], [2, 1, 0.001]]: X W^T = [[-2, 4.003],
// [-3, -1.998]]; bias = [0.5, -1]. 4.003 and -1.998 are not 16-bit values: they round.
TEST(CpuReferenceHalf, HandComputedCaseRoundsTheOutputOnce) {
  for (const DType dtype : {DType::kFloat16, DType::kBFloat16}) {
    const auto x = floats_to_elements({1, 2, 3, -1, 0, 2}, dtype);
    const auto w = floats_to_elements({1, 0, -1, 2, 1, 0.001f}, dtype);
    const auto bias = floats_to_elements({0.5f, -1.0f}, dtype);
    const double w5 = elements_to_floats(&w[5], 1, dtype)[0];  // 0.001 as stored
    const auto acc = dense_accumulate_16bit(x.data(), w.data(), 2, 2, 3, dtype, 1);
    EXPECT_EQ(acc.sum, (std::vector<double>{-2, 4 + 3 * w5, -3, -2 + 2 * w5}));
    const auto y = dense_apply_epilogue_16bit(acc, bias.data(), Epilogue::kBiasRelu, 2, dtype);
    EXPECT_EQ(y, round_to_dtype({0, float(3 + 3 * w5), 0, 0}, dtype)) << to_string(dtype);
    const auto plain = dense_apply_epilogue_16bit(acc, nullptr, Epilogue::kNone, 2, dtype);
    EXPECT_EQ(plain[1], round_to_dtype({float(4 + 3 * w5)}, dtype)[0]);
    EXPECT_NE(double(plain[1]), 4 + 3 * w5);  // really rounded
  }
}

// Two batch elements of A[2x2] . B: A0 = [[1, 2], [3, 4]], A1 = [[-1, 0.5], [2, -2]],
// B0 = [[1, 0], [0, 1]], B1 = [[2, 1], [0, -1]] as [K,N]. The same values stored transposed
// ([K,M] for A, [N,K] for B) give the same sums, batch element 1 in rows 2 and 3.
TEST(CpuReferenceHalf, BatchMatmulReadsEveryLayoutPerBatchElement) {
  const std::vector<float> a_mk = {1, 2, 3, 4, -1, 0.5f, 2, -2},
                           a_km = {1, 3, 2, 4, -1, 2, 0.5f, -2};
  const std::vector<float> b_kn = {1, 0, 0, 1, 2, 1, 0, -1}, b_nk = {1, 0, 0, 1, 2, 0, 1, -1};
  const std::vector<double> want = {1, 2, 3, 4, -2, -1.5, 4, 4};
  for (const DType dtype : {DType::kFloat16, DType::kBFloat16})
    for (const bool ta : {false, true})
      for (const bool tb : {false, true}) {
        const auto a = floats_to_elements(ta ? a_km : a_mk, dtype);
        const auto b = floats_to_elements(tb ? b_nk : b_kn, dtype);
        const auto acc =
            batch_matmul_accumulate_16bit(a.data(), b.data(), 2, 2, 2, 2, ta, tb, dtype, 1);
        EXPECT_EQ(acc.M, 4);
        EXPECT_EQ(acc.sum, want) << to_string(dtype) << " ta=" << ta << " tb=" << tb;
      }
}

class CompareHalf : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override {
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> d(-1, 1);
    std::vector<float> xf(size_t(M * K)), wf(size_t(N * K));
    for (auto& v : xf) v = d(rng);
    for (auto& v : wf) v = d(rng);
    x = floats_to_elements(xf, GetParam());
    w = floats_to_elements(wf, GetParam());
    acc = dense_accumulate_16bit(x.data(), w.data(), M, N, K, GetParam(), 1);
    want = dense_apply_epilogue_16bit(acc, nullptr, Epilogue::kNone, M, GetParam());
    got = floats_to_elements(want, GetParam());
  }
  static constexpr int64_t M = 9, N = 7, K = 256;
  std::vector<uint16_t> x, w, got;
  DenseAccumulation acc;
  std::vector<float> want;
};

TEST_P(CompareHalf, AcceptsOneUnitOfRoundingRejectsTwo) {
  EXPECT_TRUE(compare_dense_16bit(got.data(), want, acc, nullptr, M, GetParam()).ok);
  // Pick a large output so the fp32 accumulation allowance stays below one unit.
  size_t big = 0;
  for (size_t i = 0; i < want.size(); ++i)
    if (std::fabs(want[i]) > std::fabs(want[big])) big = i;
  auto one = got;
  one[big] = uint16_t(got[big] + 1);
  EXPECT_TRUE(compare_dense_16bit(one.data(), want, acc, nullptr, M, GetParam()).ok);
  auto two = got;
  two[big] = uint16_t(got[big] + 3);
  const auto cmp = compare_dense_16bit(two.data(), want, acc, nullptr, M, GetParam());
  EXPECT_FALSE(cmp.ok);
  EXPECT_EQ(cmp.mismatches, 1);
  EXPECT_EQ(cmp.first_row, int64_t(big) / N);
  EXPECT_EQ(cmp.first_col, int64_t(big) % N);
}

TEST_P(CompareHalf, RejectsNanAndAWrongElement) {
  auto nan = got;
  nan[3] = 0xFFFF;
  EXPECT_FALSE(compare_dense_16bit(nan.data(), want, acc, nullptr, M, GetParam()).ok);
  auto wrong = got;
  wrong[10] = floats_to_elements({want[10] + 0.25f}, GetParam())[0];
  const auto cmp = compare_dense_16bit(wrong.data(), want, acc, nullptr, M, GetParam());
  EXPECT_FALSE(cmp.ok);
  EXPECT_EQ(cmp.message.rfind("1 of 63 outputs differ from the reference; first at [1, 3]", 0), 0u)
      << cmp.message;
}

INSTANTIATE_TEST_SUITE_P(Types, CompareHalf, ::testing::Values(DType::kFloat16, DType::kBFloat16),
                         [](const auto& info) { return std::string(to_string(info.param)); });

}  // namespace
}  // namespace dietcode

// The CPU reference: exact small cases for every epilogue, thread-count independence, and a
// comparison that passes fp32 rounding but fails a lost product, a wrong element or a NaN.
#include "measure/cpu_reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace dietcode {
namespace {

// X = [[1, 2, 3], [-1, 0, 2]], W = [[1, 0, -1], [2, 1, 0]]:
// X W^T = [[-2, 4], [-3, -2]]; bias = [0.5, -1].
const float kX[] = {1, 2, 3, -1, 0, 2};
const float kW[] = {1, 0, -1, 2, 1, 0};
const float kBias[] = {0.5f, -1.0f};

std::vector<float> run(Epilogue e) { return dense_reference(kX, kW, kBias, 2, 2, 3, e, 1); }

TEST(CpuReference, EveryEpilogueOnAHandComputedCase) {
  EXPECT_EQ(run(Epilogue::kNone), (std::vector<float>{-2, 4, -3, -2}));
  EXPECT_EQ(run(Epilogue::kBias), (std::vector<float>{-1.5f, 3, -2.5f, -3}));
  EXPECT_EQ(run(Epilogue::kRelu), (std::vector<float>{0, 4, 0, 0}));
  EXPECT_EQ(run(Epilogue::kBiasRelu), (std::vector<float>{0, 3, 0, 0}));
  const auto gelu = run(Epilogue::kGelu);
  EXPECT_FLOAT_EQ(gelu[1], float(gelu_tanh(4.0)));
  const auto bias_gelu = run(Epilogue::kBiasGelu);
  EXPECT_FLOAT_EQ(bias_gelu[0], float(gelu_tanh(-1.5)));
  EXPECT_FLOAT_EQ(bias_gelu[3], float(gelu_tanh(-3.0)));
}

TEST(CpuReference, GeluTanhForm) {
  EXPECT_EQ(gelu_tanh(0.0), 0.0);
  EXPECT_NEAR(gelu_tanh(1.0), 0.8411919906082768, 1e-15);
  EXPECT_NEAR(gelu_tanh(-1.0), -0.15880800939172324, 1e-15);
  EXPECT_NEAR(gelu_tanh(10.0), 10.0, 1e-12);
}

TEST(CpuReference, MagnitudeSumsAbsoluteProducts) {
  const auto acc = dense_accumulate(kX, kW, 2, 2, 3, 1);
  EXPECT_EQ(acc.magnitude, (std::vector<double>{4, 4, 3, 2}));
}

TEST(CpuReference, ThreadsDoNotChangeTheResult) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> x(37 * 29), w(11 * 29);
  for (auto& v : x) v = d(rng);
  for (auto& v : w) v = d(rng);
  const auto one = dense_accumulate(x.data(), w.data(), 37, 11, 29, 1);
  const auto many = dense_accumulate(x.data(), w.data(), 37, 11, 29, 5);
  EXPECT_EQ(one.sum, many.sum);
}

class Compare : public ::testing::Test {
 protected:
  void SetUp() override {
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> d(-1, 1);
    x.resize(size_t(M * K));
    w.resize(size_t(N * K));
    for (auto& v : x) v = d(rng);
    for (auto& v : w) v = d(rng);
    acc = dense_accumulate(x.data(), w.data(), M, N, K, 2);
    want = dense_apply_epilogue(acc, nullptr, Epilogue::kNone, M);
  }
  // What a GPU does: fp32 sums, here in a blocked order unlike the reference's.
  std::vector<float> fp32_result(int64_t skip_k = -1) const {
    std::vector<float> y(size_t(M * N));
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        float parts[4] = {0, 0, 0, 0};
        for (int64_t k = 0; k < K; ++k)
          if (k != skip_k) parts[k % 4] += x[size_t(m * K + k)] * w[size_t(n * K + k)];
        y[size_t(m * N + n)] = (parts[0] + parts[1]) + (parts[2] + parts[3]);
      }
    return y;
  }
  const int64_t M = 8, N = 16, K = 768;
  std::vector<float> x, w, want;
  DenseAccumulation acc;
};

TEST_F(Compare, AcceptsFp32RoundingInAnyOrder) {
  const auto got = fp32_result();
  const auto cmp = compare_dense(got.data(), want, acc, nullptr, M);
  EXPECT_TRUE(cmp.ok) << cmp.message;
  EXPECT_LT(cmp.worst_ratio, 0.1);  // two orders of margin, as the header promises
  EXPECT_EQ(cmp.message, "");
}

TEST_F(Compare, RejectsALostProduct) {
  const auto got = fp32_result(/*skip_k=*/100);
  const auto cmp = compare_dense(got.data(), want, acc, nullptr, M);
  EXPECT_FALSE(cmp.ok);
  EXPECT_GT(cmp.mismatches, M * N / 2);
}

TEST_F(Compare, NamesTheFirstWrongElementAndFailsOnNan) {
  auto got = want;
  got[size_t(3 * N + 5)] += 0.25f;
  got[size_t(6 * N + 1)] = std::nanf("");
  const auto cmp = compare_dense(got.data(), want, acc, nullptr, M);
  EXPECT_FALSE(cmp.ok);
  EXPECT_EQ(cmp.mismatches, 2);
  EXPECT_EQ(cmp.first_row, 3);
  EXPECT_EQ(cmp.first_col, 5);
  EXPECT_EQ(
      cmp.message.rfind("2 of 128 outputs differ from the reference; first at [3, 5]: got ", 0), 0u)
      << cmp.message;
}

TEST_F(Compare, ChecksOnlyTheRowsAsked) {
  auto got = want;
  got[size_t(7 * N)] += 1.0f;  // row 7
  EXPECT_TRUE(compare_dense(got.data(), want, acc, nullptr, 7).ok);
  EXPECT_FALSE(compare_dense(got.data(), want, acc, nullptr, 8).ok);
}

}  // namespace
}  // namespace dietcode

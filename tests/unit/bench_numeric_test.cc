// The numeric side of bench without a GPU: fp16/bf16 conversions, seeded inputs, the agreement
// check, the median, and the row-major -> column-major GEMM mapping the baselines use (run on
// the host with cuBLAS's definition and compared to the row-major definition of each op).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "bench/bench_runner.h"
#include "bench/gemm_mapping.h"
#include "bench/host_tensors.h"

namespace dietcode {
namespace {

TEST(BenchNumeric, HalfConversions) {
  EXPECT_EQ(float_to_half_bits(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half_bits(-2.0f), 0xc000);
  EXPECT_EQ(float_to_half_bits(65504.0f), 0x7bff);                      // the largest half
  EXPECT_EQ(float_to_half_bits(70000.0f), 0x7c00);                      // overflow: infinity
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -24)), 0x0001);         // the smallest subnormal
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -26)), 0x0000);         // below half of it: zero
  EXPECT_EQ(float_to_half_bits(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie: to even
  EXPECT_EQ(float_to_half_bits(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);  // tie: to even
  EXPECT_TRUE(std::isnan(half_bits_to_float(float_to_half_bits(NAN))));
  // Every finite half survives the round trip.
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    if ((bits & 0x7c00) == 0x7c00) continue;
    ASSERT_EQ(float_to_half_bits(half_bits_to_float(uint16_t(bits))), bits) << bits;
  }
  EXPECT_FLOAT_EQ(half_bits_to_float(0x3555), 0.333251953125f);
}

TEST(BenchNumeric, Bf16Conversions) {
  EXPECT_EQ(float_to_bf16_bits(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bf16_bits(-1.5f), 0xbfc0);
  EXPECT_EQ(float_to_bf16_bits(1.0f + std::ldexp(1.0f, -8)), 0x3f80);      // tie: to even
  EXPECT_EQ(float_to_bf16_bits(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);  // tie: to even
  EXPECT_TRUE(std::isnan(bf16_bits_to_float(float_to_bf16_bits(NAN))));
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    if ((bits & 0x7f80) == 0x7f80) continue;
    ASSERT_EQ(float_to_bf16_bits(bf16_bits_to_float(uint16_t(bits))), bits) << bits;
  }
}

TEST(BenchNumeric, RandomTensorsAreSeededAndInRange) {
  const auto a = random_tensor(DType::kFloat32, 1000, 7);
  EXPECT_EQ(a, random_tensor(DType::kFloat32, 1000, 7));
  EXPECT_NE(a, random_tensor(DType::kFloat32, 1000, 8));
  const std::vector<float> v = tensor_to_floats(DType::kFloat32, a.data(), 1000);
  double sum = 0;
  for (float x : v) {
    ASSERT_GE(x, -1.0f);
    ASSERT_LT(x, 1.0f);
    sum += x;
  }
  EXPECT_LT(std::fabs(sum / 1000), 0.1);  // centred
  // fp16 and bf16 hold the same draws, rounded.
  const auto h = random_tensor(DType::kFloat16, 1000, 7);
  ASSERT_EQ(h.size(), 2000u);
  const std::vector<float> hv = tensor_to_floats(DType::kFloat16, h.data(), 1000);
  const std::vector<float> bv =
      tensor_to_floats(DType::kBFloat16, random_tensor(DType::kBFloat16, 1000, 7).data(), 1000);
  for (size_t i = 0; i < v.size(); ++i) {
    ASSERT_NEAR(hv[i], v[i], 1e-3);
    ASSERT_NEAR(bv[i], v[i], 4e-3);
  }
}

TEST(BenchNumeric, AgreementTolerance) {
  const int64_t K = 768;  // sqrt(K) / 4 + 1 = 7.93
  const double rtol = agreement_rtol(DType::kFloat32, false);
  EXPECT_EQ(rtol, 2e-4);
  const double slack = rtol * (std::sqrt(768.0) / 4 + 1);
  std::vector<float> baseline = {0.0f, 10.0f, -3.0f};
  std::vector<float> pack = baseline;
  pack[1] += float(0.9 * (slack + rtol * 10));  // inside
  EXPECT_TRUE(compare_outputs(pack, baseline, K, rtol).ok());
  pack[2] -= float(1.2 * (slack + rtol * 3));  // outside
  const Agreement a = compare_outputs(pack, baseline, K, rtol);
  EXPECT_EQ(a.mismatches, 1);
  EXPECT_EQ(a.first, 2);
  EXPECT_NEAR(a.worst_ratio, 1.2, 1e-3);
  EXPECT_EQ(a.message(0).rfind("mismatch: 1 of 3 outputs differ; first at [2, 0]: pack -3.00", 0),
            0u)
      << a.message(0);
  pack[2] = -3.5f;
  EXPECT_EQ(compare_outputs(pack, baseline, K, rtol).message(2),
            "mismatch: 1 of 3 outputs differ; first at [1, 0]: pack -3.5, baseline -3");
  EXPECT_EQ(compare_outputs(baseline, baseline, K, rtol).message(2), "");

  pack = baseline;
  pack[0] = NAN;  // an unwritten output never agrees
  EXPECT_EQ(compare_outputs(pack, baseline, K, rtol).mismatches, 1);
  EXPECT_GT(agreement_rtol(DType::kFloat32, true), rtol);  // TF32 baselines are looser
  EXPECT_LT(agreement_rtol(DType::kFloat16, false), agreement_rtol(DType::kBFloat16, false));
}

TEST(BenchNumeric, Median) {
  EXPECT_EQ(median({}), 0);
  EXPECT_EQ(median({5}), 5);
  EXPECT_EQ(median({9, 1, 5}), 5);
  EXPECT_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_EQ(median({7, 7, 100, 1, 7}), 7);
}

// Row-major reference of an op: dense Y = X W^T, batch_matmul Y[b] = op(A[b]) op(B[b]).
std::vector<double> row_major_reference(const OpSpec& op, const GemmShape& s,
                                        const std::vector<float>& first_arg,
                                        const std::vector<float>& second_arg) {
  std::vector<double> y(size_t(s.batch * s.M * s.N));
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t m = 0; m < s.M; ++m)
      for (int64_t n = 0; n < s.N; ++n) {
        double sum = 0;
        for (int64_t k = 0; k < s.K; ++k) {
          double x, w;
          if (op.kind == OpKind::kDense) {
            x = first_arg[size_t(m * s.K + k)];   // X[m, k]
            w = second_arg[size_t(n * s.K + k)];  // W[n, k]
          } else {
            const size_t a0 = size_t(b * s.M * s.K), b0 = size_t(b * s.K * s.N);
            x = op.transpose_a ? first_arg[a0 + size_t(k * s.M + m)]    // A[b] is [K, M]
                               : first_arg[a0 + size_t(m * s.K + k)];   // A[b] is [M, K]
            w = op.transpose_b ? second_arg[b0 + size_t(n * s.K + k)]   // B[b] is [N, K]
                               : second_arg[b0 + size_t(k * s.N + n)];  // B[b] is [K, N]
          }
          sum += x * w;
        }
        y[size_t((b * s.M + m) * s.N + n)] = sum;
      }
  return y;
}

void expect_mapping_matches(const OpSpec& op, const GemmShape& s) {
  const int64_t first_n = s.batch * s.M * s.K;
  const int64_t second_n = s.batch * s.N * s.K;
  const auto x =
      tensor_to_floats(DType::kFloat32, random_tensor(DType::kFloat32, first_n, 1).data(), first_n);
  const auto w = tensor_to_floats(DType::kFloat32,
                                  random_tensor(DType::kFloat32, second_n, 2).data(), second_n);
  const ColumnMajorGemm g = column_major_gemm(op, s);
  std::vector<double> c(size_t(s.batch * s.M * s.N), NAN);
  // cuBLAS's first operand is the pack's second argument, and its second the first.
  host_column_major_gemm(g, w.data(), x.data(), c.data());
  const std::vector<double> want = row_major_reference(op, s, x, w);
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(c[i], want[i], 1e-9) << op.name << " at " << i;
}

TEST(GemmMapping, DenseIsWTimesXTransposedInColumnMajor) {
  OpSpec dense;
  dense.name = "dense";
  const GemmShape s{1, 7, 5, 3};  // odd, all different
  const ColumnMajorGemm g = column_major_gemm(dense, s);
  // cublasSgemm(handle, OP_T, OP_N, N, M, K, 1, W, K, X, K, 0, Y, N)
  EXPECT_TRUE(g.transpose_first);
  EXPECT_FALSE(g.transpose_second);
  EXPECT_EQ(g.m, 5);
  EXPECT_EQ(g.n, 7);
  EXPECT_EQ(g.k, 3);
  EXPECT_EQ(g.first_ld, 3);
  EXPECT_EQ(g.second_ld, 3);
  EXPECT_EQ(g.ldc, 5);
  EXPECT_EQ(g.bias_length, 0);
  expect_mapping_matches(dense, s);
  dense.epilogue = Epilogue::kBiasGelu;
  EXPECT_EQ(column_major_gemm(dense, s).bias_length, 5);
}

TEST(GemmMapping, BatchMatmulEveryTranspose) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      OpSpec bmm;
      bmm.kind = OpKind::kBatchMatmul;
      bmm.name = std::string("bmm ta=") + (ta ? "1" : "0") + " tb=" + (tb ? "1" : "0");
      bmm.transpose_a = ta, bmm.transpose_b = tb;
      const GemmShape s{3, 5, 6, 7};
      expect_mapping_matches(bmm, s);
      const ColumnMajorGemm g = column_major_gemm(bmm, s);
      EXPECT_EQ(g.batch, 3);
      EXPECT_EQ(g.c_stride, 30);
      EXPECT_TRUE(fits_int32(g));
    }
}

TEST(GemmMapping, Conv2dHasNoCublasMapping) {
  OpSpec conv;
  conv.kind = OpKind::kConv2d;
  conv.name = "conv";
  EXPECT_THROW(column_major_gemm(conv, GemmShape{}), std::invalid_argument);
  OpSpec dense;
  EXPECT_FALSE(fits_int32(column_major_gemm(dense, GemmShape{1, int64_t(1) << 31, 8, 8})));
}

}  // namespace
}  // namespace dietcode

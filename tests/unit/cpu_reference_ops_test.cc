// The CPU references for batch_matmul and conv2d: hand-computed cases, every transpose agrees
// with the same product stored the other way, a 1x1 convolution is a dense layer, padding taps
// contribute nothing, stride and dilation pick the right inputs (against a direct loop), and
// results do not depend on the thread count.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "measure/cpu_reference.h"

namespace dietcode {
namespace {

std::vector<float> random_floats(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// [batch][rows][cols] -> [batch][cols][rows]
std::vector<float> transpose(const std::vector<float>& v, int64_t batch, int64_t rows,
                             int64_t cols) {
  std::vector<float> t(v.size());
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        t[size_t((b * cols + c) * rows + r)] = v[size_t((b * rows + r) * cols + c)];
  return t;
}

TEST(CpuReferenceOps, BatchMatmulByHand) {
  // Batch 0: [[1, 2], [3, 4]] . [[1, 0, 1], [0, 1, -1]] = [[1, 2, -1], [3, 4, -1]].
  // Batch 1: [[0, 1], [-1, 0]] . [[2, 2, 2], [1, 0, -1]] = [[1, 0, -1], [-2, -2, -2]].
  const float a[] = {1, 2, 3, 4, 0, 1, -1, 0};
  const float b[] = {1, 0, 1, 0, 1, -1, 2, 2, 2, 1, 0, -1};
  const auto acc = batch_matmul_accumulate(a, b, 2, 2, 3, 2, false, false, 1);
  EXPECT_EQ(acc.M, 4);
  EXPECT_EQ(acc.N, 3);
  EXPECT_EQ(acc.K, 2);
  EXPECT_EQ(acc.sum, (std::vector<double>{1, 2, -1, 3, 4, -1, 1, 0, -1, -2, -2, -2}));
  EXPECT_EQ(dense_apply_epilogue(acc, nullptr, Epilogue::kRelu, 4),
            (std::vector<float>{1, 2, 0, 3, 4, 0, 1, 0, 0, 0, 0, 0}));
}

TEST(CpuReferenceOps, EveryTransposeComputesTheSameProduct) {
  const int64_t batch = 3, M = 5, N = 7, K = 4;
  const auto a = random_floats(size_t(batch * M * K), 1);  // [b][M][K]
  const auto b = random_floats(size_t(batch * K * N), 2);  // [b][K][N]
  const auto a_t = transpose(a, batch, M, K);              // [b][K][M]
  const auto b_t = transpose(b, batch, K, N);              // [b][N][K]
  const auto want = batch_matmul_accumulate(a.data(), b.data(), batch, M, N, K, false, false, 1);
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      const auto got = batch_matmul_accumulate((ta ? a_t : a).data(), (tb ? b_t : b).data(), batch,
                                               M, N, K, ta, tb, 3);
      EXPECT_EQ(got.sum, want.sum) << ta << tb;  // the same products in the same order
      EXPECT_EQ(got.magnitude, want.magnitude);
    }
  // And element (b=2, m=4, n=6) is the dot product it should be.
  double dot = 0;
  for (int64_t k = 0; k < K; ++k)
    dot += double(a[size_t((2 * M + 4) * K + k)]) * b[size_t((2 * K + k) * N + 6)];
  EXPECT_EQ(want.sum[size_t((2 * M + 4) * N + 6)], dot);
}

TEST(CpuReferenceOps, OneByOneConvolutionIsADenseLayer) {
  const Conv2dShape g = make_conv2d_shape(2, 3, 4, 5, 6, 1, 1);
  EXPECT_EQ(g.p, 3);
  EXPECT_EQ(g.q, 4);
  const auto x = random_floats(size_t(2 * 3 * 4 * 5), 3);
  const auto w = random_floats(size_t(6 * 5), 4);
  const auto conv = conv2d_accumulate(x.data(), w.data(), g, 2);
  const auto dense = dense_accumulate(x.data(), w.data(), 2 * 3 * 4, 6, 5, 1);
  EXPECT_EQ(conv.sum, dense.sum);
  EXPECT_EQ(conv.M, 24);
  EXPECT_EQ(conv.K, 5);
}

TEST(CpuReferenceOps, PaddingTapsContributeNothing) {
  // A 3 x 3 image of ones and a 3 x 3 filter of ones, padding 1: each output counts the taps
  // that land inside: 4 in a corner, 6 on an edge, 9 in the middle.
  const Conv2dShape g = make_conv2d_shape(1, 3, 3, 1, 1, 3, 3, 1, 1);
  const std::vector<float> x(9, 1.0f), w(9, 1.0f);
  const auto acc = conv2d_accumulate(x.data(), w.data(), g, 1);
  EXPECT_EQ(acc.sum, (std::vector<double>{4, 6, 4, 6, 9, 6, 4, 6, 4}));
  const float bias[] = {-5.0f};
  EXPECT_EQ(dense_apply_epilogue(acc, bias, Epilogue::kBiasRelu, 9),
            (std::vector<float>{0, 1, 0, 1, 4, 1, 0, 1, 0}));
}

TEST(CpuReferenceOps, StrideDilationAndChannelsAgainstADirectLoop) {
  for (const Conv2dShape g : {make_conv2d_shape(2, 9, 7, 3, 4, 3, 3, 2, 1, 2),
                              make_conv2d_shape(1, 11, 11, 2, 3, 7, 7, 2, 3, 1),
                              make_conv2d_shape(3, 5, 6, 4, 2, 3, 3, 1, 2, 2)}) {
    const auto x = random_floats(size_t(g.n * g.h * g.w * g.c), 5);
    const auto w = random_floats(size_t(g.k * g.r * g.s * g.c), 6);
    const auto acc = conv2d_accumulate(x.data(), w.data(), g, 3);
    for (int64_t n = 0; n < g.n; ++n)
      for (int64_t p = 0; p < g.p; ++p)
        for (int64_t q = 0; q < g.q; ++q)
          for (int64_t f = 0; f < g.k; ++f) {
            double sum = 0;  // in (r, s, c) order, as the reference accumulates
            for (int64_t r = 0; r < g.r; ++r)
              for (int64_t s = 0; s < g.s; ++s)
                for (int64_t c = 0; c < g.c; ++c) {
                  const int64_t h = p * g.stride_h - g.pad_h + r * g.dilation_h;
                  const int64_t ww = q * g.stride_w - g.pad_w + s * g.dilation_w;
                  const double in = h < 0 || h >= g.h || ww < 0 || ww >= g.w
                                        ? 0.0
                                        : x[size_t(((n * g.h + h) * g.w + ww) * g.c + c)];
                  sum += in * w[size_t(((f * g.r + r) * g.s + s) * g.c + c)];
                }
            const int64_t row = (n * g.p + p) * g.q + q;
            ASSERT_EQ(acc.sum[size_t(row * g.k + f)], sum) << n << " " << p << " " << q << " " << f;
          }
  }
}

TEST(CpuReferenceOps, ConvShapeFromAnOp) {
  OpSpec op;
  op.name = "c";
  op.kind = OpKind::kConv2d;
  op.dims = {{"N", Expr::parse("N")},   {"H", Expr::constant(56)},  {"W", Expr::constant(28)},
             {"C", Expr::constant(64)}, {"K", Expr::constant(128)}, {"R", Expr::constant(3)},
             {"S", Expr::constant(3)}};
  op.stride[0] = 2, op.stride[1] = 1;
  op.pad[0] = op.pad[1] = 1;
  op.vars = {"N"};
  const Conv2dShape g = conv2d_shape(op, {4});
  EXPECT_EQ(g.n, 4);
  EXPECT_EQ(g.p, 28);
  EXPECT_EQ(g.q, 28);
  EXPECT_EQ(g.stride_h, 2);
  EXPECT_EQ(g.stride_w, 1);
  const GemmShape gemm = g.gemm();
  const GemmShape want = gemm_shape(op, {4});
  EXPECT_EQ(gemm.M, want.M);
  EXPECT_EQ(gemm.N, want.N);
  EXPECT_EQ(gemm.K, want.K);
  EXPECT_THROW(make_conv2d_shape(1, 2, 2, 1, 1, 5, 5), std::invalid_argument);
}

}  // namespace
}  // namespace dietcode

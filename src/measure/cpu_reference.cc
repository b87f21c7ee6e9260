#include "measure/cpu_reference.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <thread>

namespace dietcode {

double gelu_tanh(double x) {
  const double kSqrt2OverPi = 0.7978845608028654;
  return 0.5 * x * (1.0 + std::tanh(kSqrt2OverPi * (x + 0.044715 * x * x * x)));
}

namespace {

bool has_bias(Epilogue e) {
  return e == Epilogue::kBias || e == Epilogue::kBiasRelu || e == Epilogue::kBiasGelu;
}

double activate(Epilogue e, double v) {
  switch (e) {
    case Epilogue::kRelu:
    case Epilogue::kBiasRelu:
      return v > 0 ? v : 0.0;
    case Epilogue::kGelu:
    case Epilogue::kBiasGelu:
      return gelu_tanh(v);
    default:
      return v;
  }
}

// The accumulation every op shares: row m of A (as K contiguous floats) against every row of
// its B ([N][K]), rows spread over host threads (thread t takes rows t, t + threads, ...).
// row_of(m, scratch, &w) returns row m of A, gathered into scratch (K floats) when it is not
// stored contiguously, and sets w to the B that row multiplies.
template <class RowOf>
DenseAccumulation accumulate_rows(int64_t M, int64_t N, int64_t K, int threads, RowOf row_of) {
  DenseAccumulation acc;
  acc.M = M, acc.N = N, acc.K = K;
  acc.sum.assign(size_t(M * N), 0.0);
  acc.magnitude.assign(size_t(M * N), 0.0);
  if (threads <= 0) threads = int(std::max(1u, std::thread::hardware_concurrency()));
  threads = int(std::max<int64_t>(1, std::min<int64_t>(threads, M)));
  auto work = [&](int t) {
    std::vector<float> scratch(static_cast<size_t>(K));
    for (int64_t m = t; m < M; m += threads) {
      const float* w = nullptr;
      const float* xr = row_of(m, scratch.data(), &w);
      for (int64_t n = 0; n < N; ++n) {
        const float* wr = w + n * K;
        double s = 0, a = 0;
        for (int64_t k = 0; k < K; ++k) {
          const double p = double(xr[k]) * double(wr[k]);
          s += p;
          a += std::fabs(p);
        }
        acc.sum[size_t(m * N + n)] = s;
        acc.magnitude[size_t(m * N + n)] = a;
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work, t);
  work(0);
  for (auto& th : pool) th.join();
  return acc;
}

}  // namespace

DenseAccumulation dense_accumulate(const float* x, const float* w, int64_t M, int64_t N, int64_t K,
                                   int threads) {
  return accumulate_rows(M, N, K, threads, [&](int64_t m, float*, const float** b) {
    *b = w;
    return x + m * K;
  });
}

DenseAccumulation batch_matmul_accumulate(const float* a, const float* b, int64_t batch, int64_t M,
                                          int64_t N, int64_t K, bool transpose_a, bool transpose_b,
                                          int threads) {
  // B as [batch][N][K], transposed once up front when it is stored [batch][K][N].
  std::vector<float> b_nk;
  if (!transpose_b) {
    b_nk.resize(size_t(batch * N * K));
    for (int64_t e = 0; e < batch; ++e)
      for (int64_t k = 0; k < K; ++k)
        for (int64_t n = 0; n < N; ++n) b_nk[size_t((e * N + n) * K + k)] = b[(e * K + k) * N + n];
  }
  const float* w = transpose_b ? b : b_nk.data();
  auto row_of = [&](int64_t row, float* scratch, const float** b_of_row) {
    const int64_t e = row / M, m = row % M;
    *b_of_row = w + e * N * K;
    if (!transpose_a) return a + (e * M + m) * K;
    for (int64_t k = 0; k < K; ++k) scratch[k] = a[(e * K + k) * M + m];
    return static_cast<const float*>(scratch);
  };
  return accumulate_rows(batch * M, N, K, threads, row_of);
}

DenseAccumulation conv2d_accumulate(const float* x, const float* wt, const Conv2dShape& g,
                                    int threads) {
  const int64_t K = g.r * g.s * g.c;
  // KRSC: filter f's row is (r, s, c) in the order of the GEMM's columns.
  auto row_of = [&](int64_t row, float* scratch, const float** b_of_row) {
    *b_of_row = wt;
    const int64_t n = row / (g.p * g.q), p = row / g.q % g.p, q = row % g.q;
    for (int64_t r = 0; r < g.r; ++r)
      for (int64_t s = 0; s < g.s; ++s) {
        const int64_t h = p * g.stride_h - g.pad_h + r * g.dilation_h;
        const int64_t w = q * g.stride_w - g.pad_w + s * g.dilation_w;
        const bool inside = h >= 0 && h < g.h && w >= 0 && w < g.w;
        for (int64_t c = 0; c < g.c; ++c)
          scratch[(r * g.s + s) * g.c + c] = inside ? x[((n * g.h + h) * g.w + w) * g.c + c] : 0.0f;
      }
    return static_cast<const float*>(scratch);
  };
  return accumulate_rows(g.n * g.p * g.q, g.k, K, threads, row_of);
}

std::vector<float> dense_apply_epilogue(const DenseAccumulation& acc, const float* bias,
                                        Epilogue epilogue, int64_t rows) {
  if (rows > acc.M) throw std::invalid_argument("dense_apply_epilogue: rows > M");
  if (has_bias(epilogue) && !bias) throw std::invalid_argument("dense_apply_epilogue: no bias");
  std::vector<float> y(size_t(rows * acc.N));
  for (int64_t m = 0; m < rows; ++m)
    for (int64_t n = 0; n < acc.N; ++n) {
      double v = acc.sum[size_t(m * acc.N + n)];
      if (has_bias(epilogue)) v += double(bias[n]);
      y[size_t(m * acc.N + n)] = float(activate(epilogue, v));
    }
  return y;
}

std::vector<float> dense_reference(const float* x, const float* w, const float* bias, int64_t M,
                                   int64_t N, int64_t K, Epilogue epilogue, int threads) {
  return dense_apply_epilogue(dense_accumulate(x, w, M, N, K, threads), bias, epilogue, M);
}

DenseComparison compare_dense(const float* got, const std::vector<float>& want,
                              const DenseAccumulation& acc, const float* bias, int64_t rows,
                              double rtol) {
  DenseComparison out;
  const double sqrt_k = std::sqrt(double(std::max<int64_t>(acc.K, 1)));
  for (int64_t m = 0; m < rows; ++m)
    for (int64_t n = 0; n < acc.N; ++n) {
      const size_t i = size_t(m * acc.N + n);
      // Tolerance from pre-activation sizes: relu and gelu have slopes of at most ~1.13,
      // which the margin in rtol absorbs.
      const double pre = std::fabs(acc.sum[i]) + (bias ? std::fabs(double(bias[n])) : 0.0);
      const double tol = rtol * (pre + acc.magnitude[i] / sqrt_k) + 1e-30;
      const double err = std::fabs(double(got[i]) - double(want[i]));
      const double ratio = err / tol;
      if (!(err <= tol)) {  // NaN fails too
        if (out.mismatches == 0) {
          out.first_row = m, out.first_col = n;
          out.got = got[i], out.want = want[i];
        }
        ++out.mismatches;
      }
      if (ratio > out.worst_ratio || std::isnan(ratio)) out.worst_ratio = ratio;
    }
  out.ok = out.mismatches == 0;
  if (!out.ok)
    out.message = fmt::format(
        "{} of {} outputs differ from the reference; first at [{}, {}]: got {}, want {}",
        out.mismatches, rows * acc.N, out.first_row, out.first_col, out.got, out.want);
  return out;
}

}  // namespace dietcode

// Test harness for the x86 kernel templates (templates/x86/ops_x86.h): builds a problem, runs a
// kernel through the C contract (DietcodeCpuKernelFn), and checks it against a double-precision
// reference written here (self-contained: no dependency on src/measure). Shared by the AVX2
// and the AVX-512 test binaries; it only needs x86-64-v3 itself, so a binary built with it runs
// (and skips) on a machine without AVX-512 even when its kernels were compiled for it.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "x86/dietcode_cpu.h"

namespace dc_x86_test {

// kDenseKN: dense with W stored [K][N] (weight_layout KN).
enum class Op { kDense, kBmmNN, kBmmTN, kBmmNT, kBmmTT, kConv2d, kDenseKN };
inline const char* op_name(Op op) {
  static const char* kNames[] = {"dense", "bmm_nn", "bmm_tn", "bmm_nt", "bmm_tt", "conv2d", "dense_kn"};
  return kNames[int(op)];
}
inline bool is_dense(Op op) { return op == Op::kDense || op == Op::kDenseKN; }
// 0 none, 1 bias, 2 relu, 3 bias+relu, 4 gelu, 5 bias+gelu (dc_x86::Epilogue values).
inline bool epi_bias(int e) { return e == 1 || e == 3 || e == 5; }

inline double gelu_ref(double x) {  // tanh form, written without cancellation
  const double u = 0.7978845608028654 * (x + 0.044715 * x * x * x);
  return x / (1.0 + std::exp(-2.0 * u));
}
inline double activate_ref(int e, double x) {
  if (e == 2 || e == 3) return x > 0 ? x : 0;
  if (e == 4 || e == 5) return gelu_ref(x);
  return x;
}

struct Problem {
  Op op = Op::kDense;
  long batch = 1, M = 1, N = 1, K = 1;
  long gap = 0;  // extra elements between batch elements (batch_matmul)
  // conv2d
  int n = 1, h = 1, w = 1, c = 1, k = 1, r = 1, s = 1, stride = 1, pad = 0, dil = 1;
  std::string str() const {
    std::ostringstream o;
    o << op_name(op);
    if (op == Op::kConv2d)
      o << " n" << n << " h" << h << " w" << w << " c" << c << " k" << k << " r" << r << " s" << s
        << " stride" << stride << " pad" << pad << " dil" << dil;
    else
      o << " batch" << batch << " M" << M << " N" << N << " K" << K << " gap" << gap;
    return o.str();
  }
};

inline Problem conv(int n, int h, int w, int c, int k, int r, int s, int stride, int pad, int dil) {
  Problem p;
  p.op = Op::kConv2d;
  p.n = n, p.h = h, p.w = w, p.c = c, p.k = k, p.r = r, p.s = s, p.stride = stride, p.pad = pad,
  p.dil = dil;
  const int P = (h + 2 * pad - dil * (r - 1) - 1) / stride + 1;
  const int Q = (w + 2 * pad - dil * (s - 1) - 1) / stride + 1;
  p.M = long(n) * P * Q, p.N = k, p.K = long(r) * s * c;
  return p;
}

inline Problem gemm(Op op, long M, long N, long K, long batch = 1, long gap = 0) {
  Problem p;
  p.op = op, p.M = M, p.N = N, p.K = K, p.batch = batch, p.gap = gap;
  return p;
}

// Operands, the reference and the guarded output of one problem.
class Case {
 public:
  static constexpr long kGuard = 67;  // NaN canaries on both sides of C (and in the gaps)

  explicit Case(const Problem& p, uint32_t seed = 1) : p_(p) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    args_ = DietcodeArgs{};
    long a_elems, b_elems;
    if (p.op == Op::kConv2d) {
      P_ = (p.h + 2 * p.pad - p.dil * (p.r - 1) - 1) / p.stride + 1;
      Q_ = (p.w + 2 * p.pad - p.dil * (p.s - 1) - 1) / p.stride + 1;
      a_elems = long(p.n) * p.h * p.w * p.c;
      b_elems = long(p.k) * p.r * p.s * p.c;
      sa_ = sb_ = sc_ = 0;
    } else {
      sa_ = p.M * p.K + p.gap, sb_ = p.K * p.N + p.gap, sc_ = p.M * p.N + p.gap;
      a_elems = sa_ * p.batch, b_elems = sb_ * p.batch;
    }
    a_.resize(size_t(std::max(1L, a_elems)));
    b_.resize(size_t(std::max(1L, b_elems)));
    bias_.resize(size_t(std::max(1L, p.N)));
    for (float& x : a_) x = u(rng);
    for (float& x : b_) x = u(rng);
    for (float& x : bias_) x = u(rng);
    c_elems_ = p.op == Op::kConv2d ? p.M * p.N : sc_ * p.batch;
    reference();
    args_.a = a_.data(), args_.b = b_.data(), args_.bias = bias_.data();
    args_.batch = p.batch, args_.m = p.M, args_.n = p.N, args_.k = p.K;
    args_.stride_a = sa_, args_.stride_b = sb_, args_.stride_c = sc_;
    if (p.op == Op::kConv2d) {
      args_.batch = 1;
      args_.conv_n = p.n, args_.conv_h = p.h, args_.conv_w = p.w, args_.conv_c = p.c;
      args_.conv_k = p.k, args_.conv_r = p.r, args_.conv_s = p.s, args_.conv_p = P_,
      args_.conv_q = Q_;
      args_.stride_h = args_.stride_w = p.stride;
      args_.pad_h = args_.pad_w = p.pad;
      args_.dilation_h = args_.dilation_w = p.dil;
    }
  }

  // The problem as a kernel gets it (its output pointer unset).
  const DietcodeArgs& args() const { return args_; }

  // Runs `fn` with epilogue `epi` into a fresh NaN-filled, guarded output and checks every
  // element and canary. Returns "" or a description of the first failure. c_line_offset in
  // [0, 16) places C that many floats past the start of a cache line (the kernels lay their
  // tiles by C's alignment); -1 leaves it where the allocation puts it.
  std::string run_and_check(DietcodeCpuKernelFn fn, int epi, const DietcodeCpuRuntime* rt,
                            int c_line_offset = -1) {
    std::vector<float> storage(size_t(c_elems_ + 2 * kGuard + 32));
    const float canary = canary_value();
    for (float& x : storage) x = canary;
    float* out = storage.data();
    if (c_line_offset >= 0) {
      const uintptr_t c_at = reinterpret_cast<uintptr_t>(out + kGuard);
      const uintptr_t line = (c_at + 63) & ~uintptr_t(63);
      out = reinterpret_cast<float*>(line) + c_line_offset - kGuard;
    }
    float* c = out + kGuard;
    DietcodeArgs args = args_;
    args.c = c;
    if (!epi_bias(epi)) args.bias = nullptr;
    const int rc = fn(&args, rt);
    std::ostringstream err;
    if (rc != 0) {
      err << p_.str() << " epi" << epi << ": kernel returned " << rc;
      return err.str();
    }
    for (long i = 0; i < kGuard; ++i)
      if (!is_canary(out[i]) || !is_canary(out[kGuard + c_elems_ + i])) {
        err << p_.str() << " epi" << epi << ": guard zone overwritten";
        return err.str();
      }
    const long batch = p_.op == Op::kConv2d ? 1 : p_.batch;
    const long sc = p_.op == Op::kConv2d ? 0 : sc_;
    for (long b = 0; b < batch; ++b) {
      for (long g = p_.M * p_.N; g < sc; ++g)
        if (!is_canary(c[b * sc + g])) {
          err << p_.str() << " epi" << epi << ": gap after batch " << b << " overwritten";
          return err.str();
        }
      for (long i = 0; i < p_.M; ++i)
        for (long j = 0; j < p_.N; ++j) {
          const size_t r = size_t((b * p_.M + i) * p_.N + j);
          const double pre = sum_[r] + (epi_bias(epi) ? double(bias_[size_t(j)]) : 0.0);
          const double want = activate_ref(epi, pre);
          const double got = c[b * sc + i * p_.N + j];
          const double tol =
              1e-4 * (std::fabs(want) + mag_[r] / std::sqrt(double(std::max(1L, p_.K)))) + 1e-30;
          if (!(std::fabs(got - want) <= tol)) {
            err << p_.str() << " epi" << epi << ": C[" << b << "][" << i << "][" << j
                << "] = " << got << ", want " << want << " (tol " << tol << ")";
            return err.str();
          }
        }
    }
    return "";
  }

 private:
  static float canary_value() {
    const uint32_t bits = 0x7fc0dead;  // a quiet NaN with a payload
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  static bool is_canary(float x) {
    uint32_t bits;
    std::memcpy(&bits, &x, 4);
    return bits == 0x7fc0dead;
  }

  float A(long b, long i, long k) const {
    switch (p_.op) {
      case Op::kDense: case Op::kDenseKN: case Op::kBmmNN: case Op::kBmmNT:
        return a_[size_t(b * sa_ + i * p_.K + k)];
      case Op::kBmmTN: case Op::kBmmTT: return a_[size_t(b * sa_ + k * p_.M + i)];
      case Op::kConv2d: {
        const long q = i % Q_, n = i / Q_ / P_, pp = (i / Q_) % P_;
        const long c = k % p_.c, s = (k / p_.c) % p_.s, r = k / p_.c / p_.s;
        const long h = pp * p_.stride - p_.pad + r * p_.dil, w = q * p_.stride - p_.pad + s * p_.dil;
        if (h < 0 || h >= p_.h || w < 0 || w >= p_.w) return 0.0f;
        return a_[size_t(((n * p_.h + h) * p_.w + w) * p_.c + c)];
      }
    }
    return 0;
  }
  float B(long b, long k, long j) const {
    switch (p_.op) {
      case Op::kDense: case Op::kBmmNT: case Op::kBmmTT: case Op::kConv2d:
        return b_[size_t(b * sb_ + j * p_.K + k)];
      case Op::kDenseKN: case Op::kBmmNN: case Op::kBmmTN: return b_[size_t(b * sb_ + k * p_.N + j)];
    }
    return 0;
  }
  void reference() {
    const long batch = p_.op == Op::kConv2d ? 1 : p_.batch;
    sum_.assign(size_t(batch * p_.M * p_.N), 0.0);
    mag_.assign(sum_.size(), 0.0);
    std::vector<double> arow(size_t(p_.K)), bcol(size_t(p_.K));
    for (long b = 0; b < batch; ++b)
      for (long j = 0; j < p_.N; ++j) {
        for (long k = 0; k < p_.K; ++k) bcol[size_t(k)] = B(b, k, j);
        for (long i = 0; i < p_.M; ++i) {
          double s = 0, m = 0;
          for (long k = 0; k < p_.K; ++k) {
            const double t = double(A(b, i, k)) * bcol[size_t(k)];
            s += t, m += std::fabs(t);
          }
          sum_[size_t((b * p_.M + i) * p_.N + j)] = s;
          mag_[size_t((b * p_.M + i) * p_.N + j)] = m;
        }
      }
  }

  Problem p_;
  long P_ = 0, Q_ = 0, sa_ = 0, sb_ = 0, sc_ = 0, c_elems_ = 0;
  std::vector<float> a_, b_, bias_;
  std::vector<double> sum_, mag_;
  DietcodeArgs args_;
};

// The tile sizes of a parameter set, to aim shapes at its edges.
struct Tiles {
  long MR, NR, KC, MC, NC;
};

// Shapes that hit 1, primes, one past every tile dimension, K not a multiple of KC, K = 1.
inline std::vector<Problem> gemm_shapes(Op op, const Tiles& t) {
  std::vector<Problem> v;
  const long batch = is_dense(op) ? 1 : 3, gap = is_dense(op) ? 0 : 5;
  v.push_back(gemm(op, 1, 1, 1, batch, gap));
  v.push_back(gemm(op, 7, 13, 97, batch, gap));
  v.push_back(gemm(op, 97, 7, 13, batch, gap));
  v.push_back(gemm(op, 13, 97, 1, batch, gap));
  v.push_back(gemm(op, t.MR + 1, t.NR + 1, t.KC + 1, batch, gap));
  v.push_back(gemm(op, t.MC + 1, 2 * t.NR + 3, 2 * t.KC + 3, batch, gap));
  if (is_dense(op)) v.push_back(gemm(op, 2 * t.MR + 1, t.NC + 1, 7, 1, 0));
  v.push_back(gemm(op, t.MR, t.NR, 0, batch, gap));  // K = 0: epilogue(bias) only
  return v;
}

// C at every float offset within a cache line, with rows a whole number of lines apart (N a
// multiple of 16), so that the kernels lay their column tiles from the first line-aligned column
// and compute the columns before it as a strip of their own (gemm_region). Wide enough for the
// strip (at least four tiles past it), and narrower, where there is none; K over two K blocks so
// that C is read back; both runtimes. get(op, epilogue) as Kernels<P>::get.
template <class Get>
void check_c_offsets_within_a_line(Get get, const Tiles& t, const DietcodeCpuRuntime* serial,
                                   const DietcodeCpuRuntime* pooled) {
  int failures = 0;
  // wide: room for a strip of up to 15 columns and then four tiles, rounded up to whole lines.
  const long wide_min = 6 * t.NR + 15, wide = (wide_min + 15) / 16 * 16, narrow = 2 * 16;
  for (Op op : {Op::kDense, Op::kBmmNN, Op::kBmmTT})
    for (long n : {wide, narrow}) {
      Case c(gemm(op, 2 * t.MR + 3, n, 2 * t.KC + 5, is_dense(op) ? 1 : 2, 0));
      for (int offset = 0; offset < 16; ++offset)
        for (const DietcodeCpuRuntime* rt : {serial, pooled}) {
          const int epi = offset % 2 ? 5 : 0;
          const std::string err = c.run_and_check(get(op, epi), epi, rt, offset);
          EXPECT_EQ(err, "") << "C " << offset << " floats into a cache line, threads "
                             << rt->threads;
          if (!err.empty() && ++failures > 5) return;
        }
    }
  Case conv_case(conv(2, 9, 9, 5, 112, 3, 3, 1, 1, 1));  // C's rows: 112 floats, 7 lines
  for (int offset = 0; offset < 16; ++offset) {
    const std::string err = conv_case.run_and_check(get(Op::kConv2d, 5), 5, pooled, offset);
    EXPECT_EQ(err, "") << "conv2d, C " << offset << " floats into a cache line";
  }
}

// Runs a form that reads B [N][K] in place (dense and batch_matmul NT only) from
// get(op, epilogue) on the shapes of gemm_shapes for its tiles in C's frame, plus K tails
// shorter than a vector, on both runtimes: dense with every epilogue, batch_matmul NT with none
// and bias+GELU.
template <class Get>
void check_b_in_place_form(const char* form, Get get, const Tiles& tiles,
                           const DietcodeCpuRuntime* serial, const DietcodeCpuRuntime* pooled) {
  int failures = 0;
  for (Op op : {Op::kDense, Op::kBmmNT}) {
    std::vector<Problem> shapes = gemm_shapes(op, tiles);
    const long batch = op == Op::kDense ? 1 : 3, gap = op == Op::kDense ? 0 : 5;
    shapes.push_back(gemm(op, tiles.MR + 2, tiles.NR + 1, 3, batch, gap));  // K below one vector
    shapes.push_back(gemm(op, 5, 7, 17, batch, gap));                      // a vector and a tail
    const std::vector<int> epis = op == Op::kDense ? std::vector<int>{0, 1, 2, 3, 4, 5}
                                                   : std::vector<int>{0, 5};
    for (const Problem& p : shapes) {
      Case c(p);
      for (int epi : epis)
        for (const DietcodeCpuRuntime* rt : {serial, pooled}) {
          const std::string err = c.run_and_check(get(op, epi), epi, rt);
          EXPECT_EQ(err, "") << form << ", threads " << rt->threads;
          if (!err.empty() && ++failures > 5) return;
        }
    }
  }
}

// The dot-product form (run_dot): its MR x NR tile is C's, blocked only along K.
template <class Get>
void check_dot_form(Get get, long mr, long nr, long kc, const DietcodeCpuRuntime* serial,
                    const DietcodeCpuRuntime* pooled) {
  check_b_in_place_form("dot form", get, Tiles{mr, nr, kc, 3 * mr, 4 * nr}, serial, pooled);
}

// The W-broadcast form (run_wbcast) computes C^T: its MR rows are C's columns, its NR columns
// (the vectors) C's rows, MC blocks C's columns and NC its rows.
template <class Get>
void check_wbcast_form(Get get, long mr, long nr, long kc, long mc, long nc,
                       const DietcodeCpuRuntime* serial, const DietcodeCpuRuntime* pooled) {
  check_b_in_place_form("W-broadcast form", get, Tiles{nr, mr, kc, nc, mc}, serial, pooled);
}

inline std::vector<Problem> conv_shapes() {
  return {
      conv(1, 7, 7, 3, 5, 3, 3, 1, 1, 1),   // 3x3 pad 1
      conv(2, 9, 8, 5, 17, 3, 3, 2, 1, 1),  // stride 2
      conv(1, 11, 10, 4, 9, 3, 3, 1, 2, 2), // dilation 2
      conv(2, 6, 5, 13, 19, 1, 1, 1, 0, 1), // 1x1
      conv(1, 9, 9, 7, 24, 1, 1, 2, 0, 1),  // 1x1 stride 2
      conv(1, 5, 13, 33, 7, 3, 2, 2, 1, 2), // everything at once, non-square filter
  };
}

}  // namespace dc_x86_test

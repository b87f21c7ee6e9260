// operands_x86.h: the operand accessors of the x86 BLIS core (gemm_x86.h): how A and B are
// read and packed into the micro-kernel's panels, for every layout the ops use (row-major and
// transposed matrices, conv2d's NHWC input as an implicit GEMM). Included by gemm_x86.h, after
// its ISA headers; include ops_x86.h, not this file.
#pragma once

#include <immintrin.h>

#include <algorithm>

namespace dc_x86 {

// ---------------------------------------------------------------------------------------------
// Operands. An A accessor packs an MR-row panel: rows [i0, i0+mr) (mr <= MR; rows mr..MR-1 are
// zero), reduction [k0, k0+kc), into dst[k*MR + r]. A B accessor packs an NR-column panel:
// columns [j0, j0+nr), into dst[k*NR + j]. kDirect: the micro-kernel may read A rows in place
// (PACK_A = 0), at row_ptr(i, k0) with row stride ld.

// 8x8 transpose of rows src[r*ld .. +8] into dst[c*dst_ld + r] (AVX).
inline void transpose8x8(const float* src, long ld, float* dst, long dst_ld) {
  __m256 r0 = _mm256_loadu_ps(src + 0 * ld), r1 = _mm256_loadu_ps(src + 1 * ld);
  __m256 r2 = _mm256_loadu_ps(src + 2 * ld), r3 = _mm256_loadu_ps(src + 3 * ld);
  __m256 r4 = _mm256_loadu_ps(src + 4 * ld), r5 = _mm256_loadu_ps(src + 5 * ld);
  __m256 r6 = _mm256_loadu_ps(src + 6 * ld), r7 = _mm256_loadu_ps(src + 7 * ld);
  __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
  __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
  __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
  __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
  __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  _mm256_storeu_ps(dst + 0 * dst_ld, _mm256_permute2f128_ps(s0, s4, 0x20));
  _mm256_storeu_ps(dst + 1 * dst_ld, _mm256_permute2f128_ps(s1, s5, 0x20));
  _mm256_storeu_ps(dst + 2 * dst_ld, _mm256_permute2f128_ps(s2, s6, 0x20));
  _mm256_storeu_ps(dst + 3 * dst_ld, _mm256_permute2f128_ps(s3, s7, 0x20));
  _mm256_storeu_ps(dst + 4 * dst_ld, _mm256_permute2f128_ps(s0, s4, 0x31));
  _mm256_storeu_ps(dst + 5 * dst_ld, _mm256_permute2f128_ps(s1, s5, 0x31));
  _mm256_storeu_ps(dst + 6 * dst_ld, _mm256_permute2f128_ps(s2, s6, 0x31));
  _mm256_storeu_ps(dst + 7 * dst_ld, _mm256_permute2f128_ps(s3, s7, 0x31));
}

// Rows of `src` (count rows, each k-contiguous from src + r*ld) into columns of a panel
// dst[k*DLD + r], k in [0, kc), for r < rows; columns rows..DLD-1 of the panel are zeroed.
template <int DLD>
inline void pack_k_contiguous(const float* src, long ld, int rows, long kc, float* dst) {
  int r = 0;
  for (; r + 8 <= rows; r += 8) {
    long k = 0;
    for (; k + 8 <= kc; k += 8) transpose8x8(src + r * ld + k, ld, dst + k * DLD + r, DLD);
    for (; k < kc; ++k)
      for (int rr = r; rr < r + 8; ++rr) dst[k * DLD + rr] = src[rr * ld + k];
  }
  if (r < DLD) {
    for (long k = 0; k < kc; ++k) {
      float* d = dst + k * DLD;
      for (int rr = r; rr < DLD; ++rr) d[rr] = rr < rows ? src[rr * ld + k] : 0.0f;
    }
  }
}

// Rows src + k*ld (contiguous along the panel's columns) into dst[k*DLD + j], j < cols, rest 0.
template <int DLD>
inline void pack_mn_contiguous(const float* src, long ld, int cols, long kc, float* dst) {
  for (long k = 0; k < kc; ++k) {
    const float* s = src + k * ld;
    float* d = dst + k * DLD;
    if (cols == DLD) {
      for (int j = 0; j < DLD; ++j) d[j] = s[j];
    } else {
      int j = 0;
      for (; j < cols; ++j) d[j] = s[j];
      for (; j < DLD; ++j) d[j] = 0.0f;
    }
  }
}

// A stored [M][K] (row i at p + i*ld, K-contiguous): dense X, batch_matmul A without transpose.
struct AMatrixMK {
  const float* p;
  long ld;
  static constexpr bool kDirect = true;
  const float* row_ptr(long i, long k0) const { return p + i * ld + k0; }
  template <int MR>
  void pack(long i0, int mr, long k0, long kc, float* dst) const {
    pack_k_contiguous<MR>(p + i0 * ld + k0, ld, mr, kc, dst);
  }
};

// A stored [K][M] (transpose_a): A(i,k) = p[k*ld + i].
struct AMatrixKM {
  const float* p;
  long ld;
  static constexpr bool kDirect = false;
  const float* row_ptr(long, long) const { return nullptr; }
  template <int MR>
  void pack(long i0, int mr, long k0, long kc, float* dst) const {
    pack_mn_contiguous<MR>(p + k0 * ld + i0, ld, mr, kc, dst);
  }
};

// B stored [N][K] (K-contiguous: dense W, batch_matmul B with transpose_b, conv2d KRSC weights).
struct BMatrixNK {
  const float* p;
  long ld;
  template <int NR>
  void pack(long j0, int nr, long k0, long kc, float* dst) const {
    pack_k_contiguous<NR>(p + j0 * ld + k0, ld, nr, kc, dst);
  }
};

// B stored [K][N] (batch_matmul B without transpose): B(k,j) = p[k*ld + j].
struct BMatrixKN {
  const float* p;
  long ld;
  template <int NR>
  void pack(long j0, int nr, long k0, long kc, float* dst) const {
    pack_mn_contiguous<NR>(p + k0 * ld + j0, ld, nr, kc, dst);
  }
};

// conv2d implicit GEMM A: row i = output pixel (n, p, q) = ((n*P + p)*Q + q), reduction index
// kk = (r*S + s)*C + c (the KRSC weight order). Packs straight from the NHWC input; taps in the
// padding are zeros.
//
// The MR rows of a panel share the reduction's sequence of (r, s, c) runs; only their pixels
// differ. So the runs are walked once, and each is copied for all MR rows k by k, from one
// source pointer per row (a row of zeros for a tap in the padding, or past the last row): the
// panel is written in order, MR floats at a time, instead of one float every MR.
inline constexpr long kConvZeroRun = 256;
alignas(64) inline constexpr float kConvZeros[kConvZeroRun] = {};

struct AConvNHWC {
  const float* p;  // the NHWC input
  int H, W, C, R, S, P, Q, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w;
  static constexpr bool kDirect = false;
  const float* row_ptr(long, long) const { return nullptr; }
  template <int MR>
  void pack(long i0, int mr, long k0, long kc, float* dst) const {
    const float* img[MR];  // each row's image; null past the last row
    long h0[MR], w0[MR];   // each row's top-left tap
    for (int r = 0; r < MR; ++r) {
      img[r] = nullptr;
      h0[r] = w0[r] = 0;
      if (r >= mr) continue;
      const long i = i0 + r;
      const long oq = i % Q, opq = i / Q, op = opq % P, on = opq / P;
      h0[r] = op * stride_h - pad_h;
      w0[r] = oq * stride_w - pad_w;
      img[r] = p + on * long(H) * W * C;
    }
    long c = k0 % C;
    const long rs = k0 / C;
    long fs = rs % S, fr = rs / S;
    for (long k = 0; k < kc;) {
      const long run = std::min(std::min<long>(C - c, kc - k), kConvZeroRun);
      const float* src[MR];
      for (int r = 0; r < MR; ++r) {
        const long h = h0[r] + fr * dil_h, w = w0[r] + fs * dil_w;
        src[r] = img[r] && h >= 0 && h < H && w >= 0 && w < W ? img[r] + (h * W + w) * C + c
                                                              : kConvZeros;
      }
      float* d = dst + k * MR;
      for (long t = 0; t < run; ++t, d += MR)
        for (int r = 0; r < MR; ++r) d[r] = src[r][t];
      k += run;
      c += run;
      if (c == C) {
        c = 0;
        if (++fs == S) fs = 0, ++fr;
      }
    }
  }
};

}  // namespace dc_x86

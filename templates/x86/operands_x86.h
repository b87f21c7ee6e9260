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
// (PACK_A = 0), at row_ptr(i, k0) with row stride ld. kRuns: with PACK_A = 0 it reads A in
// place through a table of runs instead (runs(): conv2d's input).

// The first N lanes of v to p[0..N) (N in 1..8), with whole and half vector stores only.
template <int N>
inline void store_first(float* p, __m256 v) {
  if constexpr (N == 8) {
    _mm256_storeu_ps(p, v);
  } else {
    __m128 part = _mm256_castps256_ps128(v);
    if constexpr (N >= 4) {
      _mm_storeu_ps(p, part);
      part = _mm256_extractf128_ps(v, 1);
      p += 4;
    }
    constexpr int kRest = N >= 4 ? N - 4 : N;
    if constexpr (kRest >= 2) _mm_storel_pi(reinterpret_cast<__m64*>(p), part);
    if constexpr (kRest == 3) _mm_store_ss(p + 2, _mm_movehl_ps(part, part));
    if constexpr (kRest == 1) _mm_store_ss(p, part);
  }
}

// p[0..N) into the first N lanes (N in 1..8), the rest zero; whole and half vector loads only.
template <int N>
inline __m256 load_first(const float* p) {
  if constexpr (N == 8) {
    return _mm256_loadu_ps(p);
  } else {
    constexpr int kRest = N >= 4 ? N - 4 : N;
    __m128 rest = _mm_setzero_ps();
    const float* q = N >= 4 ? p + 4 : p;
    if constexpr (kRest >= 2) rest = _mm_loadl_pi(rest, reinterpret_cast<const __m64*>(q));
    if constexpr (kRest == 3) rest = _mm_insert_ps(rest, _mm_load_ss(q + 2), 0x20);
    if constexpr (kRest == 1) rest = _mm_load_ss(q);
    if constexpr (N >= 4)
      return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(p)), rest, 1);
    else
      return _mm256_insertf128_ps(_mm256_setzero_ps(), rest, 0);
  }
}

// 8x8 transpose in registers: y[j] lane r = v[r] lane j.
inline void transpose8(const __m256 (&v)[8], __m256 (&y)[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(v[0], v[1]), t1 = _mm256_unpackhi_ps(v[0], v[1]);
  const __m256 t2 = _mm256_unpacklo_ps(v[2], v[3]), t3 = _mm256_unpackhi_ps(v[2], v[3]);
  const __m256 t4 = _mm256_unpacklo_ps(v[4], v[5]), t5 = _mm256_unpackhi_ps(v[4], v[5]);
  const __m256 t6 = _mm256_unpacklo_ps(v[6], v[7]), t7 = _mm256_unpackhi_ps(v[6], v[7]);
  const __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  y[0] = _mm256_permute2f128_ps(s0, s4, 0x20), y[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
  y[2] = _mm256_permute2f128_ps(s2, s6, 0x20), y[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
  y[4] = _mm256_permute2f128_ps(s0, s4, 0x31), y[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
  y[6] = _mm256_permute2f128_ps(s2, s6, 0x31), y[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

// Eight rows of eight k steps (v[r] = row r) transposed: k step j's first N values, one per
// row, to d + j*stride.
template <int N>
inline void transpose8_store(const __m256 (&v)[8], float* d, long stride) {
  __m256 y[8];
  transpose8(v, y);
  for (int j = 0; j < 8; ++j) store_first<N>(d + j * stride, y[j]);
}

// 8x8 transpose of rows src[r*ld .. +8] into dst[c*dst_ld + r] (AVX).
inline void transpose8x8(const float* src, long ld, float* dst, long dst_ld) {
  __m256 v[8];
  for (int r = 0; r < 8; ++r) v[r] = _mm256_loadu_ps(src + r * ld);
  transpose8_store<8>(v, dst, dst_ld);
}

// Rows of `src` (count rows, each k-contiguous from src + r*ld) into columns of a panel
// dst[k*DLD + r], k in [0, kc), for r < rows; columns rows..DLD-1 of the panel are zeroed.
// Whole groups of 8 rows go through 8x8 transposes, the rest one float at a time. (Sending a
// last group of fewer rows, a 6-row A panel, through a transpose as well measured within
// noise on BERT's shapes, and made g++ spill a vector register in the 14x8 AVX2 k loop that
// shares the function: RegisterTile's test.)
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
  static constexpr bool kRuns = false;
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
  static constexpr bool kRuns = false;
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

// B packed ahead of time (constant weights, prepack_b in gemm_x86.h): every NR-column panel of
// every KC block, zero-padded to whole panels, in the order gemm_region reads them. Block pc
// (a multiple of KC) starts at pc * npad, npad = N rounded up to NR, and holds its panels one
// after another, kc * NR floats each: the panel of columns [j0, j0+NR) is at
// p + pc * npad + j0 * kc. gemm_region reads it where it would have packed (no copy at all).
struct BPrepacked {
  const float* p;
  long npad;
  const float* block(long j0, long k0, long kc) const { return p + k0 * npad + j0 * kc; }
};
template <class BOp>
constexpr bool kIsPrepacked = false;
template <>
constexpr bool kIsPrepacked<BPrepacked> = true;

// Rows G..G+7 of an MR-row panel (those below MR), eight k steps: d[t*MR + G + r] = src[G+r][t]
// for t < 8, through one 8x8 transpose.
template <int MR, int G>
inline void interleave8(const float* const* src, float* d) {
  __m256 v[8];
  for (int r = 0; r < 8; ++r) v[r] = G + r < MR ? _mm256_loadu_ps(src[G + r]) : _mm256_setzero_ps();
  transpose8_store<(MR - G < 8 ? MR - G : 8)>(v, d + G, MR);
}

// MR source rows interleaved into a panel: d[t*MR + r] = src[r][t] for t < run. Eight k steps
// at a time go through 8x8 transposes (a panel of more than 8 rows takes two); the rest one
// float at a time.
template <int MR>
inline void interleave_rows(const float* const* src, long run, float* d) {
  long t = 0;
  if constexpr (MR >= 4 && MR <= 16) {
    for (; t + 8 <= run; t += 8) {
      const float* at[MR];
      for (int r = 0; r < MR; ++r) at[r] = src[r] + t;
      interleave8<MR, 0>(at, d + t * MR);
      if constexpr (MR > 8) interleave8<MR, 8>(at, d + t * MR);
    }
  }
  for (; t < run; ++t)
    for (int r = 0; r < MR; ++r) d[t * MR + r] = src[r][t];
}

// conv2d implicit GEMM A: row i = output pixel (n, p, q) = ((n*P + p)*Q + q), reduction index
// kk = (r*S + s)*C + c (the KRSC weight order). Read straight from the NHWC input; taps in the
// padding are zeros.
//
// The MR rows of a panel share the reduction's sequence of (r, s, c) runs; only their pixels
// differ. So the runs are walked once (for_each_run), each with one source pointer per row: a
// row of zeros for a tap in the padding, or past the last row. A run is one tap's channels, or,
// with no dilation along W, the rest of a tap row when every row has all of it inside the
// image: an NHWC image keeps a tap row's S pixels side by side, so conv1's 7 taps of 3 channels
// are one run of 21, not seven of 3. Two uses of the same walk:
//   pack   copies each run for all MR rows at once into the panel (interleave_rows);
//   runs   lists the runs for the direct form (PACK_A = 0), whose micro-kernel broadcasts from
//          the input in place: nothing is copied, which matters where few filters (N) share
//          each packed element (a 3x3 layer's A is its input nine times over).
inline constexpr long kConvZeroRun = 256;
alignas(64) inline constexpr float kConvZeros[kConvZeroRun] = {};

// One run of the reduction for an MR-row panel: row r's values are src[r][0..len). A table of
// runs ends with len == 0.
template <int MR>
struct ConvRun {
  const float* src[MR];
  long len;
};

struct AConvNHWC {
  const float* p;  // the NHWC input
  int H, W, C, R, S, P, Q, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w;
  static constexpr bool kDirect = false;
  static constexpr bool kRuns = true;
  const float* row_ptr(long, long) const { return nullptr; }

  // Calls f(src, len) for the runs of rows [i0, i0+mr) over reduction [k0, k0+kc), in order.
  template <int MR, class F>
  void for_each_run(long i0, int mr, long k0, long kc, F&& f) const {
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
      const float* src[MR];
      bool whole_tap_row = dil_w == 1;
      for (int r = 0; r < MR; ++r) {
        const long h = h0[r] + fr * dil_h, w = w0[r] + fs * dil_w;
        if (!img[r] || h < 0 || h >= H) {
          src[r] = kConvZeros;  // the whole tap row is padding (or no row)
          continue;
        }
        const bool inside = w >= 0 && w < W;
        src[r] = inside ? img[r] + (h * W + w) * C + c : kConvZeros;
        whole_tap_row = whole_tap_row && inside && w0[r] + S - 1 < W;
      }
      const long run = std::min(std::min(whole_tap_row ? (S - fs) * C - c : C - c, kc - k),
                                kConvZeroRun);
      f(static_cast<const float* const*>(src), run);
      k += run;
      for (c += run; c >= C;) {
        c -= C;
        if (++fs == S) fs = 0, ++fr;
      }
    }
  }

  template <int MR>
  void pack(long i0, int mr, long k0, long kc, float* dst) const {
    long k = 0;
    for_each_run<MR>(i0, mr, k0, kc, [&](const float* const* src, long len) {
      interleave_rows<MR>(src, len, dst + k * MR);
      k += len;
    });
  }

  // The most runs (without the terminator) a panel's K block of kc can take: every tap it
  // touches (at most kc / C + 2) splits into runs of at most kConvZeroRun channels.
  long max_runs(long kc) const { return (kc / C + 2) * ((C + kConvZeroRun - 1) / kConvZeroRun); }

  // The runs of rows [i0, i0+mr) over [k0, k0+kc) into out[], then a terminator (len 0);
  // out has room for max_runs(kc) + 1 entries.
  template <int MR>
  void runs(long i0, int mr, long k0, long kc, ConvRun<MR>* out) const {
    for_each_run<MR>(i0, mr, k0, kc, [&](const float* const* src, long len) {
      for (int r = 0; r < MR; ++r) out->src[r] = src[r];
      out->len = len;
      ++out;
    });
    out->len = 0;
  }
};

}  // namespace dc_x86

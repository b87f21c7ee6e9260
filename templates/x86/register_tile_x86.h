// register_tile_x86.h: the register tile of the x86 BLIS core (gemm_x86.h): the fused epilogue's
// activation on one vector, and the micro-kernel in its parts (accumulate, the guarded and the
// transposed stores, and the entries that join them). Everything is always_inline, so each
// entry compiles to one loop nest with the tile in registers. Included by gemm_x86.h after its
// Params and ISA traits; include ops_x86.h, not this file.
#pragma once

#include <immintrin.h>

#include <algorithm>

namespace dc_x86 {

// ---------------------------------------------------------------------------------------------
// Epilogue activation on one vector.

// GELU, tanh form: 0.5 x (1 + tanh(u)) = x / (1 + e^(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3).
// The right-hand form has no cancellation for negative x and needs one exponential and one
// division; e^(-2u) = 2^(x (k + 0.044715 k x^2)) with k = -2 sqrt(2/pi) log2(e), so the
// exponential is base 2 and its constant is folded into u's polynomial.
template <class I>
inline typename I::V gelu(typename I::V x) {
  using V = typename I::V;
  const V x2 = I::mul(x, x);
  const V t =
      I::fma(x2, I::set1(-0.1029432395800235f), I::set1(-2.302208198144325f));  // 0.044715 k, k
  return I::div(x, I::add(I::set1(1.0f), I::exp2(I::mul(x, t))));
}

template <class I, Epilogue E>
inline typename I::V activate(typename I::V x) {
  if constexpr (has_relu(E)) return I::max(x, I::zero());
  if constexpr (has_gelu(E)) return gelu<I>(x);
  return x;
}

// The store of a whole transposed tile after the first K block on 8-float vectors (AVX2), MR <=
// 8: C is read back, added to and written in the tile's own frame. Each vector column v of the
// tile goes through one 8x8 register transpose (rows MR..7 zero), and each C row is read and
// written MR floats at a time with whole and half vector moves. The general store below moves
// every element of C through a buffer twice, one scalar at a time, which made a K block of 384
// cost 6-8% more than one of 768. The first K block keeps the general store: it writes C
// without reading it, and there the register transpose measured no faster, and in one build
// ran LOOP_ORDER 1 kernels 30% slower, for reasons not found (docs/results/cpu/README.md, Z).
template <class I, class P, Epilogue E>
__attribute__((always_inline)) inline void store_transposed_8(__m256 (&acc)[P::MR][P::NR / 8],
                                                              float* c, long ldc, bool last,
                                                              const float* bias) {
  constexpr int MR = P::MR, NV = P::NR / 8;
  __m256 bias_t = _mm256_setzero_ps();  // bias[0..MR) along a transposed row
  if (has_bias(E) && last) bias_t = load_first<MR>(bias);
#pragma GCC unroll 8
  for (int v = 0; v < NV; ++v) {
    __m256 x[8], y[8];
#pragma GCC unroll 8
    for (int r = 0; r < 8; ++r) x[r] = r < MR ? acc[r][v] : _mm256_setzero_ps();
    transpose8(x, y);
    float* cv = c + long(v) * 8 * ldc;
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) {
      __m256 z = _mm256_add_ps(y[j], load_first<MR>(cv + j * ldc));
      if (last) {
        if constexpr (has_bias(E)) z = _mm256_add_ps(z, bias_t);
        z = activate<I, E>(z);
      }
      store_first<MR>(cv + j * ldc, z);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The store of a transposed tile (CT): acc[r][v] lane l is C(j = v*W + l, r) at c[j*ldc + r].
// The epilogue runs on the vectors (bias[r] is one value per tile row); the tile then reaches C
// through a buffer, one scalar move per element, which the FMAs outnumber KC / W to one.
template <class I, class P, Epilogue E>
__attribute__((always_inline)) inline void store_transposed(
    typename I::V (&acc)[P::MR][P::NR / I::W], float* c, long ldc, int m, int n, bool first,
    bool last, const float* bias) {
  using V = typename I::V;
  constexpr int MR = P::MR, NR = P::NR, W = I::W, NV = NR / W;
  if constexpr (W == 8 && MR >= 2 && MR <= 8) {
    if (!first && m == MR && n == NR) {
      store_transposed_8<I, P, E>(acc, c, ldc, last, bias);
      return;
    }
  }
  alignas(64) float t[MR][NR];
  if (!first)
    for (int r = 0; r < MR; ++r)
      for (int j = 0; j < NR; ++j) t[r][j] = r < m && j < n ? c[j * ldc + r] : 0.0f;
#pragma GCC unroll 32
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) {
      V x = acc[r][v];
      if (!first) x = I::add(x, I::load(&t[r][v * W]));
      if (last) {
        if constexpr (has_bias(E)) x = I::add(x, I::set1(r < m ? bias[r] : 0.0f));
        x = activate<I, E>(x);
      }
      I::storeu(&t[r][v * W], x);
    }
  }
  for (int j = 0; j < n; ++j) {
    float* cj = c + j * ldc;
    for (int r = 0; r < m; ++r) cj[r] = t[r][j];
  }
}

// ---------------------------------------------------------------------------------------------
// The micro-kernel, in three parts: accumulate (the k loop), store_tile (the guarded store with
// the fused epilogue), and the two entries that join them: micro_kernel (A packed, or rows of a
// matrix in place) and micro_kernel_runs (A in place through a table of runs: conv2d's direct
// form). All always_inline, so each entry compiles to one loop nest with the tile in registers.

// acc += A . B over kc k steps. A(r, k) is a[k*MR + r] (PACKED_A) or arow[r][k]; B(k, j) is
// b[k*PANEL_NR + j] (PANEL_NR = NR but for an edge tile), aligned to the vector size. ROW_PF:
// prefetch the A rows in place (the W-broadcast form streams W that way): PREFETCH k steps ahead in
// each row, or with PREFETCH_TILE the rows of the next tile, next_row[r] (at the same k), a whole
// tile ahead.
//
// Why a tile ahead. At M = 16 every element of W feeds two vector FMAs, so W streams from
// DRAM about as fast as the FMAs consume it, and a distance of 16-64 k steps (tens of
// nanoseconds of FMAs) is shorter than DRAM's latency; each tile's first lines then wait.
// The next tile's rows, fetched while this tile computes, are a microsecond ahead.
template <class I, class P, bool PACKED_A, bool ROW_PF>
__attribute__((always_inline)) inline void accumulate(typename I::V (&acc)[P::MR][P::NR / I::W],
                                                      long kc, const float* __restrict a,
                                                      const float* const* arow,
                                                      const float* __restrict b,
                                                      const float* const* next_row = nullptr) {
  using V = typename I::V;
  constexpr int MR = P::MR, NR = P::NR, W = I::W, NV = NR / W, U = P::UNROLL, PF = P::PREFETCH;
  constexpr int LDB = P::PANEL_NR;  // b's k-step stride: NR, or more for an edge tile
  // A tile of fewer than 8 accumulators (an edge tile one vector wide, 4 x 8) cannot keep two
  // FMA pipes of 4 cycles' latency busy on one chain per accumulator: odd k steps then add into
  // a second set, summed into the first at the end, where the registers allow.
  constexpr bool kTwoSets = MR * NV < 8 && 2 * MR * NV + NV + 1 <= I::kRegs && U % 2 == 0;
  // A tile that fills the register file may take a B vector from memory (Avx2::fma_acc).
  constexpr bool kFull = MR * NV + NV + 1 >= I::kRegs;
  V acc2[kTwoSets ? MR : 1][kTwoSets ? NV : 1];
  if constexpr (kTwoSets)
#pragma GCC unroll 32
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) acc2[r][v] = I::zero();
  long k = 0;
  for (; k + U <= kc; k += U) {
#pragma GCC unroll 16
    for (int u = 0; u < U; ++u) {
      const float* bk = b + (k + u) * LDB;
      if constexpr (PF > 0) {
        _mm_prefetch(reinterpret_cast<const char*>(bk + PF * LDB), _MM_HINT_T0);
        if constexpr (PACKED_A) {
          if ((u * MR * 4) % 64 < MR * 4)  // about one A prefetch per cache line
            _mm_prefetch(reinterpret_cast<const char*>(a + (k + u + PF) * MR), _MM_HINT_T0);
        } else if constexpr (ROW_PF && P::PREFETCH_TILE) {
          // One line of each of the next tile's rows per 16 k: the next tile's K block whole.
          if (u == 0 && ((k & 15) < U))
#pragma GCC unroll 32
            for (int r = 0; r < MR; ++r)
              _mm_prefetch(reinterpret_cast<const char*>(next_row[r] + k), _MM_HINT_T0);
        } else if constexpr (ROW_PF) {
          // One prefetch per row per 16 k (a cache line), PF * 4 floats ahead.
          if (u == 0 && ((k & 15) < U))
#pragma GCC unroll 32
            for (int r = 0; r < MR; ++r)
              _mm_prefetch(reinterpret_cast<const char*>(arow[r] + k + PF * 4), _MM_HINT_T0);
        }
      }
      V bv[NV];
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) bv[v] = I::load(bk + v * W);
#pragma GCC unroll 32
      for (int r = 0; r < MR; ++r) {
        const V av = PACKED_A ? I::broadcast(a + (k + u) * MR + r) : I::broadcast(arow[r] + k + u);
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) {
          if constexpr (kTwoSets) {
            if (u & 1)
              I::template fma_acc<kFull>(acc2[r][v], av, bv[v]);
            else
              I::template fma_acc<kFull>(acc[r][v], av, bv[v]);
          } else {
            I::template fma_acc<kFull>(acc[r][v], av, bv[v]);
          }
        }
      }
    }
  }
  for (; k < kc; ++k) {
    const float* bk = b + k * LDB;
    V bv[NV];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) bv[v] = I::load(bk + v * W);
#pragma GCC unroll 32
    for (int r = 0; r < MR; ++r) {
      const V av = PACKED_A ? I::broadcast(a + k * MR + r) : I::broadcast(arow[r] + k);
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) I::template fma_acc<kFull>(acc[r][v], av, bv[v]);
    }
  }
  if constexpr (kTwoSets)
#pragma GCC unroll 32
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) acc[r][v] = I::add(acc[r][v], acc2[r][v]);
}

template <class I, class P>
__attribute__((always_inline)) inline void zero_tile(typename I::V (&acc)[P::MR][P::NR / I::W]) {
#pragma GCC unroll 32
  for (int r = 0; r < P::MR; ++r)
#pragma GCC unroll 8
    for (int v = 0; v < P::NR / I::W; ++v) acc[r][v] = I::zero();
}

// Software prefetch of the C tile's rows, which the store reads back (all but the first K block)
// or writes: every cache line of each row's NR floats, which are two lines for a 16-float row
// that does not start on one (a C from malloc) and two or three for NR = 24 or 32.
template <class P>
__attribute__((always_inline)) inline void prefetch_c(const float* c, long ldc, int m) {
  if constexpr (P::PREFETCH > 0) {
#pragma GCC unroll 32
    for (int r = 0; r < P::MR; ++r)
      if (r < m) {
        const uintptr_t row = reinterpret_cast<uintptr_t>(c + r * ldc);
        const uintptr_t last = (row + P::NR * sizeof(float) - 1) & ~uintptr_t(63);
        for (uintptr_t line = row & ~uintptr_t(63); line <= last; line += 64)
          _mm_prefetch(reinterpret_cast<const char*>(line), _MM_HINT_T0);
      }
  }
}

// C[0:m, 0:n] = acc (first) or += acc, then the epilogue (last); bias points at column 0.
// Fully unrolled so the accumulators stay in registers (GCC spills them all otherwise, see
// DESIGN.md).
template <class I, class P, Epilogue E>
__attribute__((always_inline)) inline void store_tile(typename I::V (&acc)[P::MR][P::NR / I::W],
                                                      float* c, long ldc, int m, int n, bool first,
                                                      bool last, const float* bias) {
  using V = typename I::V;
  constexpr int MR = P::MR, NR = P::NR, W = I::W, NV = NR / W;
  V bias_v[NV];
#pragma GCC unroll 8
  for (int v = 0; v < NV; ++v) bias_v[v] = I::zero();
  if constexpr (has_bias(E)) {
    if (last) {
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) {
        const int cols = n - v * W;
        bias_v[v] = cols >= W  ? I::loadu(bias + v * W)
                    : cols > 0 ? I::load_partial(bias + v * W, cols)
                               : I::zero();
      }
    }
  }
#pragma GCC unroll 32
  for (int r = 0; r < MR; ++r) {
    if (r < m) {
      float* cr = c + r * ldc;
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) {
        const int cols = n - v * W;
        V x = acc[r][v];
        if (cols >= W) {
          if (!first) x = I::add(x, I::loadu(cr + v * W));
          if (last) {
            if constexpr (has_bias(E)) x = I::add(x, bias_v[v]);
            x = activate<I, E>(x);
          }
          I::storeu(cr + v * W, x);
        } else if (cols > 0) {
          if (!first) x = I::add(x, I::load_partial(cr + v * W, cols));
          if (last) {
            if constexpr (has_bias(E)) x = I::add(x, bias_v[v]);
            x = activate<I, E>(x);
          }
          I::store_partial(cr + v * W, x, cols);
        }
      }
    }
  }
}

// The MR row pointers of a tile of `rows` rows of a matrix read in place, the last row repeated
// past them (their results are dropped; a prefetch of them costs nothing).
template <int MR>
__attribute__((always_inline)) inline void tile_rows(const float* a, long lda, int rows,
                                                     const float* (&out)[MR]) {
#pragma GCC unroll 32
  for (int r = 0; r < MR; ++r) out[r] = a + long(r < rows ? r : rows - 1) * lda;
}

// C[0:m, 0:n] (+)= A panel . B panel over kc, m <= MR, n <= NR.
//   a        PACK_A: packed panel, A(r,k) = a[k*MR + r]; else row-major, A(r,k) = a[r*lda + k]
//            (rows r >= m are clamped to m-1 and their results dropped).
//   b        packed panel, B(k,j) = b[k*P::PANEL_NR + j], aligned to the vector size.
//   first    overwrite C (else add to it); last: apply the epilogue (bias points at column 0).
//   CT       C is stored transposed (the W-broadcast form, wbcast_x86.h): tile element (r, j) is
//            c[j*ldc + r], and bias[r] belongs to tile row r.
//   next_a, next_m   the next tile's rows of A in place and how many there are (PREFETCH_TILE:
//            prefetched while this tile computes; next_m = 0 when there is no next tile).
template <class I, class P, bool PACKED_A, Epilogue E, bool CT = false>
__attribute__((always_inline)) inline void micro_kernel(long kc, const float* __restrict a,
                                                        long lda, const float* __restrict b,
                                                        float* c, long ldc, int m, int n,
                                                        bool first, bool last, const float* bias,
                                                        const float* next_a = nullptr,
                                                        int next_m = 0) {
  using V = typename I::V;
  constexpr int MR = P::MR;
  constexpr bool kNextRows = !PACKED_A && CT && P::PREFETCH > 0 && P::PREFETCH_TILE;
  V acc[MR][P::NR / I::W];
  zero_tile<I, P>(acc);
  const float* arow[PACKED_A ? 1 : MR];
  if constexpr (!PACKED_A) tile_rows(a, lda, m, arow);
  // Without a next tile, this tile's own rows again: already in L1, the prefetches cost a slot.
  const float* next_row[kNextRows ? MR : 1];
  if constexpr (kNextRows) tile_rows(next_m > 0 ? next_a : a, lda, next_m > 0 ? next_m : m, next_row);
  if constexpr (!CT) prefetch_c<P>(c, ldc, m);
  accumulate<I, P, PACKED_A, CT>(acc, kc, a, arow, b, next_row);
  if constexpr (CT)
    store_transposed<I, P, E>(acc, c, ldc, m, n, first, last, bias);
  else
    store_tile<I, P, E>(acc, c, ldc, m, n, first, last, bias);
}

// The same over a table of runs of A read in place (conv2d's direct form, AConvNHWC::runs): run
// by run, the tile accumulates row r's src[r][0..len) against the next len rows of the B panel.
template <class I, class P, Epilogue E, class Run>
__attribute__((always_inline)) inline void micro_kernel_runs(const Run* runs,
                                                             const float* __restrict b, float* c,
                                                             long ldc, int m, int n, bool first,
                                                             bool last, const float* bias) {
  typename I::V acc[P::MR][P::NR / I::W];
  zero_tile<I, P>(acc);
  prefetch_c<P>(c, ldc, m);
  for (; runs->len > 0; b += runs->len * P::PANEL_NR, ++runs)
    accumulate<I, P, false, false>(acc, runs->len, nullptr, runs->src, b);
  store_tile<I, P, E>(acc, c, ldc, m, n, first, last, bias);
}

}  // namespace dc_x86

// Avx2: the AVX2+FMA vector traits (__m256, 8 floats, 16 ymm registers) the shared micro-kernel
// of gemm_x86.h is written against. Needs -mavx2 -mfma (-march=x86-64-v3 or later).
//
// Every operation the micro-kernel, the packing and the epilogue use is a static member here,
// so the AVX-512 twin (microkernel_avx512.h) is the same list over __m512. Partial loads and
// stores take a count n in [0, W] of leading lanes; lanes past n are neither read nor written
// (maskload/maskstore), which is what makes edge tiles safe next to guard zones.
#pragma once

#include <immintrin.h>

#include <cstdint>

#if !defined(__AVX2__) || !defined(__FMA__)
#error "microkernel_avx2.h needs -mavx2 -mfma (e.g. -march=x86-64-v3)"
#endif

namespace dc_x86 {

struct Avx2 {
  using V = __m256;
  static constexpr int W = 8;       // floats per vector
  static constexpr int kRegs = 16;  // architectural vector registers (the MR/NR budget)
  static constexpr const char* kName = "avx2";

  static inline V zero() { return _mm256_setzero_ps(); }
  static inline V set1(float x) { return _mm256_set1_ps(x); }
  static inline V load(const float* p) { return _mm256_load_ps(p); }  // 32-byte aligned
  static inline V loadu(const float* p) { return _mm256_loadu_ps(p); }
  static inline void storeu(float* p, V v) { _mm256_storeu_ps(p, v); }
  static inline V broadcast(const float* p) { return _mm256_broadcast_ss(p); }
  static inline V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  // acc += a * b in place (vfmadd231ps). Inline asm because GCC 12, free to pick the 132/213
  // forms, lets accumulators wander between registers in the unrolled k loop and spills some;
  // a tied operand keeps each accumulator in one register for the whole loop.
  // The asm works on a local copy: tied straight to `acc`, an element of the caller's acc[][]
  // array, the operand is a may-alias memory reference that stops GCC from turning the array
  // into registers, and at -O3 whole register tiles then live on the stack (a load and a store
  // per accumulator per unrolled k step; ~25% slower). tests/x86/register_tile_test.cc checks.
  //
  // B_FROM_MEMORY lets b be a memory operand too. A tile that fills the register file (4 x 24:
  // 12 accumulators, 3 B vectors and the broadcast) otherwise keeps an accumulator on the stack
  // when GCC loads the next k step's B early; folding a load or two into the FMAs avoids that
  // (BLIS 4 x 24 ran 2.5-4% faster). Only for such tiles: a 2 x 32 tile given the choice folds
  // every B load into both rows' FMAs and runs 17-19% slower on the extra loads
  // (docs/results/cpu/README.md, AH).
  template <bool B_FROM_MEMORY = false>
  static inline void fma_acc(V& acc, V a, V b) {
    V t = acc;
    if constexpr (B_FROM_MEMORY)
      __asm__("vfmadd231ps %[b], %[a], %[acc]" : [acc] "+x"(t) : [a] "x"(a), [b] "xm"(b));
    else
      __asm__("vfmadd231ps %[b], %[a], %[acc]" : [acc] "+x"(t) : [a] "x"(a), [b] "x"(b));
    acc = t;
  }
  static inline V add(V a, V b) { return _mm256_add_ps(a, b); }
  // The sum of the lanes: the two halves added, then pairs within the 128-bit half.
  static inline float hsum(V v) {
    __m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    x = _mm_add_ps(x, _mm_movehl_ps(x, x));
    x = _mm_add_ss(x, _mm_movehdup_ps(x));
    return _mm_cvtss_f32(x);
  }
  static inline V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static inline V div(V a, V b) { return _mm256_div_ps(a, b); }
  static inline V max(V a, V b) { return _mm256_max_ps(a, b); }
  static inline V min(V a, V b) { return _mm256_min_ps(a, b); }

  static inline __m256i mask(int n) {
    alignas(32) static const int32_t kTable[16] = {-1, -1, -1, -1, -1, -1, -1, -1,
                                                   0,  0,  0,  0,  0,  0,  0,  0};
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kTable + 8 - n));
  }
  static inline V load_partial(const float* p, int n) { return _mm256_maskload_ps(p, mask(n)); }
  static inline void store_partial(float* p, V v, int n) { _mm256_maskstore_ps(p, mask(n), v); }

  // 2^t: t = n + f with n = round(t) and f in [-1/2, 1/2], 2^f by a degree-6 polynomial, 2^n
  // added to the exponent's bits. Within 2e-7 relative on [-125, 126] (1.8e-7 measured),
  // clamped there (enough for gemm_x86.h's GELU). A base-2 exponential needs no Cody-Waite
  // reduction and no multiply by 2^n: about 40% fewer cycles than e^x the Cephes way (Zen 5: 2.1
  // against 3.3 ns a vector).
  static inline V exp2(V t) {
    t = _mm256_min_ps(t, _mm256_set1_ps(126.0f));
    t = _mm256_max_ps(t, _mm256_set1_ps(-125.0f));
    const V n = _mm256_round_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const V f = _mm256_sub_ps(t, n);
    V y = _mm256_set1_ps(1.5353362e-4f);
    y = _mm256_fmadd_ps(y, f, _mm256_set1_ps(1.3398874e-3f));
    y = _mm256_fmadd_ps(y, f, _mm256_set1_ps(9.6181291e-3f));
    y = _mm256_fmadd_ps(y, f, _mm256_set1_ps(5.5504109e-2f));
    y = _mm256_fmadd_ps(y, f, _mm256_set1_ps(2.4022651e-1f));
    y = _mm256_fmadd_ps(y, f, _mm256_set1_ps(6.9314718e-1f));
    y = _mm256_fmadd_ps(y, f, _mm256_set1_ps(1.0f));
    const __m256i e = _mm256_slli_epi32(_mm256_cvtps_epi32(n), 23);
    return _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(y), e));
  }
};

}  // namespace dc_x86

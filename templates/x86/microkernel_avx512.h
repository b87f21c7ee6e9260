// Avx512: the AVX-512F vector traits (__m512, 16 floats, 32 zmm registers), the same list of
// operations as Avx2 (microkernel_avx2.h) so the shared micro-kernel of gemm_x86.h compiles for
// either. Needs -mavx512f (-march=x86-64-v4 or later), or `#define DC_X86_ENABLE_AVX512` and
// `#pragma GCC target("avx512f")` around the include (see tests/x86/x86_kernels_avx512_test.cc). Differences from Avx2: W = 16 (NR must
// be a multiple of 16), a budget of 32 registers, and edge lanes handled by __mmask16 instead
// of a mask vector.
#pragma once

#include <immintrin.h>

#if !defined(__AVX512F__) && !defined(DC_X86_ENABLE_AVX512)
#error "microkernel_avx512.h needs -mavx512f (e.g. -march=x86-64-v4), or DC_X86_ENABLE_AVX512 under a target pragma"
#endif

namespace dc_x86 {

struct Avx512 {
  using V = __m512;
  static constexpr int W = 16;
  static constexpr int kRegs = 32;
  static constexpr const char* kName = "avx512";

  static inline V zero() { return _mm512_setzero_ps(); }
  static inline V set1(float x) { return _mm512_set1_ps(x); }
  static inline V load(const float* p) { return _mm512_load_ps(p); }  // 64-byte aligned
  static inline V loadu(const float* p) { return _mm512_loadu_ps(p); }
  static inline void storeu(float* p, V v) { _mm512_storeu_ps(p, v); }
  static inline V broadcast(const float* p) { return _mm512_set1_ps(*p); }
  static inline V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  // acc += a * b in place (vfmadd231ps); see Avx2::fma_acc for why this is inline asm
  // on a local copy, and for B_FROM_MEMORY.
  template <bool B_FROM_MEMORY = false>
  static inline void fma_acc(V& acc, V a, V b) {
    V t = acc;
    if constexpr (B_FROM_MEMORY)
      __asm__("vfmadd231ps %[b], %[a], %[acc]" : [acc] "+v"(t) : [a] "v"(a), [b] "vm"(b));
    else
      __asm__("vfmadd231ps %[b], %[a], %[acc]" : [acc] "+v"(t) : [a] "v"(a), [b] "v"(b));
    acc = t;
  }
  static inline V add(V a, V b) { return _mm512_add_ps(a, b); }
  static inline float hsum(V v) { return _mm512_reduce_add_ps(v); }  // the sum of the lanes
  static inline V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static inline V div(V a, V b) { return _mm512_div_ps(a, b); }
  static inline V max(V a, V b) { return _mm512_max_ps(a, b); }
  static inline V min(V a, V b) { return _mm512_min_ps(a, b); }

  static inline __mmask16 mask(int n) { return __mmask16((1u << n) - 1u); }
  static inline V load_partial(const float* p, int n) { return _mm512_maskz_loadu_ps(mask(n), p); }
  static inline void store_partial(float* p, V v, int n) { _mm512_mask_storeu_ps(p, mask(n), v); }

  // 2^t: the same polynomial and clamps as Avx2::exp2; scalef applies 2^n in one instruction.
  static inline V exp2(V t) {
    t = _mm512_min_ps(t, _mm512_set1_ps(126.0f));
    t = _mm512_max_ps(t, _mm512_set1_ps(-125.0f));
    const V n = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const V f = _mm512_sub_ps(t, n);
    V y = _mm512_set1_ps(1.5353362e-4f);
    y = _mm512_fmadd_ps(y, f, _mm512_set1_ps(1.3398874e-3f));
    y = _mm512_fmadd_ps(y, f, _mm512_set1_ps(9.6181291e-3f));
    y = _mm512_fmadd_ps(y, f, _mm512_set1_ps(5.5504109e-2f));
    y = _mm512_fmadd_ps(y, f, _mm512_set1_ps(2.4022651e-1f));
    y = _mm512_fmadd_ps(y, f, _mm512_set1_ps(6.9314718e-1f));
    y = _mm512_fmadd_ps(y, f, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(y, n);
  }
};

}  // namespace dc_x86

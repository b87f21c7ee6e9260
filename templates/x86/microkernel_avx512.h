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
  // on a local copy.
  static inline void fma_acc(V& acc, V a, V b) {
    V t = acc;
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

  // e^x: the same Cephes polynomial and clamps as Avx2::exp.
  static inline V exp(V x) {
    x = _mm512_min_ps(x, _mm512_set1_ps(88.0f));
    x = _mm512_max_ps(x, _mm512_set1_ps(-87.3f));
    const V fx = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    x = _mm512_fnmadd_ps(fx, _mm512_set1_ps(0.693359375f), x);
    x = _mm512_fnmadd_ps(fx, _mm512_set1_ps(-2.12194440e-4f), x);
    V y = _mm512_set1_ps(1.9875691500E-4f);
    y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(1.3981999507E-3f));
    y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(8.3334519073E-3f));
    y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(4.1665795894E-2f));
    y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(1.6666665459E-1f));
    y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(5.0000001201E-1f));
    y = _mm512_fmadd_ps(y, _mm512_mul_ps(x, x), _mm512_add_ps(x, _mm512_set1_ps(1.0f)));
    const __m512i n = _mm512_slli_epi32(
        _mm512_add_epi32(_mm512_cvtps_epi32(fx), _mm512_set1_epi32(127)), 23);
    return _mm512_mul_ps(y, _mm512_castsi512_ps(n));
  }
};

}  // namespace dc_x86

#include "bench/cpu_epilogue.h"

#include <cstring>

// The math runs on 8 floats at a time through GCC's vector extensions, so that it is vectorised
// whatever the optimisation level (GCC 12's -O2 cost model leaves these loops scalar, and libm's
// expf/tanhf are scalar calls), and the same templates run on one float for the tails.
// The helpers are always inlined into the clones of epilogue_rows, so they take on each clone's
// ISA and never pass a 32-byte vector by value across a call: GCC's -Wpsabi note about that ABI
// does not apply, and it is reported at the end of the file, so it is off for all of it.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace dietcode {

namespace {

#define DIETCODE_INLINE inline __attribute__((always_inline))
using V8f = float __attribute__((vector_size(32)));
using V8i = int32_t __attribute__((vector_size(32)));

DIETCODE_INLINE int32_t to_int(float x) { return int32_t(x); }
DIETCODE_INLINE V8i to_int(V8f x) { return __builtin_convertvector(x, V8i); }
DIETCODE_INLINE float bits_to_float(int32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}
DIETCODE_INLINE V8f bits_to_float(V8i bits) { return reinterpret_cast<V8f>(bits); }
DIETCODE_INLINE float max0(float x) { return x > 0.0f ? x : 0.0f; }
DIETCODE_INLINE V8f max0(V8f x) { return x > 0.0f ? x : V8f{}; }

// exp(x): 2^n p(r) with r = x - n ln2 in [-ln2/2, ln2/2] and a degree-6 Taylor polynomial,
// relative error ~2e-7; x clamped to [-87, 88] (no denormals, no infinity).
template <typename F>
DIETCODE_INLINE F exp_for_epilogue(F x) {
  const F lo = F{} + -87.0f, hi = F{} + 88.0f;
  x = x < lo ? lo : x;
  x = x > hi ? hi : x;
  constexpr float kLog2e = 1.44269504088896341f, kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f,
                  kRound = 12582912.0f;        // 1.5 x 2^23
  const F n = (x * kLog2e + kRound) - kRound;  // round to nearest
  const F r = (x - n * kLn2Hi) - n * kLn2Lo;
  F p = F{} + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  return p * bits_to_float((to_int(n) + 127) << 23);
}

// 0.5 x (1 + tanh(u)) with tanh(u) = 1 - 2 / (exp(2u) + 1), u = sqrt(2/pi) (x + 0.044715 x^3):
// the reference's GELU, to ~1e-7 relative.
template <typename F>
DIETCODE_INLINE F gelu_tanh_for_epilogue(F x) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  const F u = kSqrt2OverPi * (x + 0.044715f * x * x * x);
  return 0.5f * x * (2.0f - 2.0f / (exp_for_epilogue(2.0f * u) + 1.0f));
}

enum Activation { kNoActivation = 0, kReluActivation = 1, kGeluActivation = 2 };

__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) void epilogue_rows(
    float* y, const float* bias, int64_t begin, int64_t end, int64_t n, bool add_bias,
    int activation) {
  for (int64_t r = begin; r < end; ++r) {
    float* row = y + r * n;
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
      V8f v;
      std::memcpy(&v, row + j, sizeof(v));
      if (add_bias) {
        V8f b;
        std::memcpy(&b, bias + j, sizeof(b));
        v += b;
      }
      if (activation == kReluActivation) v = max0(v);
      if (activation == kGeluActivation) v = gelu_tanh_for_epilogue(v);
      std::memcpy(row + j, &v, sizeof(v));
    }
    for (; j < n; ++j) {
      float v = row[j] + (add_bias ? bias[j] : 0.0f);
      if (activation == kReluActivation) v = max0(v);
      if (activation == kGeluActivation) v = gelu_tanh_for_epilogue(v);
      row[j] = v;
    }
  }
}
#undef DIETCODE_INLINE

}  // namespace

void cpu_epilogue_rows(float* y, const float* bias, int64_t begin, int64_t end, int64_t n,
                       Epilogue epilogue) {
  int activation = kNoActivation;
  if (epilogue == Epilogue::kRelu || epilogue == Epilogue::kBiasRelu) activation = kReluActivation;
  if (epilogue == Epilogue::kGelu || epilogue == Epilogue::kBiasGelu) activation = kGeluActivation;
  const bool add_bias = epilogue_has_bias(epilogue);
  if (activation == kNoActivation && !add_bias) return;
  epilogue_rows(y, bias, begin, end, n, add_bias, activation);
}

}  // namespace dietcode

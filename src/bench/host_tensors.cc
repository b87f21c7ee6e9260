#include "bench/host_tensors.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <random>

namespace dietcode {

namespace {

uint32_t float_bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

float bits_float(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

}  // namespace

uint16_t float_to_half_bits(float value) {
  const uint32_t f = float_bits(value);
  const uint32_t sign = (f >> 16) & 0x8000u;
  const uint32_t exponent = (f >> 23) & 0xffu;
  uint32_t mantissa = f & 0x7fffffu;
  if (exponent == 0xff) return uint16_t(sign | 0x7c00u | (mantissa ? 0x200u : 0));  // inf, NaN
  int e = int(exponent) - 127 + 15;
  if (e >= 31) return uint16_t(sign | 0x7c00u);  // overflow
  if (e <= 0) {                                  // subnormal half, or zero
    if (e < -10) return uint16_t(sign);
    mantissa |= 0x800000u;
    const int shift = 14 - e;
    uint32_t half = mantissa >> shift;
    const uint32_t rest = mantissa & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (half & 1u))) ++half;
    return uint16_t(sign | half);
  }
  uint32_t half = (uint32_t(e) << 10) | (mantissa >> 13);
  const uint32_t rest = mantissa & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;  // may carry into infinity
  return uint16_t(sign | half);
}

float half_bits_to_float(uint16_t bits) {
  const uint32_t sign = uint32_t(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  const uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0) {
    const float magnitude = std::ldexp(float(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 31) return bits_float(sign | 0x7f800000u | (mantissa << 13));
  return bits_float(sign | ((exponent - 15 + 127) << 23) | (mantissa << 13));
}

uint16_t float_to_bf16_bits(float value) {
  const uint32_t f = float_bits(value);
  if ((f & 0x7fffffffu) > 0x7f800000u) return uint16_t((f >> 16) | 0x40u);  // quiet NaN
  const uint32_t rounding = 0x7fffu + ((f >> 16) & 1u);
  return uint16_t((f + rounding) >> 16);
}

float bf16_bits_to_float(uint16_t bits) { return bits_float(uint32_t(bits) << 16); }

std::vector<unsigned char> random_tensor(DType dtype, int64_t count, uint64_t seed) {
  std::mt19937_64 engine(seed);
  const int bytes = dtype_bytes(dtype);
  std::vector<unsigned char> out(size_t(count) * size_t(bytes));
  for (int64_t i = 0; i < count; ++i) {
    // Our own mapping from the engine's bits (uniform_real_distribution differs between
    // standard libraries): 24 random bits give every float in [-1, 1) a step of 2^-23.
    const float v = float(int64_t(engine() >> 40) - (int64_t(1) << 23)) / float(1 << 23);
    unsigned char* at = out.data() + size_t(i) * size_t(bytes);
    if (dtype == DType::kFloat32) {
      std::memcpy(at, &v, 4);
    } else {
      const uint16_t h = dtype == DType::kFloat16 ? float_to_half_bits(v) : float_to_bf16_bits(v);
      std::memcpy(at, &h, 2);
    }
  }
  return out;
}

std::vector<float> tensor_to_floats(DType dtype, const void* bytes, int64_t count) {
  std::vector<float> out(static_cast<size_t>(count));
  const unsigned char* p = static_cast<const unsigned char*>(bytes);
  for (int64_t i = 0; i < count; ++i) {
    if (dtype == DType::kFloat32) {
      std::memcpy(&out[size_t(i)], p + 4 * i, 4);
    } else {
      uint16_t h;
      std::memcpy(&h, p + 2 * i, 2);
      out[size_t(i)] = dtype == DType::kFloat16 ? half_bits_to_float(h) : bf16_bits_to_float(h);
    }
  }
  return out;
}

double agreement_rtol(DType dtype, bool tf32_baseline) {
  switch (dtype) {
    case DType::kFloat32:
      return tf32_baseline ? 1e-2 : 2e-4;
    case DType::kFloat16:
      return 4e-3;
    case DType::kBFloat16:
      return 1.6e-2;
  }
  return 1.6e-2;
}

std::string Agreement::message(int64_t columns) const {
  if (ok()) return "";
  const int64_t cols = columns > 0 ? columns : 1;
  return fmt::format("mismatch: {} of {} outputs differ; first at [{}, {}]: pack {}, baseline {}",
                     mismatches, checked, first / cols, first % cols, pack, baseline);
}

Agreement compare_outputs(const std::vector<float>& pack, const std::vector<float>& baseline,
                          int64_t K, double rtol) {
  Agreement out;
  const double scale = std::sqrt(double(K > 0 ? K : 1)) / 4 + 1;
  const size_t n = std::min(pack.size(), baseline.size());
  out.checked = int64_t(n);
  for (size_t i = 0; i < n; ++i) {
    const double tolerance = rtol * (std::fabs(double(baseline[i])) + scale);
    const double difference = std::fabs(double(pack[i]) - double(baseline[i]));
    const double ratio = difference / tolerance;
    if (!(difference <= tolerance)) {  // NaN on either side fails too
      if (out.mismatches == 0)
        out.first = int64_t(i), out.pack = pack[i], out.baseline = baseline[i];
      ++out.mismatches;
    }
    if (!(ratio <= out.worst_ratio)) out.worst_ratio = std::isnan(ratio) ? INFINITY : ratio;
  }
  if (pack.size() != baseline.size()) {
    out.mismatches += 1;
    if (out.first < 0) out.first = int64_t(n);
  }
  return out;
}

}  // namespace dietcode

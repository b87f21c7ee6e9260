#include "measure/gpu_operands.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

namespace dietcode {

namespace {

uint32_t bits_of(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return bits;
}

float float_of(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
}

}  // namespace

uint16_t float_to_half(float value) {
  uint32_t x = bits_of(value);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t biased = (x >> 23) & 0xFFu;
  uint32_t mant = x & 0x7FFFFFu;
  if (biased == 0xFF) return uint16_t(sign | 0x7C00u | (mant ? 0x200u : 0));  // inf, NaN
  int exp = int(biased) - 127 + 15;
  if (exp >= 31) return uint16_t(sign | 0x7C00u);  // overflow to infinity
  if (exp <= 0) {                                  // a subnormal half, or zero
    if (exp < -10) return uint16_t(sign);
    mant |= 0x800000u;
    int shift = 14 - exp;
    uint32_t half = mant >> shift, rest = mant & ((1u << shift) - 1), tie = 1u << (shift - 1);
    if (rest > tie || (rest == tie && (half & 1))) ++half;
    return uint16_t(sign | half);
  }
  uint32_t half = sign | uint32_t(exp) << 10 | mant >> 13, rest = mant & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1))) ++half;  // a carry bumps the exponent
  return uint16_t(half);
}

float half_to_float(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  int exp = (h >> 10) & 0x1F;
  uint32_t mant = h & 0x3FFu;
  if (exp == 31) return float_of(sign | 0x7F800000u | mant << 13);
  if (exp == 0) {
    if (mant == 0) return float_of(sign);
    int e = -14;
    while (!(mant & 0x400u)) {
      mant <<= 1;
      --e;
    }
    return float_of(sign | uint32_t(e + 127) << 23 | (mant & 0x3FFu) << 13);
  }
  return float_of(sign | uint32_t(exp - 15 + 127) << 23 | mant << 13);
}

uint16_t float_to_bfloat16(float value) {
  uint32_t x = bits_of(value);
  if (std::isnan(value)) return uint16_t((x >> 16) | 0x40u);
  x += 0x7FFFu + ((x >> 16) & 1u);
  return uint16_t(x >> 16);
}

float bfloat16_to_float(uint16_t bits) { return float_of(uint32_t(bits) << 16); }

float operand_value(uint64_t seed, int tag, int64_t i) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull ^ uint64_t(tag) << 56 ^ uint64_t(i);
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return float(double(z >> 40) * 0x1.0p-23 - 1.0);  // 24 bits: exact in fp32
}

std::string operand_bytes(uint64_t seed, int tag, int64_t count, DType dtype) {
  std::string bytes(size_t(count) * dtype_bytes(dtype), '\0');
  for (int64_t i = 0; i < count; ++i) {
    float v = operand_value(seed, tag, i);
    if (dtype == DType::kFloat32) {
      std::memcpy(&bytes[size_t(i) * 4], &v, 4);
    } else {
      uint16_t h = dtype == DType::kFloat16 ? float_to_half(v) : float_to_bfloat16(v);
      std::memcpy(&bytes[size_t(i) * 2], &h, 2);
    }
  }
  return bytes;
}

std::vector<float> output_floats(const std::string& bytes, DType dtype) {
  size_t n = bytes.size() / dtype_bytes(dtype);
  std::vector<float> out(n);
  for (size_t i = 0; i < n; ++i) {
    if (dtype == DType::kFloat32) {
      std::memcpy(&out[i], &bytes[i * 4], 4);
    } else {
      uint16_t h;
      std::memcpy(&h, &bytes[i * 2], 2);
      out[i] = dtype == DType::kFloat16 ? half_to_float(h) : bfloat16_to_float(h);
    }
  }
  return out;
}

OperandSizes operand_sizes(OpKind kind, const GemmShape& s, const Conv2dShape* conv) {
  OperandSizes sizes;
  sizes.bias = s.N;
  sizes.c = s.batch * s.M * s.N;
  if (kind == OpKind::kConv2d) {
    if (!conv) throw std::invalid_argument("conv2d operands need the convolution's geometry");
    sizes.a = conv->n * conv->h * conv->w * conv->c;
    sizes.b = conv->k * conv->r * conv->s * conv->c;
    return sizes;
  }
  sizes.a = s.batch * s.M * s.K;
  sizes.b = (kind == OpKind::kBatchMatmul ? s.batch : 1) * s.N * s.K;
  return sizes;
}

void set_shape_args(OpKind kind, const GemmShape& s, const Conv2dShape* conv, DietcodeArgs* args) {
  args->batch = s.batch;
  args->m = s.M;
  args->n = s.N;
  args->k = s.K;
  // Transposes reorder a batch element's extents, not its size: the strides are the same.
  args->stride_a = s.M * s.K;
  args->stride_b = kind == OpKind::kBatchMatmul ? s.N * s.K : 0;
  args->stride_c = s.M * s.N;
  if (kind != OpKind::kConv2d) return;
  if (!conv) throw std::invalid_argument("conv2d arguments need the convolution's geometry");
  args->conv_n = int(conv->n), args->conv_h = int(conv->h), args->conv_w = int(conv->w);
  args->conv_c = int(conv->c), args->conv_k = int(conv->k), args->conv_r = int(conv->r);
  args->conv_s = int(conv->s), args->conv_p = int(conv->p), args->conv_q = int(conv->q);
  args->stride_h = conv->stride_h, args->stride_w = conv->stride_w;
  args->pad_h = conv->pad_h, args->pad_w = conv->pad_w;
  args->dilation_h = conv->dilation_h, args->dilation_w = conv->dilation_w;
  args->stride_a = 0, args->stride_b = 0;  // one GEMM: the batch lives inside M
}

OutputComparison compare_outputs(const std::vector<float>& got, const std::vector<float>& want,
                                 const GemmShape& shape, DType dtype) {
  OutputComparison result;
  if (got.size() != want.size()) {
    result.ok = false;
    result.message =
        fmt::format("the output has {} elements, the reference {}", got.size(), want.size());
    return result;
  }
  double out_rtol = dtype == DType::kFloat32 ? 1e-5 : dtype == DType::kFloat16 ? 2e-3 : 1e-2;
  double accumulation = 1e-4 * std::sqrt(double(shape.K));
  int64_t first = -1;
  for (size_t i = 0; i < got.size(); ++i) {
    double tolerance = out_rtol * std::fabs(want[i]) + accumulation;
    if (!(std::fabs(double(got[i]) - double(want[i])) <= tolerance)) {
      if (first < 0) first = int64_t(i);
      ++result.mismatches;
    }
  }
  if (first < 0) return result;
  int64_t mn = shape.M * shape.N;
  result.ok = false;
  result.message = fmt::format(
      "C[{},{},{}] = {} where the reference has {}; {} of {} elements "
      "differ",
      first / mn, first % mn / shape.N, first % shape.N, got[first], want[first], result.mismatches,
      got.size());
  return result;
}

std::string guard_violation(const std::string& buffer, size_t output_begin, size_t output_bytes,
                            unsigned char fill) {
  const size_t end = std::min(buffer.size(), output_begin + output_bytes);
  auto changed = [&](size_t i) { return static_cast<unsigned char>(buffer[i]) != fill; };
  size_t before = 0, nearest_before = 0, after = 0, first_after = 0;
  for (size_t i = 0; i < std::min(output_begin, buffer.size()); ++i)
    if (changed(i)) {
      ++before;
      nearest_before = output_begin - i;
    }
  for (size_t i = end; i < buffer.size(); ++i)
    if (changed(i) && after++ == 0) first_after = i - end;
  if (before == 0 && after == 0) return "";
  std::string out = "wrote outside its output:";
  if (before)
    out += fmt::format(" {} byte{} changed before the start of C, the nearest at start - {}",
                       before, before == 1 ? "" : "s", nearest_before);
  if (before && after) out += ";";
  if (after)
    out += fmt::format(" {} byte{} changed past the end of C, the first at end + {}", after,
                       after == 1 ? "" : "s", first_after);
  return out;
}

}  // namespace dietcode

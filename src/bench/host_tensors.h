// Host-side tensor data for bench: seeded random inputs in the op's dtype, conversions of
// fp16/bf16 bits to and from float (the host has no half type), and the check that the pack
// and the baseline computed the same thing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "workload/workload.h"

namespace dietcode {

// IEEE binary16 and bfloat16, round to nearest even; NaN stays NaN, overflow becomes infinity.
uint16_t float_to_half_bits(float value);
float half_bits_to_float(uint16_t bits);
uint16_t float_to_bf16_bits(float value);
float bf16_bits_to_float(uint16_t bits);

// `count` values uniform in [-1, 1] from `seed`, stored as `dtype` (dtype_bytes(dtype) each).
// The same seed gives the same bytes on every machine (mt19937_64 and our own conversion).
std::vector<unsigned char> random_tensor(DType dtype, int64_t count, uint64_t seed);

// `count` values of `dtype` read from `bytes`, as floats.
std::vector<float> tensor_to_floats(DType dtype, const void* bytes, int64_t count);

// How far the pack's output may be from the baseline's and still agree, for inputs uniform in
// [-1, 1] (random_tensor): |pack - baseline| <= rtol * (|baseline| + sqrt(K) / 4 + 1).
// sqrt(K) / 4 is the size of a K-term partial sum's rounding scale (sum |x w| / sqrt(K), with
// E|x w| = 1/4), the 1 covers a bias in [-1, 1], and rtol is the dtype's rounding allowance for
// two independent results:
//   float32 2e-4 (fp32 FMA in any order), with a TF32 baseline 1e-2 (10-bit mantissa inputs),
//   float16 4e-3 (two roundings of the output to 11 bits), bfloat16 1.6e-2 (to 8 bits).
// A lost or doubled product, a wrong bias or a missing activation still fails by far.
double agreement_rtol(DType dtype, bool tf32_baseline);

struct Agreement {
  int64_t checked = 0;
  int64_t mismatches = 0;
  int64_t first = -1;  // flat index of the first mismatch
  float pack = 0, baseline = 0;
  double worst_ratio = 0;  // max |difference| / tolerance

  bool ok() const { return mismatches == 0; }
  // "" when ok, else e.g. "mismatch: 3 of 2304 outputs differ (rtol 0.0002); first at
  // [0, 17]: pack 1.5, baseline 1.25"; `columns` turns the flat index into [row, column].
  std::string message(int64_t columns) const;
};

Agreement compare_outputs(const std::vector<float>& pack, const std::vector<float>& baseline,
                          int64_t K, double rtol);

}  // namespace dietcode

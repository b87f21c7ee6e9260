#include "measure/cpu_reference_half.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "measure/gpu_operands.h"

namespace dietcode {

namespace {

void check_16bit(DType dtype) {
  if (dtype != DType::kFloat16 && dtype != DType::kBFloat16)
    throw std::invalid_argument(std::string("not a 16-bit element type: ") + to_string(dtype));
}

float element_to_float(uint16_t bits, DType dtype) {
  return dtype == DType::kFloat16 ? half_to_float(bits) : bfloat16_to_float(bits);
}

uint16_t float_to_element(float value, DType dtype) {
  return dtype == DType::kFloat16 ? float_to_half(value) : float_to_bfloat16(value);
}

// One unit in the last place relative to the value, and the smallest subnormal step.
double relative_unit(DType dtype) { return dtype == DType::kFloat16 ? 0x1p-10 : 0x1p-7; }
double smallest_step(DType dtype) { return dtype == DType::kFloat16 ? 0x1p-24 : 0x1p-133; }

}  // namespace

std::vector<float> elements_to_floats(const uint16_t* bits, int64_t count, DType dtype) {
  check_16bit(dtype);
  std::vector<float> out(size_t(std::max<int64_t>(count, 0)));
  for (size_t i = 0; i < out.size(); ++i) out[i] = element_to_float(bits[i], dtype);
  return out;
}

std::vector<uint16_t> floats_to_elements(const std::vector<float>& values, DType dtype) {
  check_16bit(dtype);
  std::vector<uint16_t> out(values.size());
  for (size_t i = 0; i < values.size(); ++i) out[i] = float_to_element(values[i], dtype);
  return out;
}

std::vector<float> round_to_dtype(const std::vector<float>& values, DType dtype) {
  const auto bits = floats_to_elements(values, dtype);
  return elements_to_floats(bits.data(), int64_t(bits.size()), dtype);
}

DenseAccumulation dense_accumulate_16bit(const uint16_t* x, const uint16_t* w, int64_t M, int64_t N,
                                         int64_t K, DType dtype, int threads) {
  const auto xf = elements_to_floats(x, M * K, dtype);
  const auto wf = elements_to_floats(w, N * K, dtype);
  return dense_accumulate(xf.data(), wf.data(), M, N, K, threads);
}

DenseAccumulation batch_matmul_accumulate_16bit(const uint16_t* a, const uint16_t* b, int64_t batch,
                                                int64_t M, int64_t N, int64_t K, bool transpose_a,
                                                bool transpose_b, DType dtype, int threads) {
  const auto af = elements_to_floats(a, batch * M * K, dtype);
  const auto bf = elements_to_floats(b, batch * N * K, dtype);
  return batch_matmul_accumulate(af.data(), bf.data(), batch, M, N, K, transpose_a, transpose_b,
                                 threads);
}

std::vector<float> dense_apply_epilogue_16bit(const DenseAccumulation& acc, const uint16_t* bias,
                                              Epilogue epilogue, int64_t rows, DType dtype) {
  check_16bit(dtype);
  std::vector<float> bias_f;
  if (bias) bias_f = elements_to_floats(bias, acc.N, dtype);
  return round_to_dtype(dense_apply_epilogue(acc, bias ? bias_f.data() : nullptr, epilogue, rows),
                        dtype);
}

DenseComparison compare_dense_16bit(const uint16_t* got, const std::vector<float>& want,
                                    const DenseAccumulation& acc, const uint16_t* bias,
                                    int64_t rows, DType dtype, double rtol) {
  check_16bit(dtype);
  if (rows > acc.M || int64_t(want.size()) < rows * acc.N)
    throw std::invalid_argument("compare_dense_16bit: more rows than the reference has");
  const double unit = relative_unit(dtype), tiny = smallest_step(dtype);
  const double sqrt_k = std::sqrt(double(std::max<int64_t>(acc.K, 1)));
  DenseComparison out;
  for (int64_t m = 0; m < rows; ++m)
    for (int64_t n = 0; n < acc.N; ++n) {
      const size_t i = size_t(m * acc.N + n);
      const double g = element_to_float(got[i], dtype);
      const double b = bias ? std::fabs(double(element_to_float(bias[n], dtype))) : 0.0;
      const double pre = std::fabs(acc.sum[i]) + b;
      const double tol =
          unit * std::fabs(double(want[i])) + rtol * (pre + acc.magnitude[i] / sqrt_k) + tiny;
      const double err = std::fabs(g - double(want[i]));
      if (!(err <= tol)) {  // NaN fails too
        if (out.mismatches == 0) {
          out.first_row = m, out.first_col = n;
          out.got = float(g), out.want = want[i];
        }
        ++out.mismatches;
      }
      const double ratio = err / tol;
      if (ratio > out.worst_ratio || std::isnan(ratio)) out.worst_ratio = ratio;
    }
  out.ok = out.mismatches == 0;
  if (!out.ok)
    out.message = fmt::format(
        "{} of {} outputs differ from the reference; first at [{}, {}]: got {}, want {}",
        out.mismatches, rows * acc.N, out.first_row, out.first_col, out.got, out.want);
  return out;
}

}  // namespace dietcode

// The CPU reference for dense layers and batch_matmul in float16 and bfloat16, as the tensor-core
// templates compute them: inputs are 16-bit elements (exact in float and double), products are
// summed in double, bias and activation are applied in double, and the output is rounded to the
// element type. Built on cpu_reference.h (the accumulation is the same; only rounding and tolerance
// differ).
#pragma once

#include <cstdint>
#include <vector>

#include "measure/cpu_reference.h"
#include "workload/workload.h"

namespace dietcode {

// Raw 16-bit elements of `dtype` (float16 or bfloat16) to floats, exactly.
std::vector<float> elements_to_floats(const uint16_t* bits, int64_t count, DType dtype);
// Floats rounded to nearest even in `dtype`, as raw 16-bit elements.
std::vector<uint16_t> floats_to_elements(const std::vector<float>& values, DType dtype);
// Floats rounded to `dtype` and back: the values a 16-bit tensor of them holds.
std::vector<float> round_to_dtype(const std::vector<float>& values, DType dtype);

// Pre-activation sums of X[M,K] . W[N,K]^T for 16-bit X and W (double accumulation).
DenseAccumulation dense_accumulate_16bit(const uint16_t* x, const uint16_t* w, int64_t M, int64_t N,
                                         int64_t K, DType dtype, int threads = 0);

// batch_matmul for 16-bit A and B in any layout (batch_matmul_accumulate's): batch * M rows,
// row b*M + m. The epilogue and the comparison below take it like a dense accumulation.
DenseAccumulation batch_matmul_accumulate_16bit(const uint16_t* a, const uint16_t* b, int64_t batch,
                                                int64_t M, int64_t N, int64_t K, bool transpose_a,
                                                bool transpose_b, DType dtype, int threads = 0);

// Y for the first `rows` rows: bias (16-bit elements, null when the epilogue has none) and
// activation in double, then rounded to `dtype`; returned as floats (each exactly a `dtype`
// value). The double result passes through float on its way to 16 bits; the tolerance below
// allows the one-unit difference this rare double rounding can make.
std::vector<float> dense_apply_epilogue_16bit(const DenseAccumulation& acc, const uint16_t* bias,
                                              Epilogue epilogue, int64_t rows, DType dtype);

// Whether 16-bit results (`got`, raw elements) agree with the reference:
//   |got - want| <= unit * |want| + rtol * (|pre| + magnitude / sqrt(K)) + tiny
// where unit is one unit in the last place relative to the value (2^-10 for float16, 2^-7 for
// bfloat16): the kernel rounds its fp32 result once and the reference its exact one, so they
// may sit on either side of a rounding boundary. The rtol term is fp32 accumulation in any
// order, as in compare_dense; tiny is the smallest subnormal step of the type. A lost or
// doubled product (~ magnitude / K) is still far outside for the K of real layers.
DenseComparison compare_dense_16bit(const uint16_t* got, const std::vector<float>& want,
                                    const DenseAccumulation& acc, const uint16_t* bias,
                                    int64_t rows, DType dtype, double rtol = 1e-4);

}  // namespace dietcode

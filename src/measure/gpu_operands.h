// Host-side pieces of GPU measurement that need no GPU: element conversions, the seeded
// operand contents, and the comparison that decides whether a candidate's output agrees with
// the reference kernel's. Launch geometry is the LaunchPlan's own (generated_kernel.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../templates/dietcode_args.h"  // the kernel ABI, shared with the templates
#include "measure/conv2d_shape.h"
#include "workload/workload.h"

namespace dietcode {

// IEEE binary16 and bfloat16 from and to float, rounding to nearest even.
uint16_t float_to_half(float value);
float half_to_float(uint16_t bits);
uint16_t float_to_bfloat16(float value);
float bfloat16_to_float(uint16_t bits);

// Element i of operand `tag` (0 = A, 1 = B, 2 = bias): uniform in [-1, 1), a function of
// (seed, tag, i) only, so a buffer regrown for a larger shape keeps the values it had and
// references computed earlier stay valid.
float operand_value(uint64_t seed, int tag, int64_t i);

// `count` elements of an operand in the op's dtype, as raw bytes to upload.
std::string operand_bytes(uint64_t seed, int tag, int64_t count, DType dtype);
// Raw output bytes in `dtype` back to floats.
std::vector<float> output_floats(const std::string& bytes, DType dtype);

// Element counts of the operands for one shape: dense X[M,K], W[N,K] (shared by the batch);
// batch_matmul A and B per batch element in either layout; conv2d the input N*H*W*C and the
// weights K*R*S*C, which only its geometry `conv` gives (std::invalid_argument without it).
struct OperandSizes {
  int64_t a = 0, b = 0, bias = 0, c = 0;
};
OperandSizes operand_sizes(OpKind kind, const GemmShape& shape, const Conv2dShape* conv = nullptr);

// The shape part of a kernel's arguments for one instance: the GEMM extents, the batch strides
// of the op's layout (0 for dense's W, which every batch element shares), and for conv2d (with
// `conv`, else std::invalid_argument) the geometry the implicit GEMM gathers through.
void set_shape_args(OpKind kind, const GemmShape& shape, const Conv2dShape* conv,
                    DietcodeArgs* args);

// got agrees with want when every |got - want| <= out_rtol * |want| + 1e-4 * sqrt(K): output
// rounding (out_rtol: 1e-5 for fp32, 2e-3 for fp16, 1e-2 for bf16) plus fp32 accumulation in
// another order, which grows like sqrt(K) for inputs in [-1, 1]; a lost or doubled product
// (~0.25) is two orders above it. NaN agrees with nothing. `message` names the first mismatch:
// "C[0,12,7] = 3.5 where the reference has 4.25; 15 of 1536 elements differ".
struct OutputComparison {
  bool ok = true;
  int64_t mismatches = 0;
  std::string message;
};
OutputComparison compare_outputs(const std::vector<float>& got, const std::vector<float>& want,
                                 const GemmShape& shape, DType dtype);

// Canaries. The worker keeps a guard band of kOutputGuardBytes on each side of the output
// buffer (a multiple of 256, so the output keeps every alignment a kernel may ask for) and
// fills it, with the output, with one byte value before a candidate's check launch; anything
// the candidate writes outside [output_begin, output_begin + output_bytes) is caught here.
// Only the tail beyond the largest shape's output is a guard band for the largest shape; for a
// smaller one the rest of the buffer is too, so a kernel writing past its own M or N fails.
inline constexpr size_t kOutputGuardBytes = 4096;
// "" when every byte of `buffer` outside the output still holds `fill`; else one line saying
// where the writes went: "wrote outside its output: 4 bytes changed past the end of C, the
// first at end + 0" (offsets in bytes).
std::string guard_violation(const std::string& buffer, size_t output_begin, size_t output_bytes,
                            unsigned char fill);

}  // namespace dietcode

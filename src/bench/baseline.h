// The vendor baselines a pack is timed against, behind one interface:
//   cublas    cublasSgemm_v2 (fp32) or cublasGemmEx (fp16/bf16, CUBLAS_COMPUTE_32F), strided-
//             batched variants for batch_matmul; cuBLAS has no fused epilogue, so an op with
//             one runs GEMM + bench's elementwise epilogue kernel (bench_kernels.h), and the
//             report says so;
//   cublaslt  cublasLtMatmul with the heuristic's first algorithm and the matching fused
//             epilogue (CUBLASLT_EPILOGUE_BIAS, RELU, RELU_BIAS, GELU, GELU_BIAS).
// conv2d has neither (it needs cuDNN, which bench does not load): the pack is timed alone.
//
// Precision: fp32 runs with CUBLAS_DEFAULT_MATH, whose compute type CUBLAS_COMPUTE_32F keeps
// "internal storage precision with at least the same precision and range" (cublas_api.h), i.e.
// no TF32 down-conversion, which only CUBLAS_TF32_TENSOR_OP_MATH or CUBLAS_COMPUTE_32F_FAST_TF32
// allow. CUBLAS_PEDANTIC_MATH would also forbid faster exact algorithms, so it is not the fair
// baseline. `--tf32` opts into TF32 for both.
#pragma once

#include <cuda.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "workload/workload.h"

namespace dietcode {

class BenchKernels;

// The device operands of one instance. a and b are the pack's first two arguments (X and W
// for dense, A and B for batch_matmul); bias is 0 without one; y is where the baseline writes.
struct GemmOperands {
  CUdeviceptr a = 0, b = 0, bias = 0, y = 0;
};

// The baseline cannot run this instance (no cuBLASLt algorithm, sizes past 32 bits): the row
// gets no baseline time and the message becomes a note; bench goes on.
class BaselineUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Baseline {
 public:
  virtual ~Baseline() = default;

  virtual std::string name() const = 0;  // "cublas", "cublaslt"

  // Whether it runs ops like `op`, with one line saying what it runs (or why not) in *what.
  virtual bool supports(const OpSpec& op, std::string* what) const = 0;

  // Host-side setup for one instance (descriptors, algorithm choice): outside the timing.
  virtual void prepare(const OpSpec& op, const GemmShape& shape, const GemmOperands& operands) = 0;

  // Enqueues the prepared instance on the stream given at construction.
  virtual void run() = 0;
};

struct BaselineOptions {
  bool tf32 = false;  // let fp32 GEMMs use TF32 tensor cores
  CUstream stream = nullptr;
  const BenchKernels* kernels = nullptr;  // for cuBLAS's unfused epilogues
};

// "cublas" or "cublaslt". Loads the library (EnvironmentError when it is missing) and creates
// its handle in the current context.
std::unique_ptr<Baseline> make_baseline(const std::string& name, const BaselineOptions& options);

// "none" plus the reason for an op no baseline runs; shared by the runner and the report.
std::string no_baseline_reason(const OpSpec& op);

}  // namespace dietcode

// The vendor baselines a pack is timed against, behind one interface:
//   cublas    cublasSgemm_v2 (fp32) or cublasGemmEx (fp16/bf16, CUBLAS_COMPUTE_32F), strided-
//             batched variants for batch_matmul; cuBLAS has no fused epilogue, so an op with
//             one runs GEMM + bench's elementwise epilogue kernel (bench_kernels.h), and the
//             report says so;
//   cublaslt  cublasLtMatmul with the heuristic's first algorithm and the matching fused
//             epilogue (CUBLASLT_EPILOGUE_BIAS, RELU, RELU_BIAS, GELU, GELU_BIAS).
//   cudnn     conv2d ops: cuDNN 9's legacy convolution API, the fastest algorithm
//             cudnnFindConvolutionForwardAlgorithmEx measures per shape (cudnn_baseline.cc);
//   cublas+im2col  conv2d ops without cuDNN: bench's im2col kernel, then one cuBLAS GEMM,
//             both timed (im2col_baseline.cc).
// `--baseline` picks them per op kind (plan_baselines below); conv2d never runs on a GEMM
// baseline directly, nor dense/batch_matmul on a conv one.
//
// Precision: fp32 runs with CUBLAS_DEFAULT_MATH, whose compute type CUBLAS_COMPUTE_32F keeps
// "internal storage precision with at least the same precision and range" (cublas_api.h), i.e.
// no TF32 down-conversion, which only CUBLAS_TF32_TENSOR_OP_MATH or CUBLAS_COMPUTE_32F_FAST_TF32
// allow. CUBLAS_PEDANTIC_MATH would also forbid faster exact algorithms, so it is not the fair
// baseline. cuDNN's fp32 runs with CUDNN_FMA_MATH, since its CUDNN_DEFAULT_MATH allows TF32
// from Ampere on (conv_mapping.h). `--tf32` opts into TF32 for all three.
#pragma once

#include <cuda.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "measure/conv2d_shape.h"
#include "workload/workload.h"

namespace dietcode {

class BenchKernels;

// The device operands of one instance. a and b are the pack's first two arguments (X and W
// for dense, A and B for batch_matmul, X and Wt for conv2d); bias is 0 without one; y is where
// the baseline writes.
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

  virtual std::string name() const = 0;  // "cublas", "cublaslt", "cudnn", "cublas+im2col"

  // What the report calls it: name() plus the library version where it matters
  // ("cudnn 9.19.0").
  virtual std::string label() const { return name(); }

  // Whether it runs ops like `op`, with one line saying what it runs (or why not) in *what.
  virtual bool supports(const OpSpec& op, std::string* what) const = 0;

  // Host-side setup for one instance (descriptors, algorithm choice): outside the timing.
  virtual void prepare(const OpSpec& op, const GemmShape& shape, const GemmOperands& operands) = 0;

  // The same for a conv2d instance; the GEMM baselines run none (BaselineUnavailable).
  virtual void prepare_conv(const OpSpec& op, const Conv2dShape& shape,
                            const GemmOperands& operands) {
    throw BaselineUnavailable(name() + " runs no conv2d");
  }

  // What was chosen for the prepared instance, e.g. cuDNN's algorithm; empty when nothing is.
  virtual std::string instance_detail() const { return ""; }

  // Enqueues the prepared instance on the stream given at construction.
  virtual void run() = 0;
};

struct BaselineOptions {
  bool tf32 = false;  // let fp32 GEMMs use TF32 tensor cores
  CUstream stream = nullptr;
  const BenchKernels* kernels = nullptr;  // for cuBLAS's unfused epilogues
};

// "cublas", "cublaslt", "cudnn" or "cublas+im2col". Loads the library (EnvironmentError when
// it is missing) and creates its handle in the current context.
std::unique_ptr<Baseline> make_baseline(const std::string& name, const BaselineOptions& options);

// Which baseline `--baseline OPTION` runs for each kind of op (names for make_baseline; empty
// for none), and a note for the report:
//   auto (default)  GEMM ops: cublas;    conv2d: cudnn, or cublas+im2col when cuDNN does not
//                                        load (the note says why)
//   cublas          GEMM ops: cublas;    conv2d: cublas+im2col (cuDNN is not loaded)
//   cublaslt        GEMM ops: cublaslt;  conv2d: as auto
//   cudnn           GEMM ops: cublas;    conv2d: cudnn, and EnvironmentError when it does not
//                                        load
//   none            nothing
// `cudnn_why` is empty when cuDNN loads, else the loader's one line; it is only consulted for
// conv2d, so a pack without conv2d never needs cuDNN.
struct BaselinePlan {
  std::string gemm, conv;
  std::string note;
};
BaselinePlan plan_baselines(const std::string& option, bool has_conv, const std::string& cudnn_why);

// The baselines of one bench run: plan_baselines for `option`, cuDNN looked for only when there
// is a conv2d to run and the option may use it, each baseline created only when an op needs
// it. Under auto/cublaslt a cuDNN that loads but cannot start (cudnnCreate fails: a sub-library
// missing, an unsupported GPU) gives way to cublas+im2col, with a note.
struct BaselineSet {
  std::unique_ptr<Baseline> gemm, conv;
  std::string note;
};
BaselineSet make_baselines(const std::string& option, bool has_gemm, bool has_conv,
                           const BaselineOptions& options);

// The --baseline values, for the CLI's check and help.
const std::vector<std::string>& baseline_options();

// "none" plus the reason for an op no baseline runs; shared by the runner and the report.
std::string no_baseline_reason(const OpSpec& op);

}  // namespace dietcode

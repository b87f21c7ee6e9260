// The vendor libraries a CPU pack is timed against, behind one interface on host pointers (the
// CPU counterpart of baseline.h, which is tied to CUDA):
//   onednn    oneDNN 2.x (libdnnl.so.2): the matmul primitive for dense and batch_matmul, the
//             convolution forward primitive for conv2d (NHWC src and dst, OHWI = KRSC weights,
//             exactly the pack's layouts, so no reorder anywhere), the epilogue fused: bias as
//             the primitive's bias, relu and gelu as eltwise_relu / eltwise_gelu_tanh post-ops.
//             fp32 throughout with fpmath mode strict (no implicit bf16/f16 down-conversion).
//   openblas  OpenBLAS's OpenMP build: cblas_sgemm (RowMajor; dense NoTrans x Trans, batch_matmul
//             one call per batch entry with its transposes, or the batch split over the threads
//             when there are at least as many entries as threads; conv2d an explicit im2col
//             into a buffer, skipped for 1x1 stride-1 unpadded filters, then one sgemm), then a
//             separate epilogue pass (bias, relu, gelu-tanh) in plain C++. im2col and the
//             epilogue run on the same OpenMP threads as OpenBLAS and are counted in the time.
//
// Threads: both libraries run on the libgomp that oneDNN loads (the OpenMP build of OpenBLAS
// shares it; the pthread build would busy-spin beside it), so the thread count is libgomp's
// nthreads ICV of the calling thread, which both libraries read on every call (OpenBLAS's
// OpenMP build re-reads omp_get_max_threads() in each call too). Each baseline therefore sets
// its own count at prepare() and again at every run(): the two can share a process and a thread
// and still each run on their `threads`. Call prepare() and run() from the same thread.
//
// Operands (host pointers, row-major, fp32), as the pack's arguments:
//   dense         a = X [M][K], b = W [N][K] ([K][N] with weight_layout KN), bias [N] or null,
//                 y [M][N]
//   batch_matmul  a = A [batch][M][K] ([batch][K][M] with transpose_a), b = B [batch][K][N]
//                 ([batch][N][K] with transpose_b), no bias, y [batch][M][N]
//   conv2d        a = X [N][H][W][C], b = Wt [K][R][S][C], bias [K] or null, y [N][P][Q][K]
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "measure/conv2d_shape.h"
#include "workload/workload.h"

namespace dietcode {

struct CpuGemmOperands {
  const float* a = nullptr;
  const float* b = nullptr;
  const float* bias = nullptr;  // required when the op's epilogue has a bias
  float* y = nullptr;
};

// The baseline cannot run this instance (oneDNN has no implementation for it, sizes past 32-bit
// BLAS integers): the row gets no baseline time and the message becomes a note.
class CpuBaselineUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class CpuBaseline {
 public:
  virtual ~CpuBaseline() = default;

  virtual std::string name() const = 0;  // "onednn", "openblas"

  // For the report, with the library version: "oneDNN 2.6.3", "OpenBLAS 0.3.21 (openmp),
  // sgemm + separate epilogue".
  virtual std::string label() const = 0;

  // Whether it runs ops like `op` (fp32 only), with one line in *what saying what it runs and
  // which parts of the epilogue are fused, or why not.
  virtual bool supports(const OpSpec& op, std::string* what) const = 0;

  // Setup for one instance, outside the timing: oneDNN creates (or takes from its cache) the
  // primitive and binds the operands; OpenBLAS sizes its im2col buffer. `conv` is required for
  // conv2d ops and ignored otherwise. Throws CpuBaselineUnavailable when this instance cannot
  // run, std::invalid_argument for an op supports() refuses or missing operands.
  virtual void prepare(const OpSpec& op, const GemmShape& shape, const Conv2dShape* conv,
                       const CpuGemmOperands& operands) = 0;

  // What was chosen for the prepared instance, e.g. oneDNN's implementation
  // ("gemm:jit", "brg:avx512_core"); empty when nothing is.
  virtual std::string instance_detail() const { return ""; }

  // The instruction set its kernels use, as the library names it ("avx512_core", "SkylakeX
  // kernels"), after any cap (cpu_isa_cap.h); empty when the library does not say.
  virtual std::string instruction_set() const { return ""; }

  // Runs the prepared instance to completion on `threads` threads.
  virtual void run() = 0;

  virtual int threads() const = 0;
};

// "onednn" or "openblas", on `threads` threads (0 = the process's logical CPUs). Loads the
// library (EnvironmentError with one line naming the files tried and the Debian package when it
// is missing); std::invalid_argument for another name. constant_weights: the weights are
// constant over the instance's runs, so oneDNN's matmul may take them in the layout it
// chooses, reordered once in prepare() (its convolution does so either way when it needs
// to); OpenBLAS has no way to keep packed weights and ignores it.
std::unique_ptr<CpuBaseline> make_cpu_baseline(const std::string& name, int threads,
                                               bool constant_weights = false);

// {"onednn", "openblas"}.
const std::vector<std::string>& cpu_baseline_names();

}  // namespace dietcode

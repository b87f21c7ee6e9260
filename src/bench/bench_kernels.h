// The small helper kernels bench needs besides the pack and the baseline, compiled with NVRTC
// for the local GPU when bench starts:
//   - an elementwise epilogue (bias, relu, gelu and their combinations), applied in place after
//     a plain cuBLAS GEMM, because cuBLAS has no fused epilogues: the honest unfused baseline
//     for a pack op with an epilogue is GEMM + this kernel, and bench says so in its output;
//   - an L2 flush, writing a buffer of twice the L2 size on the timing stream, so "cold" timings
//     find neither the weights nor the activations in L2: the tuner's own (cuda/l2_flush.h,
//     loaded from its PTX), so a pack is graded under the conditions its kernels were chosen in.
//   - im2col, for the conv2d baseline when cuDNN is missing: cuBLAS on the explicit column
//     matrix (im2col_index.h), the im2col's time counted in the baseline's;
//   - a spin kernel that holds the stream for a while, so the launches queued behind it run
//     back to back and CUDA events time the GPU's work, not the host's launch overhead.
// The GELU is the tanh form, as in dietcode's templates.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cuda/module.h"
#include "measure/conv2d_shape.h"
#include "nvrtc/compiler.h"
#include "workload/workload.h"

namespace dietcode {

// The CUDA C++ source (no #include, so it compiles in milliseconds with NVRTC on any arch
// from sm_75) and the request bench compiles it with for `arch` ("sm_90").
std::string bench_kernels_source();
CompileRequest bench_kernels_request(const std::string& arch);

// The arch to compile for a GPU of compute capability `cc` (90 for 9.0) given the archs NVRTC
// supports: "sm_<cc>" when supported, else the newest supported one below it, whose PTX the
// driver JIT-compiles (*use_ptx = true). Empty when NVRTC supports nothing up to cc.
std::string bench_kernels_arch(int cc, const std::vector<int>& supported, bool* use_ptx);

class BenchKernels {
 public:
  // Compiles (for the arch bench_kernels_arch picks from `supported`, NVRTC's archs) and loads
  // into the current context. Throws EnvironmentError on failure.
  BenchKernels(Compiler& compiler, const std::vector<int>& supported, int cc_major, int cc_minor);

  // y[r, c] = act(y[r, c] + bias[c]) in place on `stream`; bias may be 0 (no bias). A no-op
  // for Epilogue::kNone.
  void epilogue(CUstream stream, DType dtype, Epilogue epilogue, CUdeviceptr y, CUdeviceptr bias,
                int64_t rows, int64_t cols) const;

  // col[N*P*Q, R*S*C] = the im2col of the NHWC input x for conv `g`, on `stream`.
  void im2col(CUstream stream, DType dtype, CUdeviceptr x, CUdeviceptr col,
              const Conv2dShape& g) const;

  // Writes every 32-bit word of [buffer, buffer + bytes) on `stream`.
  void flush(CUstream stream, CUdeviceptr buffer, int64_t bytes) const;

  // One thread busy-waits `microseconds` on the GPU's global timer.
  void spin(CUstream stream, double microseconds) const;

  const std::string& arch() const { return arch_; }

 private:
  std::string arch_;
  Module module_, flush_module_;
  CUfunction epilogue_f32_ = nullptr, epilogue_f16_ = nullptr, epilogue_bf16_ = nullptr;
  CUfunction flush_ = nullptr, spin_ = nullptr;
  CUfunction im2col_32_ = nullptr, im2col_16_ = nullptr;
  int blocks_cap_ = 1024;
  mutable unsigned flush_value_ = 0;
};

}  // namespace dietcode

// Shared by the GPU tests of the GEMM templates (fp32 dense, batch_matmul and conv2d; the 16-bit
// tensor-core dense templates): the GPU the test runs on (or why there is none), device
// buffers, compiling generated kernels for it in parallel, and launching one the way its
// LaunchPlan says. Tests skip without a GPU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../../templates/dietcode_args.h"
#include "codegen/generated_kernel.h"
#include "cuda/driver.h"
#include "nvrtc/dense_f32_nvrtc.h"
#include "space/gpu_spec.h"

namespace dietcode::testing {

struct TestGpu {
  std::string error;  // empty when usable
  std::string arch;   // "sm_90"
  GpuSpec spec;       // cc_major, cc_minor and smem_per_block_optin filled in
  const Driver* d = nullptr;
};

// Device 0 with its primary context current on the calling thread, or why not.
const TestGpu& test_gpu();

// A device allocation that grows on demand and frees itself.
class GpuBuffer {
 public:
  GpuBuffer() = default;
  GpuBuffer(const GpuBuffer&) = delete;
  GpuBuffer& operator=(const GpuBuffer&) = delete;
  ~GpuBuffer();
  // Returns an error text, empty on success.
  std::string reserve(size_t bytes);
  template <typename T>
  std::string upload(const std::vector<T>& host) {
    return upload_bytes(host.data(), host.size() * sizeof(T));
  }
  template <typename T>
  std::string download(std::vector<T>& host, size_t count) const {
    host.resize(count);
    return download_bytes(host.data(), count * sizeof(T));
  }
  std::string upload_bytes(const void* host, size_t bytes);
  std::string download_bytes(void* host, size_t bytes) const;
  std::string fill_nan(size_t count);  // count fp32 NaNs
  std::string fill_bytes(unsigned char value, size_t bytes);
  CUdeviceptr ptr() const { return ptr_; }
  void* as_arg() const { return reinterpret_cast<void*>(ptr_); }

 private:
  CUdeviceptr ptr_ = 0;
  size_t bytes_ = 0;
};

// A generated kernel compiled for the test GPU.
struct CompiledKernel {
  std::string label;
  GeneratedKernel kernel;
  NvrtcBuild build;
};

// Compiles every kernel at once (NVRTC compiles independent programs in parallel), each for the
// arch compile_arch() names for the test GPU.
void compile_all(std::vector<CompiledKernel>& kernels);

// Loads the kernel, launches it (and its split-K reduction) for `shape` with `args` (the
// workspace is supplied here when the plan needs one) and waits. Returns an error text, empty
// on success.
std::string launch_and_wait(const CompiledKernel& k, DietcodeArgs args, const GemmShape& shape);

// launch_and_wait for a dense layer, Y[M,N] = epilogue(X[M,K] . W[N,K]^T + bias[N]), with its
// operands in device buffers.
std::string launch_dense(const CompiledKernel& k, const GpuBuffer& x, const GpuBuffer& w,
                         const GpuBuffer& bias, const GpuBuffer& y, int64_t M, int64_t N,
                         int64_t K);

// Runs a dense kernel three times into one output; "" when every run wrote the same
// M * N * element_bytes bytes as the first, else what differed or went wrong.
std::string dense_runs_agree_bitwise(const CompiledKernel& k, const GpuBuffer& x,
                                     const GpuBuffer& w, const GpuBuffer& bias, int64_t M,
                                     int64_t N, int64_t K, size_t element_bytes);

std::vector<float> random_floats(size_t n, uint32_t seed);

}  // namespace dietcode::testing

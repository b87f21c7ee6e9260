// Shared by the GPU tests of the fp32 GEMM templates (batch_matmul, conv2d): the GPU the test
// runs on (or why there is none), device buffers, compiling generated kernels for it in
// parallel, and launching one the way its LaunchPlan says. Tests skip without a GPU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../../templates/dietcode_args.h"
#include "codegen/generated_kernel.h"
#include "cuda/driver.h"
#include "nvrtc/dense_f32_nvrtc.h"

namespace dietcode::testing {

struct TestGpu {
  std::string error;  // empty when usable
  std::string arch;   // "sm_90"
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
  std::string upload(const std::vector<float>& host);
  std::string download(std::vector<float>& host, size_t count) const;
  std::string fill_nan(size_t count);
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

// Compiles every kernel at once (NVRTC compiles independent programs in parallel).
void compile_all(std::vector<CompiledKernel>& kernels);

// Loads the kernel, launches it (and its split-K reduction) for `shape` with `args` (the
// workspace is supplied here when the plan needs one) and waits. Returns an error text, empty
// on success.
std::string launch_and_wait(const CompiledKernel& k, DietcodeArgs args, const GemmShape& shape);

std::vector<float> random_floats(size_t n, uint32_t seed);

}  // namespace dietcode::testing

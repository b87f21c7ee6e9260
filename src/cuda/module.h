// A CUBIN or PTX image loaded into the current context, unloaded on destruction, and the
// kernel attributes the measurer and the pack runtime set and read.
#pragma once

#include <cuda.h>

#include <string>

namespace dietcode {

class Module {
 public:
  Module() = default;
  // Loads `image` (CUBIN bytes, or PTX text which the driver JIT-compiles) into the current
  // context. `what` names it in errors. A failure throws CudaError whose message ends with the
  // JIT's log, because "CUDA_ERROR_INVALID_PTX" alone does not say which line is wrong.
  explicit Module(const std::string& image, const std::string& what = "module");
  ~Module();

  Module(Module&& other) noexcept;
  Module& operator=(Module&& other) noexcept;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // The kernel named `entry` (its extern "C" name). Throws CudaError CUDA_ERROR_NOT_FOUND.
  CUfunction function(const std::string& entry) const;

  CUmodule get() const { return module_; }

 private:
  void unload() noexcept;

  CUmodule module_ = nullptr;
  std::string what_;
};

// Lets `kernel` use up to `bytes` of dynamic shared memory: above 48 KiB a kernel must opt in.
void set_max_dynamic_smem(CUfunction kernel, int bytes);

// A compiled property of `kernel`: registers per thread, static shared memory, local bytes...
int function_attribute(CUfunction kernel, CUfunction_attribute attribute);

}  // namespace dietcode

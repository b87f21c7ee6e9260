// A device's primary context, retained for the object's lifetime.
//
// Why the primary context: it is the one context per device that the CUDA runtime, cuBLAS and
// frameworks share, so kernels loaded by dietcode and by a program using a pack live side by
// side, and CUDA 13's cuCtxCreate signature change does not concern us.
#pragma once

#include <cuda.h>

namespace dietcode {

class PrimaryContext {
 public:
  // Retains device `ordinal`'s primary context and makes it current on the calling thread.
  // Throws EnvironmentError when there is no driver or no such device, CudaError otherwise.
  explicit PrimaryContext(int ordinal = 0);
  ~PrimaryContext();

  PrimaryContext(PrimaryContext&& other) noexcept;
  PrimaryContext& operator=(PrimaryContext&& other) noexcept;
  PrimaryContext(const PrimaryContext&) = delete;
  PrimaryContext& operator=(const PrimaryContext&) = delete;

  // A context is current per thread: every other thread that uses this GPU calls this first.
  void make_current() const;
  void synchronize() const;  // waits for all work in the context

  CUcontext get() const { return context_; }
  CUdevice device() const { return device_; }
  int ordinal() const { return ordinal_; }

 private:
  void release() noexcept;

  int ordinal_ = -1;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
};

}  // namespace dietcode

// A CUDA stream owned by an object. Non-blocking with respect to the legacy default stream,
// so timing one candidate is not serialised behind unrelated work on stream 0.
#pragma once

#include <cuda.h>

namespace dietcode {

class Stream {
 public:
  Stream();  // in the current context; throws CudaError
  ~Stream();

  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  void synchronize() const;
  CUstream get() const { return stream_; }

 private:
  void destroy() noexcept;

  CUstream stream_ = nullptr;
};

}  // namespace dietcode

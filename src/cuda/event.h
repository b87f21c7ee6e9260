// A timing event owned by an object: the GPU-side clock the measurer reads kernel times from.
#pragma once

#include <cuda.h>

namespace dietcode {

class Event {
 public:
  Event();  // a timing event in the current context; throws CudaError
  ~Event();

  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  void record(CUstream stream) const;  // null = the legacy default stream
  void synchronize() const;            // waits until the GPU has passed the recorded point
  CUevent get() const { return event_; }

  // Milliseconds between two recorded events, ~0.5 us resolution; waits for `end` first.
  static float elapsed_ms(const Event& start, const Event& end);

 private:
  void destroy() noexcept;

  CUevent event_ = nullptr;
};

}  // namespace dietcode

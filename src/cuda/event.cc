#include "cuda/event.h"

#include <utility>

#include "cuda/driver.h"

namespace dietcode {

Event::Event() { check(driver().cuEventCreate(&event_, CU_EVENT_DEFAULT), "cuEventCreate"); }

Event::~Event() { destroy(); }

Event::Event(Event&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    destroy();
    event_ = std::exchange(other.event_, nullptr);
  }
  return *this;
}

void Event::record(CUstream stream) const {
  check(driver().cuEventRecord(event_, stream), "cuEventRecord");
}

void Event::synchronize() const {
  check(driver().cuEventSynchronize(event_), "cuEventSynchronize");
}

float Event::elapsed_ms(const Event& start, const Event& end) {
  end.synchronize();
  float ms = 0.0f;
  check(driver().cuEventElapsedTime(&ms, start.event_, end.event_), "cuEventElapsedTime");
  return ms;
}

void Event::destroy() noexcept {
  if (!event_) return;
  if (const Driver* d = driver_or_null()) d->cuEventDestroy(event_);
  event_ = nullptr;
}

}  // namespace dietcode

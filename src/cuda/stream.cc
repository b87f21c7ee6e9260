#include "cuda/stream.h"

#include <utility>

#include "cuda/driver.h"

namespace dietcode {

Stream::Stream() {
  check(driver().cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
}

Stream::~Stream() { destroy(); }

Stream::Stream(Stream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}

Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    destroy();
    stream_ = std::exchange(other.stream_, nullptr);
  }
  return *this;
}

void Stream::synchronize() const {
  check(driver().cuStreamSynchronize(stream_), "cuStreamSynchronize");
}

void Stream::destroy() noexcept {
  if (!stream_) return;
  if (const Driver* d = driver_or_null()) d->cuStreamDestroy(stream_);
  stream_ = nullptr;
}

}  // namespace dietcode

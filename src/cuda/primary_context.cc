#include "cuda/primary_context.h"

#include <string>
#include <utility>

#include "cuda/driver.h"

namespace dietcode {

PrimaryContext::PrimaryContext(int ordinal) : ordinal_(ordinal) {
  const Driver& d = driver();
  int count = 0;
  check(d.cuDeviceGetCount(&count), "cuDeviceGetCount");
  if (ordinal < 0 || ordinal >= count) {
    throw EnvironmentError("no CUDA device " + std::to_string(ordinal) + ": the driver sees " +
                           std::to_string(count) + (count == 1 ? " GPU" : " GPUs"));
  }
  check(d.cuDeviceGet(&device_, ordinal), "cuDeviceGet");
  check(d.cuDevicePrimaryCtxRetain(&context_, device_), "cuDevicePrimaryCtxRetain");
  try {
    make_current();
  } catch (...) {
    release();
    throw;
  }
}

PrimaryContext::~PrimaryContext() { release(); }

PrimaryContext::PrimaryContext(PrimaryContext&& other) noexcept
    : ordinal_(other.ordinal_),
      device_(other.device_),
      context_(std::exchange(other.context_, nullptr)) {}

PrimaryContext& PrimaryContext::operator=(PrimaryContext&& other) noexcept {
  if (this != &other) {
    release();
    ordinal_ = other.ordinal_;
    device_ = other.device_;
    context_ = std::exchange(other.context_, nullptr);
  }
  return *this;
}

void PrimaryContext::make_current() const {
  check(driver().cuCtxSetCurrent(context_), "cuCtxSetCurrent");
}

void PrimaryContext::synchronize() const {
  make_current();
  check(driver().cuCtxSynchronize(), "cuCtxSynchronize");
}

void PrimaryContext::release() noexcept {
  if (!context_) return;
  // Errors are ignored: at process exit the driver may already be shutting down.
  if (const Driver* d = driver_or_null()) d->cuDevicePrimaryCtxRelease(device_);
  context_ = nullptr;
}

}  // namespace dietcode

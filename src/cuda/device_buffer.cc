#include "cuda/device_buffer.h"

#include <stdexcept>
#include <string>
#include <utility>

#include "cuda/driver.h"

namespace dietcode {

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  // cuMemAlloc rejects zero bytes; an empty tensor is legitimate, so it gets no memory.
  if (bytes > 0) check(driver().cuMemAlloc(&ptr_, bytes), "cuMemAlloc");
}

DeviceBuffer::~DeviceBuffer() { free(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : ptr_(std::exchange(other.ptr_, 0)), bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    free();
    ptr_ = std::exchange(other.ptr_, 0);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void DeviceBuffer::check_range(size_t bytes, size_t offset, const char* what) const {
  if (offset > bytes_ || bytes > bytes_ - offset) {
    throw std::out_of_range(std::string("DeviceBuffer::") + what + ": " + std::to_string(bytes) +
                            " bytes at offset " + std::to_string(offset) + " exceed the " +
                            std::to_string(bytes_) + "-byte buffer");
  }
}

void DeviceBuffer::upload(const void* host, size_t bytes, size_t offset) {
  check_range(bytes, offset, "upload");
  if (bytes > 0) check(driver().cuMemcpyHtoD(ptr_ + offset, host, bytes), "cuMemcpyHtoD");
}

void DeviceBuffer::download(void* host, size_t bytes, size_t offset) const {
  check_range(bytes, offset, "download");
  if (bytes > 0) check(driver().cuMemcpyDtoH(host, ptr_ + offset, bytes), "cuMemcpyDtoH");
}

void DeviceBuffer::fill_bytes(unsigned char value) {
  if (bytes_ > 0) check(driver().cuMemsetD8(ptr_, value, bytes_), "cuMemsetD8");
}

void DeviceBuffer::fill_words(uint32_t value) {
  if (bytes_ % 4 != 0) {
    throw std::invalid_argument("DeviceBuffer::fill_words: " + std::to_string(bytes_) +
                                " bytes is not a whole number of 32-bit words");
  }
  if (bytes_ > 0) check(driver().cuMemsetD32(ptr_, value, bytes_ / 4), "cuMemsetD32");
}

void DeviceBuffer::free() noexcept {
  if (!ptr_) return;
  if (const Driver* d = driver_or_null()) d->cuMemFree(ptr_);  // at exit the driver may be gone
  ptr_ = 0;
  bytes_ = 0;
}

}  // namespace dietcode

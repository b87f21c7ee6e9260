// Device memory owned by an object: allocated in the current context, freed on destruction.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dietcode {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  // Allocates `bytes` in the current context (a zero-byte buffer allocates nothing).
  // Throws CudaError (CUDA_ERROR_OUT_OF_MEMORY, ...) on failure.
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();

  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  CUdeviceptr ptr() const { return ptr_; }
  size_t bytes() const { return bytes_; }

  // Synchronous copies of `bytes` at byte `offset`; a range past the end is our bug and
  // throws std::out_of_range.
  void upload(const void* host, size_t bytes, size_t offset = 0);
  void download(void* host, size_t bytes, size_t offset = 0) const;

  void fill_bytes(unsigned char value);  // every byte
  void fill_words(uint32_t value);       // every 32-bit word; bytes() must be a multiple of 4

  template <typename T>
  void upload(const std::vector<T>& host) {
    upload(host.data(), host.size() * sizeof(T));
  }
  template <typename T>
  std::vector<T> download() const {
    std::vector<T> host(bytes_ / sizeof(T));
    download(host.data(), host.size() * sizeof(T));
    return host;
  }

 private:
  void check_range(size_t bytes, size_t offset, const char* what) const;
  void free() noexcept;

  CUdeviceptr ptr_ = 0;
  size_t bytes_ = 0;
};

}  // namespace dietcode

#include "bench/cpu_cache_evictor.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "common/error.h"
#include "x86/cpu_thread_pool.h"

namespace dietcode {

namespace {

constexpr int64_t kLine = 64;

void write_lines(unsigned char* begin, unsigned char* end, unsigned char value) {
  volatile unsigned char* p = begin;
  for (int64_t at = 0; at < end - begin; at += kLine) p[at] = value;
}

}  // namespace

int64_t eviction_bytes(int64_t last_level_cache_bytes, int64_t cap) {
  const int64_t want = last_level_cache_bytes > 0 ? std::min(2 * last_level_cache_bytes, cap) : cap;
  return (std::max<int64_t>(want, 0) + kLine - 1) / kLine * kLine;
}

CpuCacheEvictor::CpuCacheEvictor(int64_t bytes, int threads)
    : bytes_(bytes), threads_(std::max(1, threads)), cpus_(CpuThreadPool::close_placement(threads_)) {
  if (bytes_ <= 0) return;
  const size_t rounded = (size_t(bytes_) + 4095) / 4096 * 4096;
  data_ = static_cast<unsigned char*>(std::aligned_alloc(4096, rounded));
  if (!data_)
    throw EnvironmentError("out of memory for a " + std::to_string(bytes_) +
                           "-byte cache eviction buffer");
  std::memset(data_, 0, size_t(bytes_));  // fault the pages in now, not in the first eviction
}

CpuCacheEvictor::~CpuCacheEvictor() { std::free(data_); }

void CpuCacheEvictor::evict() {
  if (!data_) return;
  ++round_;
  const int64_t slice = (bytes_ / threads_ + kLine - 1) / kLine * kLine;
  auto part = [&](int t) {
    const int64_t begin = std::min(bytes_, t * slice), end = std::min(bytes_, begin + slice);
    write_lines(data_ + begin, data_ + end, round_);
  };
  std::vector<std::thread> helpers;
  for (int t = 1; t < threads_; ++t)
    helpers.emplace_back([&, t] {
      CpuThreadPool::pin_self(cpus_[size_t(t) % cpus_.size()]);  // best effort
      part(t);
    });
  part(0);
  for (std::thread& helper : helpers) helper.join();
}

}  // namespace dietcode

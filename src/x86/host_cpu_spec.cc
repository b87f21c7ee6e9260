#include "x86/host_cpu_spec.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <vector>

namespace dietcode {

namespace {

// Buffer for the bandwidth probe: 4x a 32 MB L3, but no more than the cap a VM needs (one of
// our guests reports the whole socket's 480 MB L3, which no single VM streams from anyway).
constexpr int64_t kProbeBytes = int64_t(128) << 20;

std::atomic<double> g_sink{0};

// Sums [begin, end) with four independent 2-double SSE2 accumulators: enough loads in flight
// to reach the memory bandwidth on one core without needing AVX.
double sum_range(const double* begin, const double* end) {
  __m128d a = _mm_setzero_pd(), b = a, c = a, d = a;
  for (const double* p = begin; p + 8 <= end; p += 8) {
    a = _mm_add_pd(a, _mm_load_pd(p));
    b = _mm_add_pd(b, _mm_load_pd(p + 2));
    c = _mm_add_pd(c, _mm_load_pd(p + 4));
    d = _mm_add_pd(d, _mm_load_pd(p + 6));
  }
  double lanes[2];
  _mm_storeu_pd(lanes, _mm_add_pd(_mm_add_pd(a, b), _mm_add_pd(c, d)));
  return lanes[0] + lanes[1];
}

}  // namespace

double memory_read_gbs(int threads, int64_t bytes) {
  threads = std::max(1, threads);
  const size_t count = size_t(bytes / int64_t(sizeof(double))) & ~size_t(7);
  double* data = static_cast<double*>(std::aligned_alloc(64, count * sizeof(double)));
  if (!data) return 0;
  auto slice = [&](int t, size_t* lo, size_t* hi) {
    *lo = count * size_t(t) / size_t(threads) & ~size_t(7);
    *hi = count * size_t(t + 1) / size_t(threads) & ~size_t(7);
  };
  // Run 0 faults each thread's own pages in (first touch) and is not counted.
  constexpr int kRuns = 4;
  const std::vector<double> runs = time_pinned_runs(threads, kRuns, [&](int t, int run) {
    size_t lo, hi;
    slice(t, &lo, &hi);
    if (run == 0) std::fill(data + lo, data + hi, 1.0);
    g_sink.store(sum_range(data + lo, data + hi), std::memory_order_relaxed);
  });
  std::free(data);
  double best = 0;
  for (int run = 1; run < kRuns; ++run)
    if (runs[size_t(run)] > 0)
      best = std::max(best, double(count * sizeof(double)) / runs[size_t(run)] * 1e-9);
  return best;
}

CpuSpec host_cpu_spec(const HostCpu& cpu, int threads) {
  CpuSpec spec;
  spec.name = cpu.model_name;
  spec.isa_level = cpu.isa_level;
  spec.threads = threads > 0 ? threads : cpu.logical_cores;
  if (cpu.caches.l1d > 0) spec.l1d_bytes = cpu.caches.l1d;
  if (cpu.caches.l2 > 0) spec.l2_bytes = cpu.caches.l2;
  if (cpu.caches.l3 > 0) spec.l3_bytes = cpu.caches.l3;
  if (cpu.avx2 && cpu.fma) spec.gflops_per_thread_256 = cpu.fp32_peak_gflops(1, 256);
  if (cpu.avx512f) spec.gflops_per_thread_512 = cpu.fp32_peak_gflops(1, 512);
  const double measured = memory_read_gbs(spec.threads, kProbeBytes);
  if (measured > 0) spec.mem_bandwidth_gbs = measured;
  return spec;
}

}  // namespace dietcode

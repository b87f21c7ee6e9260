#include "nvrtc/parallel_compile.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <thread>

namespace dietcode {

int default_compile_jobs() {
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

std::vector<CompileResult> compile_all(Compiler& compiler,
                                       const std::vector<CompileRequest>& requests,
                                       const ParallelCompileOptions& options, CompileStats* stats) {
  auto start = std::chrono::steady_clock::now();
  std::vector<CompileResult> results(requests.size());
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex mutex;  // guards first_error and on_done
  std::exception_ptr first_error;

  // Requests are handed out one at a time rather than in fixed slices: compile times vary
  // several-fold between candidates, and a fixed split would leave threads idle.
  auto worker = [&] {
    while (!stop) {
      size_t i = next++;
      if (i >= requests.size()) return;
      try {
        results[i] = compiler.compile(requests[i]);
        if (options.on_done) {
          std::lock_guard<std::mutex> lock(mutex);
          options.on_done(i, results[i]);
        }
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex);
        if (!first_error) first_error = std::current_exception();
        stop = true;
      }
    }
  };

  int jobs = options.jobs > 0 ? options.jobs : default_compile_jobs();
  jobs = static_cast<int>(std::min<size_t>(size_t(jobs), std::max<size_t>(requests.size(), 1)));
  if (jobs == 1) {
    worker();  // no thread for the common one-job case, so stacks and debuggers stay simple
  } else {
    std::vector<std::thread> threads;
    for (int t = 0; t < jobs; ++t) threads.emplace_back(worker);
    for (std::thread& thread : threads) thread.join();
  }
  if (first_error) std::rethrow_exception(first_error);

  if (stats) {
    *stats = CompileStats{};
    stats->kernels = int(results.size());
    for (const CompileResult& r : results) {
      stats->failed += r.ok ? 0 : 1;
      stats->cache_hits += r.cache_hit ? 1 : 0;
      stats->nvrtc_seconds += r.seconds;
    }
    stats->wall_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  return results;
}

}  // namespace dietcode

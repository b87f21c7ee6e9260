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

  int jobs = options.jobs > 0 ? options.jobs : default_compile_jobs();
  // Requests are handed out a chunk at a time rather than in fixed slices: compile times vary
  // several-fold between candidates, and a fixed split would leave threads idle. A chunk is
  // one request, or for a compiler that batches, up to its preferred batch but no more than
  // an even share per job, so every job gets work.
  const size_t share = (requests.size() + size_t(std::max(jobs, 1)) - 1) / size_t(std::max(jobs, 1));
  const size_t chunk =
      std::max<size_t>(1, std::min<size_t>(size_t(std::max(compiler.preferred_batch(), 1)), share));
  auto worker = [&] {
    while (!stop) {
      const size_t first = next.fetch_add(chunk);
      if (first >= requests.size()) return;
      const size_t last = std::min(requests.size(), first + chunk);
      try {
        if (chunk == 1) {
          results[first] = compiler.compile(requests[first]);
        } else {
          std::vector<CompileRequest> batch(requests.begin() + long(first),
                                            requests.begin() + long(last));
          std::vector<CompileResult> done = compiler.compile_batch(batch);
          for (size_t i = first; i < last; ++i) results[i] = std::move(done[i - first]);
        }
        if (options.on_done) {
          std::lock_guard<std::mutex> lock(mutex);
          for (size_t i = first; i < last; ++i) options.on_done(i, results[i]);
        }
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex);
        if (!first_error) first_error = std::current_exception();
        stop = true;
      }
    }
  };

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

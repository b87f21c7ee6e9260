// Two DietcodeCpuRuntime implementations for tests and benchmarks of the x86 templates (the
// production pool is src/x86/cpu_thread_pool.h; kernels see only the C contract):
//   SerialRuntime      threads = 1, runs tasks in a loop on the caller.
//   SimpleThreadPool   a persistent std::thread pool: threads-1 helpers plus the caller (worker
//                      0), tasks claimed from one atomic counter, helpers spin briefly and then
//                      sleep on a condition variable between calls.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "dietcode_cpu.h"

namespace dc_x86 {

inline void serial_parallel_for(void*, int n_tasks, DietcodeCpuTask task, void* ctx) {
  for (int i = 0; i < n_tasks; ++i) task(ctx, i, 0);
}

inline DietcodeCpuRuntime serial_runtime() {
  DietcodeCpuRuntime rt;
  rt.threads = 1;
  rt.pool = nullptr;
  rt.parallel_for = &serial_parallel_for;
  return rt;
}

class SimpleThreadPool {
 public:
  explicit SimpleThreadPool(int threads) : threads_(threads < 1 ? 1 : threads) {
    for (int id = 1; id < threads_; ++id) helpers_.emplace_back([this, id] { loop(id); });
  }
  ~SimpleThreadPool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      generation_.fetch_add(1);
    }
    cv_.notify_all();
    for (auto& t : helpers_) t.join();
  }
  SimpleThreadPool(const SimpleThreadPool&) = delete;
  SimpleThreadPool& operator=(const SimpleThreadPool&) = delete;

  DietcodeCpuRuntime runtime() {
    DietcodeCpuRuntime rt;
    rt.threads = threads_;
    rt.pool = this;
    rt.parallel_for = &SimpleThreadPool::parallel_for_c;
    return rt;
  }

  void parallel_for(int n_tasks, DietcodeCpuTask task, void* ctx) {
    if (n_tasks <= 0) return;
    if (threads_ == 1 || n_tasks == 1) {
      for (int i = 0; i < n_tasks; ++i) task(ctx, i, 0);
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      task_ = task;
      ctx_ = ctx;
      n_tasks_ = n_tasks;
      next_.store(0);
      done_.store(0);
      generation_.fetch_add(1, std::memory_order_release);
    }
    cv_.notify_all();
    run(0);
    while (done_.load(std::memory_order_acquire) < n_tasks_) std::this_thread::yield();
    // Every helper must have left run() before the job fields may be overwritten.
    while (active_.load(std::memory_order_acquire) != 0) std::this_thread::yield();
  }

 private:
  static void parallel_for_c(void* pool, int n, DietcodeCpuTask task, void* ctx) {
    static_cast<SimpleThreadPool*>(pool)->parallel_for(n, task, ctx);
  }
  void run(int worker) {
    for (int i; (i = next_.fetch_add(1)) < n_tasks_;) {
      task_(ctx_, i, worker);
      done_.fetch_add(1, std::memory_order_acq_rel);
    }
  }
  void loop(int id) {
    unsigned seen = 0;
    for (;;) {
      for (int spin = 0; generation_.load(std::memory_order_acquire) == seen && spin < 20000; ++spin)
        __builtin_ia32_pause();
      if (generation_.load(std::memory_order_acquire) == seen) {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return generation_.load() != seen; });
      }
      std::unique_lock<std::mutex> lock(mu_);
      seen = generation_.load();
      if (stop_) return;
      active_.fetch_add(1);
      lock.unlock();
      run(id);
      active_.fetch_sub(1, std::memory_order_acq_rel);
    }
  }

  int threads_;
  std::vector<std::thread> helpers_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<unsigned> generation_{0};
  std::atomic<int> next_{0}, done_{0}, active_{0};
  DietcodeCpuTask task_ = nullptr;
  void* ctx_ = nullptr;
  int n_tasks_ = 0;
  bool stop_ = false;
};

}  // namespace dc_x86

// CpuThreadPool: the persistent pool every generated CPU kernel runs its tasks on, behind the
// plain-C contract of templates/x86/dietcode_cpu.h (DietcodeCpuRuntime::parallel_for).
//
// Header-only and dependent on nothing but the C++ standard library, pthreads, dlsym and the
// contract header, because kernel packs embed this file verbatim in their runtime; the tuner's CPU
// measurement worker (cpu_worker.cc) uses the very same code, so tuned timings include the
// pool's real overhead, wake-ups included (wait_until_workers_sleep).
//
//   CpuThreadPool pool({.threads = 4, .pin = true});
//   DietcodeCpuRuntime rt = pool.runtime();       // rt.threads == 4
//   kernel(&args, &rt);                           // kernel calls rt.parallel_for(rt.pool, ...)
//
// Model: threads - 1 pool threads (worker ids 1 .. threads-1) plus the calling thread (worker id
// 0), which always works too. Task indices are handed out dynamically from one atomic ticket, so
// uneven tasks balance themselves. Between calls a pool thread spins for spin_microseconds
// (back-to-back calls of a multi-layer model or a timing loop then cost no wake-up) and then
// sleeps on a condition variable (a futex), so an idle pool burns no CPU.
//
// Concurrency: parallel_for may be called from several threads at once on the same pool; calls
// are serialized by a mutex (each caller becomes worker 0 of its own call, in turn). A task must
// not call parallel_for on its own pool: that would wait for itself.
//
// Placement. The pool's CPUs are those of the constructing thread's affinity mask and of the
// OpenMP runtime's places (usable_cpus), or every online CPU when those are fewer than the
// pool's threads, in order from the CPU the constructing thread runs on.
// - Pinning (pin = true): pool thread i is bound to the i-th of them after the caller's CPU
//   (pthread_setaffinity_np), wrapping around when there are more threads than CPUs: "close"
//   placement, as OMP_PROC_BIND=close gives an OpenMP team.
// - Not pinning (pin = false): the pool threads may run on every one of them but the caller's,
//   and the scheduler places them within that mask.
// The caller is not touched, because it is the caller's thread; a program that owns its main
// thread (the measurement worker) calls pin_caller() to bind it to the first CPU of the
// placement, its current one. Left to the scheduler, two things go wrong:
// - A thread inherits the mask of the thread that made it. When an OpenMP runtime has bound
//   that one to a single CPU, every pool thread would share it: a pack would run at 1/threads
//   of its speed in any program that sets OMP_PROC_BIND.
// - On virtual machines whose idle vCPUs halt (KVM guests, where an idle vCPU reads as
//   preempted), Linux queues a thread woken from sleep on its waker's CPU and runs it only
//   when the waker blocks: the caller then runs every task alone. On a 2-vCPU guest, calls of
//   two 300 us tasks with the pool asleep took 600 us (libgomp with sleeping threads, the
//   same), 330 us with the caller's CPU out of the workers' masks. A pool thread pinned to
//   the CPU an unbound caller has moved to is queued behind it the same way.
// So placement follows the caller: its CPU is read per call (sched_getcpu, no system call), and
// the pool threads are placed again, one system call each, only when it has moved.
//
// Fast paths: n_tasks <= 0 returns at once; n_tasks == 1 (or a pool of one thread) runs inline
// on the caller, waking nobody.
#pragma once

#ifndef DIETCODE_CPU_H_  // a pack's runtime may paste the contract in above this file
#if __has_include("../../templates/x86/dietcode_cpu.h")
#include "../../templates/x86/dietcode_cpu.h"
#else
#include "x86/dietcode_cpu.h"  // with the templates directory on the include path
#endif
#endif

#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace dietcode {

struct CpuThreadPoolOptions {
  int threads = 0;             // workers including the caller; <= 0: every CPU we may run on
  bool pin = false;            // bind pool thread i to the i-th CPU of the affinity mask
  int spin_microseconds = 20;  // how long an idle pool thread polls before it sleeps
};

class CpuThreadPool {
 public:
  explicit CpuThreadPool(CpuThreadPoolOptions options = {}) : options_(options) {
    threads_ =
        options_.threads > 0 ? options_.threads : int(std::max<size_t>(1, usable_cpus().size()));
    cpus_ = close_placement(threads_);
    workers_.reserve(size_t(threads_ - 1));
    for (int id = 1; id < threads_; ++id) workers_.emplace_back([this, id] { work(id); });
    place_workers(sched_getcpu());
  }

  ~CpuThreadPool() {
    {
      std::lock_guard<std::mutex> call(call_mutex_);  // let a running call finish
      std::lock_guard<std::mutex> lock(sleep_mutex_);
      stop_.store(true);
    }
    wake_.notify_all();
    for (std::thread& t : workers_) t.join();
  }

  CpuThreadPool(const CpuThreadPool&) = delete;
  CpuThreadPool& operator=(const CpuThreadPool&) = delete;

  int threads() const { return threads_; }
  // Pinning: the CPUs in placement order from the last caller's, worker i (i >= 1) bound to
  // placement()[i % size]; empty when not pinning.
  std::vector<int> placement() const {
    std::vector<int> order;
    if (!options_.pin) return order;
    const size_t first = first_.load(std::memory_order_relaxed);
    for (size_t i = 0; i < cpus_.size(); ++i) order.push_back(cpus_[(first + i) % cpus_.size()]);
    return order;
  }

  // The pool through the C contract; valid while the pool lives.
  DietcodeCpuRuntime runtime() {
    DietcodeCpuRuntime rt;
    rt.threads = threads_;
    rt.pool = this;
    rt.parallel_for = &CpuThreadPool::parallel_for_c;
    return rt;
  }

  // Runs task(ctx, i, worker) for every i in [0, n_tasks), the caller being worker 0, and returns
  // when all are done. Serialized against other callers of the same pool.
  void parallel_for(int n_tasks, DietcodeCpuTask task, void* ctx) {
    if (n_tasks <= 0) return;
    if (n_tasks == 1 || threads_ == 1) {
      std::lock_guard<std::mutex> call(call_mutex_);  // worker 0 belongs to one caller at a time
      for (int i = 0; i < n_tasks; ++i) task(ctx, i, 0);
      return;
    }
    std::lock_guard<std::mutex> call(call_mutex_);
    const int here = sched_getcpu();
    if (here != placed_for_) place_workers(here);
    // Publish the job, then the ticket that makes it visible (see claim()).
    task_.store(task, std::memory_order_relaxed);
    ctx_.store(ctx, std::memory_order_relaxed);
    n_tasks_.store(n_tasks, std::memory_order_relaxed);
    completed_.store(0, std::memory_order_relaxed);
    const uint64_t generation = (ticket_.load(std::memory_order_relaxed) >> 32) + 1;
    ticket_.store(generation << 32, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) {
      std::lock_guard<std::mutex> lock(sleep_mutex_);  // a sleeper between its check and its wait
      wake_.notify_all();                              // holds this lock: it cannot miss us
    }
    run_tasks(generation, 0);
    // Tasks others claimed may still be running: wait for them, politely when it takes long.
    for (int spins = 0; completed_.load(std::memory_order_acquire) < n_tasks; ++spins) {
      if (spins < 4096)
        cpu_relax();
      else
        std::this_thread::yield();
    }
  }

  // Waits until every pool thread has stopped spinning and sleeps (or is about to, on the
  // condition variable), polling every 20 us, for at most max_microseconds. Returns whether they
  // all did. The measurement worker calls it before each timed call, so that a kernel is timed
  // from the state `dietcode bench` times a pack from: its pool's threads woken from sleep, their
  // wake-up in the time (tens of microseconds on a virtual machine, which matters to kernels of
  // a few hundred).
  bool wait_until_workers_sleep(int max_microseconds) const {
    const auto until =
        std::chrono::steady_clock::now() + std::chrono::microseconds(max_microseconds);
    while (sleepers_.load(std::memory_order_seq_cst) < threads_ - 1) {
      if (std::chrono::steady_clock::now() >= until) return false;
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    return true;
  }

  // Binds the calling thread to the first CPU of the placement, the one the pool threads were
  // last placed after (pin = true; otherwise does nothing). Returns false when the kernel refused.
  bool pin_caller() const {
    if (!options_.pin) return true;
    return pin_self(placement()[0]);
  }

  // The pool's CPUs for `threads` workers, the calling thread's first: see "Placement" above.
  static std::vector<int> close_placement(int threads) {
    std::vector<int> cpus = usable_cpus();
    if (int(cpus.size()) < threads) {
      const long online = sysconf(_SC_NPROCESSORS_ONLN);
      if (online > long(cpus.size())) {
        cpus.clear();
        for (long cpu = 0; cpu < online && cpu < CPU_SETSIZE; ++cpu) cpus.push_back(int(cpu));
      }
    }
    const int here = sched_getcpu();
    const auto first = std::find(cpus.begin(), cpus.end(), here);
    if (first != cpus.end()) std::rotate(cpus.begin(), first, cpus.end());
    return cpus;
  }

  // Whether DIETCODE_CPU_BIND asks a pack's pool to bind its threads: "1", "true" or "close"
  // do; unset, "0", "false" or anything else leave them to the scheduler.
  static bool binding_requested_by_environment() {
    const char* value = std::getenv("DIETCODE_CPU_BIND");
    if (!value) return false;
    const std::string text = value;
    return text == "1" || text == "true" || text == "close";
  }

  // DIETCODE_CPU_SPIN_US: how long a pack's pool threads poll for the next launch before they
  // sleep, in microseconds, 0 to 1000000 written in decimal digits; unset or anything else:
  // `fallback`.
  static int spin_microseconds_from_environment(int fallback) {
    const char* value = std::getenv("DIETCODE_CPU_SPIN_US");
    if (!value || !*value) return fallback;
    long us = 0;
    for (const char* c = value; *c; ++c) {
      if (*c < '0' || *c > '9') return fallback;
      us = us * 10 + (*c - '0');
      if (us > 1000000) return fallback;
    }
    return int(us);
  }

  // Binds the calling thread to `cpu`; false when the kernel refused.
  static bool pin_self(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
  }

  // The CPUs this process may run on, in ascending order: the calling thread's affinity mask
  // (sched_getaffinity) and the CPUs of the OpenMP runtime's places, when one is loaded. With
  // OMP_PROC_BIND set, libgomp binds the initial thread to its first place before main() runs
  // (dietcode loads libgomp through XGBoost; a host program may through anything), so the
  // mask alone would be one core and every default thread count 1. The places were made from
  // the mask the process started with.
  static std::vector<int> usable_cpus() {
    std::vector<int> cpus;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) != 0) CPU_ZERO(&set);
    add_openmp_place_cpus(&set);
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
      if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
    if (cpus.empty()) {
      unsigned n = std::max(1u, std::thread::hardware_concurrency());
      for (unsigned cpu = 0; cpu < n; ++cpu) cpus.push_back(int(cpu));
    }
    return cpus;
  }

  // Adds the CPUs of every place of the OpenMP runtime already loaded in this process (the
  // OpenMP 4.5 place API, looked up with dlsym: nothing is loaded or linked for it). The runtime
  // may be in the global scope (linked, or dlopen'ed RTLD_GLOBAL) or loaded RTLD_LOCAL, as
  // Python loads extension modules and their libraries: then it is found by its usual names,
  // with RTLD_NOLOAD, which never loads a library. Looking in the global scope alone, a pack in
  // such a host counted only the one CPU that OMP_PROC_BIND had the runtime bind the main
  // thread to, and ran every launch on a pool of one thread.
  static void add_openmp_place_cpus(cpu_set_t* set) {
    using NumPlaces = int (*)();
    using PlaceNumProcs = int (*)(int);
    using PlaceProcIds = void (*)(int, int*);
    NumPlaces num_places = nullptr;
    PlaceNumProcs num_procs = nullptr;
    PlaceProcIds proc_ids = nullptr;
    // The three functions from one runtime: the global scope's, or a locally loaded one's.
    auto take = [&](void* scope) {
      num_places = reinterpret_cast<NumPlaces>(dlsym(scope, "omp_get_num_places"));
      num_procs = reinterpret_cast<PlaceNumProcs>(dlsym(scope, "omp_get_place_num_procs"));
      proc_ids = reinterpret_cast<PlaceProcIds>(dlsym(scope, "omp_get_place_proc_ids"));
      return num_places && num_procs && proc_ids;
    };
    void* local = nullptr;
    if (!take(RTLD_DEFAULT))
      for (const char* name : {"libgomp.so.1", "libomp.so.5", "libomp.so", "libiomp5.so"}) {
        local = dlopen(name, RTLD_LAZY | RTLD_NOLOAD);
        if (local && take(local)) break;
        if (local) dlclose(local);
        local = nullptr;
      }
    if (!num_places || !num_procs || !proc_ids) return;
    // Held (RTLD_NOLOAD took a reference) until its functions have answered.
    struct Release {
      void* handle;
      ~Release() {
        if (handle) dlclose(handle);
      }
    } release{local};
    const int places = num_places();
    for (int place = 0; place < places; ++place) {
      std::vector<int> ids(size_t(std::max(0, num_procs(place))));
      if (ids.empty()) continue;
      proc_ids(place, ids.data());
      for (int cpu : ids)
        if (cpu >= 0 && cpu < CPU_SETSIZE) CPU_SET(cpu, set);
    }
  }

 private:
  static void parallel_for_c(void* pool, int n_tasks, DietcodeCpuTask task, void* ctx) {
    static_cast<CpuThreadPool*>(pool)->parallel_for(n_tasks, task, ctx);
  }

  static void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }

  // Claims the next task index of `generation`, or -1 when that call has none left (or is over).
  // The ticket is (generation << 32 | next index); a compare-exchange, not a fetch_add, so that a
  // thread still holding an old generation can never consume an index of the next call.
  int claim(uint64_t generation, int n_tasks) {
    uint64_t ticket = ticket_.load(std::memory_order_acquire);
    for (;;) {
      if ((ticket >> 32) != generation) return -1;
      const int index = int(uint32_t(ticket));
      if (index >= n_tasks) return -1;
      if (ticket_.compare_exchange_weak(ticket, ticket + 1, std::memory_order_acq_rel,
                                        std::memory_order_acquire))
        return index;
    }
  }

  void run_tasks(uint64_t generation, int worker) {
    // The job's fields were written before the ticket of `generation` was published, and are
    // rewritten only after every one of its tasks completed, i.e. after claim() can succeed for
    // it: whatever claim() lets through ran against these values.
    DietcodeCpuTask task = task_.load(std::memory_order_relaxed);
    void* ctx = ctx_.load(std::memory_order_relaxed);
    const int n_tasks = n_tasks_.load(std::memory_order_relaxed);
    for (int i; (i = claim(generation, n_tasks)) >= 0;) {
      task(ctx, i, worker);
      completed_.fetch_add(1, std::memory_order_acq_rel);
    }
  }

  // Places the pool threads around the caller's CPU (see "Placement" above). Pinning, a caller
  // on none of the pool's CPUs collides with no pool thread, which then stay where they are.
  // From the constructor, or under call_mutex_.
  void place_workers(int caller_cpu) {
    placed_for_ = caller_cpu;
    const auto at = std::find(cpus_.begin(), cpus_.end(), caller_cpu);
    const size_t n = cpus_.size();
    cpu_set_t set;
    if (options_.pin) {
      if (at == cpus_.end() && workers_placed_) return;
      const size_t first = at == cpus_.end() ? 0 : size_t(at - cpus_.begin());
      first_.store(first, std::memory_order_relaxed);
      for (size_t i = 0; i < workers_.size(); ++i) {
        CPU_ZERO(&set);
        CPU_SET(cpus_[(first + i + 1) % n], &set);
        pthread_setaffinity_np(workers_[i].native_handle(), sizeof(set), &set);
      }
    } else {
      CPU_ZERO(&set);
      for (int cpu : cpus_)
        if (cpu != caller_cpu || n == 1) CPU_SET(cpu, &set);
      for (std::thread& t : workers_) pthread_setaffinity_np(t.native_handle(), sizeof(set), &set);
    }
    workers_placed_ = true;
  }

  void work(int id) {
    uint64_t seen = 0;  // the generation this thread last worked on
    for (;;) {
      uint64_t generation = ticket_.load(std::memory_order_acquire) >> 32;
      if (generation == seen) {
        const auto until = std::chrono::steady_clock::now() +
                           std::chrono::microseconds(options_.spin_microseconds);
        while ((generation = ticket_.load(std::memory_order_acquire) >> 32) == seen &&
               !stop_.load(std::memory_order_relaxed) && std::chrono::steady_clock::now() < until)
          for (int k = 0; k < 32; ++k) cpu_relax();
      }
      if (generation == seen) {
        std::unique_lock<std::mutex> lock(sleep_mutex_);
        sleepers_.fetch_add(1, std::memory_order_seq_cst);
        wake_.wait(lock, [&] {
          return stop_.load() || (ticket_.load(std::memory_order_seq_cst) >> 32) != seen;
        });
        sleepers_.fetch_sub(1, std::memory_order_relaxed);
        if (stop_.load()) return;
        continue;
      }
      if (stop_.load()) return;
      seen = generation;
      run_tasks(generation, id);
    }
  }

  CpuThreadPoolOptions options_;
  int threads_ = 1;
  std::vector<int> cpus_;  // the placement's CPUs, from the constructing thread's (close_placement)
  std::atomic<size_t> first_{0};  // pinning: where in cpus_ the last placement started
  int placed_for_ = -1;           // the caller's CPU the pool threads were last placed around
  bool workers_placed_ = false;
  std::vector<std::thread> workers_;

  std::mutex call_mutex_;  // one parallel_for at a time
  std::atomic<uint64_t> ticket_{0};
  std::atomic<DietcodeCpuTask> task_{nullptr};
  std::atomic<void*> ctx_{nullptr};
  std::atomic<int> n_tasks_{0};
  std::atomic<int> completed_{0};

  std::mutex sleep_mutex_;
  std::condition_variable wake_;
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
};

}  // namespace dietcode

// MeasurePool: several GPUs of one host measuring the jobs of a round at once.
//
// The search compiles a round's kernels once (NVRTC, in parallel) and cuts them into jobs of a
// few kernels each; the pool hands the jobs out one at a time to whichever device is free, so
// a faster device takes more of them, and gives the results back in job order:
//
//   jobs 0 1 2 3 4 5 ──► device threads (one per GPU, each with its own Measurer and worker)
//                           │ results arrive in any order
//                           ▼
//                   ReorderBuffer ──► commit(0), commit(1), ... on the caller's thread
//
// commit(j) runs as soon as job j and every earlier job are done, so the tuning log gets its
// lines in the same order whatever the timing (the same seed gives the same log on one GPU or
// eight), and a run killed mid-round loses only the results waiting behind an unfinished
// earlier job. The search itself sees results only through commit, in job order.
//
// A device whose Measurer throws EnvironmentError (its worker cannot be restarted, the GPU
// fell off the bus) is retired for the rest of the run, and the job it held goes back to the
// front of the queue for another device. A job that has already taken down max_attempts
// devices is not tried again: each of its kernels becomes a launch_error result naming the
// devices, so one poisonous kernel cannot retire every GPU. When no device is left the run
// stops with EnvironmentError, after committing every job that finished in order.
//
// Each device has a thread of its own for the pool's whole life, because a worker process is
// tied to the thread that started it (PR_SET_PDEATHSIG fires when that thread exits): a
// thread per round would kill the workers it restarted at the end of every round.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "measure/measurer.h"
#include "measure/reorder_buffer.h"

namespace dietcode {

struct PoolDevice {
  int ordinal = 0;               // the CUDA ordinal, for messages and statistics
  Measurer* measurer = nullptr;  // not owned; outlives the pool; used by one thread only
};

struct PoolDeviceStats {
  int ordinal = 0;
  int jobs = 0;             // jobs it measured
  size_t inputs = 0;        // kernels in them
  double busy_seconds = 0;  // wall time inside its measurer
  bool failed = false;      // retired after an EnvironmentError
  std::string error;        // that error
};

class MeasurePool {
 public:
  // max_attempts: how many devices one job may take down before it is recorded as failed.
  explicit MeasurePool(std::vector<PoolDevice> devices, int max_attempts = 2);
  ~MeasurePool();  // waits for the device threads to finish what they hold
  MeasurePool(const MeasurePool&) = delete;
  MeasurePool& operator=(const MeasurePool&) = delete;

  // Results of one job, one per input, in input order.
  using Commit = std::function<void(size_t job, std::vector<MeasureResult>& results)>;

  // Measures every job on some device and calls commit(j, results) for j = 0, 1, ... in order,
  // on the calling thread. Throws EnvironmentError when every device has failed (with a single
  // device: that device's own error, unchanged), and rethrows anything else a measurer or
  // commit throws, after the device threads have let go of `jobs`.
  void run(const std::vector<std::vector<MeasureInput>>& jobs, const Commit& commit);

  size_t size() const { return devices_.size(); }
  std::vector<PoolDeviceStats> stats() const;

 private:
  void serve(size_t device);  // a device thread's loop
  // With the lock held: the failed job's kernels as results naming the devices it took down.
  std::vector<MeasureResult> failed_results(size_t job) const;
  // No device is left: the last device's error (wrapped, when there were several).
  [[noreturn]] void throw_lost() const;

  std::vector<PoolDevice> devices_;
  int max_attempts_;
  std::vector<std::thread> threads_;

  mutable std::mutex mutex_;
  std::condition_variable work_;  // device threads wait here for a job
  std::condition_variable done_;  // run() waits here for results
  bool stopping_ = false;
  const std::vector<std::vector<MeasureInput>>* jobs_ = nullptr;  // the current run's
  std::deque<size_t> queue_;
  size_t in_flight_ = 0;
  std::vector<std::vector<int>> failed_on_;  // per job: ordinals of the devices it took down
  std::unique_ptr<ReorderBuffer<std::vector<MeasureResult>>> buffer_;
  std::exception_ptr fatal_;  // a measurer's non-environment exception
  std::exception_ptr last_environment_error_;
  int alive_ = 0;
  std::vector<PoolDeviceStats> stats_;
};

}  // namespace dietcode

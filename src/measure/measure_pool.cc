#include "measure/measure_pool.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <stdexcept>
#include <utility>

#include "common/error.h"

namespace dietcode {

MeasurePool::MeasurePool(std::vector<PoolDevice> devices, int max_attempts)
    : devices_(std::move(devices)), max_attempts_(std::max(max_attempts, 1)) {
  if (devices_.empty()) throw std::invalid_argument("MeasurePool: no device");
  for (const PoolDevice& d : devices_) {
    if (!d.measurer) throw std::invalid_argument("MeasurePool: a device without a measurer");
    PoolDeviceStats s;
    s.ordinal = d.ordinal;
    stats_.push_back(s);
  }
  alive_ = int(devices_.size());
  for (size_t d = 0; d < devices_.size(); ++d) threads_.emplace_back([this, d] { serve(d); });
}

MeasurePool::~MeasurePool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    queue_.clear();
  }
  work_.notify_all();
  for (std::thread& t : threads_) t.join();
}

std::vector<PoolDeviceStats> MeasurePool::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

std::vector<MeasureResult> MeasurePool::failed_results(size_t job) const {
  std::string devices;
  for (int ordinal : failed_on_[job])
    devices += fmt::format("{}GPU {}", devices.empty() ? "" : " and ", ordinal);
  std::string why;
  try {
    if (last_environment_error_) std::rethrow_exception(last_environment_error_);
  } catch (const std::exception& e) {
    why = e.what();
  }
  MeasureResult failed;
  failed.status = MeasureStatus::kLaunchError;
  failed.error = fmt::format("{} failed while measuring it, not tried again: {}", devices, why);
  std::vector<MeasureResult> out;
  for (const MeasureInput& input : (*jobs_)[job]) {
    MeasureResult r = failed;
    r.latency_us.assign(input.instances.size(), std::numeric_limits<double>::quiet_NaN());
    out.push_back(std::move(r));
  }
  return out;
}

void MeasurePool::serve(size_t device) {
  Measurer& measurer = *devices_[device].measurer;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    // A retired device takes no more jobs; its thread only waits for the end.
    work_.wait(lock, [&] { return stopping_ || (!queue_.empty() && !stats_[device].failed); });
    if (stopping_) return;
    const size_t job = queue_.front();
    queue_.pop_front();
    ++in_flight_;
    const std::vector<MeasureInput>& inputs = (*jobs_)[job];
    lock.unlock();

    std::vector<MeasureResult> results;
    std::exception_ptr environment, other;
    const auto start = std::chrono::steady_clock::now();
    try {
      results = measurer.measure(inputs);
      if (results.size() != inputs.size())
        throw std::logic_error(fmt::format("GPU {}: the measurer returned {} results for {} inputs",
                                           devices_[device].ordinal, results.size(),
                                           inputs.size()));
    } catch (const EnvironmentError&) {
      environment = std::current_exception();
    } catch (...) {
      other = std::current_exception();
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    lock.lock();
    --in_flight_;
    PoolDeviceStats& s = stats_[device];
    s.busy_seconds += seconds;
    if (other) {
      if (!fatal_) fatal_ = other;
    } else if (environment) {
      s.failed = true;
      try {
        std::rethrow_exception(environment);
      } catch (const std::exception& e) {
        s.error = e.what();
      }
      --alive_;
      last_environment_error_ = environment;
      failed_on_[job].push_back(devices_[device].ordinal);
      if (alive_ > 0 && int(failed_on_[job].size()) >= max_attempts_) {
        buffer_->put(job, failed_results(job));
      } else {
        // Back to the front: an early job holds back every later one's commit.
        queue_.push_front(job);
        work_.notify_all();
      }
    } else {
      ++s.jobs;
      s.inputs += inputs.size();
      buffer_->put(job, std::move(results));
    }
    done_.notify_all();
  }
}

void MeasurePool::throw_lost() const {
  if (devices_.size() == 1) std::rethrow_exception(last_environment_error_);
  std::string why;
  try {
    std::rethrow_exception(last_environment_error_);
  } catch (const std::exception& e) {
    why = e.what();
  }
  throw EnvironmentError(
      fmt::format("every one of the {} GPUs failed; the last: {}", devices_.size(), why));
}

void MeasurePool::run(const std::vector<std::vector<MeasureInput>>& jobs, const Commit& commit) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (alive_ == 0) throw_lost();
  jobs_ = &jobs;
  buffer_ = std::make_unique<ReorderBuffer<std::vector<MeasureResult>>>();
  failed_on_.assign(jobs.size(), {});
  fatal_ = nullptr;
  queue_.clear();
  for (size_t j = 0; j < jobs.size(); ++j) queue_.push_back(j);
  work_.notify_all();

  // Whatever ends the run, the device threads must let go of `jobs` before it returns.
  auto settle = [&] {
    queue_.clear();
    done_.wait(lock, [&] { return in_flight_ == 0; });
    jobs_ = nullptr;
  };
  std::exception_ptr error;
  try {
    while (buffer_->next() < jobs.size()) {
      done_.wait(lock,
                 [&] { return buffer_->ready() || fatal_ || (alive_ == 0 && in_flight_ == 0); });
      std::vector<std::pair<size_t, std::vector<MeasureResult>>> ready;
      while (auto next = buffer_->pop()) ready.push_back(std::move(*next));
      if (!ready.empty()) {
        // The log is written outside the lock, so devices keep measuring meanwhile.
        lock.unlock();
        for (auto& [job, results] : ready) commit(job, results);
        lock.lock();
        continue;
      }
      if (fatal_) std::rethrow_exception(fatal_);
      if (alive_ == 0 && in_flight_ == 0) throw_lost();
    }
  } catch (...) {
    error = std::current_exception();
    if (!lock.owns_lock()) lock.lock();  // commit threw
  }
  settle();
  if (error) std::rethrow_exception(error);
}

}  // namespace dietcode

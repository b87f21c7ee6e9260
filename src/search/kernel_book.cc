#include "search/kernel_book.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace dietcode {

KernelEntry& KernelBook::add(const MicroKernel& mk, const LaunchPlan& plan) {
  std::string key = mk.key();
  auto it = index_.find(key);
  if (it != index_.end()) return entries_[it->second];
  KernelEntry entry;
  entry.mk = mk;
  entry.key = key;
  entry.plan = plan;
  entry.latency_us.assign(table_->size(), std::numeric_limits<double>::quiet_NaN());
  entry.ordinary_us = entry.latency_us;
  entry.recorded.assign(table_->size(), 0);
  if (runoff_.size() != table_->size()) runoff_.resize(table_->size());
  index_[key] = entries_.size();
  entries_.push_back(std::move(entry));
  return entries_.back();
}

const KernelEntry* KernelBook::find(const std::string& key) const {
  auto it = index_.find(key);
  return it == index_.end() ? nullptr : &entries_[it->second];
}

void KernelBook::add_latency(KernelEntry& entry, size_t instance, double latency_us) {
  entry.recorded[instance] = 1;
  // A second measurement of the same pair (two runs that overlapped) keeps the first, as the
  // log reader's best_per_instance does for ties.
  if (!std::isnan(entry.ordinary_us[instance])) return;
  entry.ordinary_us[instance] = latency_us;
  if (std::isnan(entry.latency_us[instance])) ++entry.measured;
  if (runoff_[instance].latest() > 0)
    settle(instance);  // timed after a runoff: scaled like every other non-finalist
  else
    entry.latency_us[instance] = latency_us;
}

void KernelBook::add_runoff_latency(KernelEntry& entry, size_t instance, int runoff,
                                    double latency_us) {
  entry.recorded[instance] = 1;
  const size_t k = index_.at(entry.key);
  runoff_[instance].add(k, runoff, latency_us);
  if (std::isnan(entry.latency_us[instance])) ++entry.measured;
  settle(instance);
}

int KernelBook::latest_runoff() const {
  int latest = 0;
  for (const InstanceRunoff& r : runoff_) latest = std::max(latest, r.latest());
  return latest;
}

void KernelBook::settle(size_t instance) {
  std::vector<double> ordinary(entries_.size());
  for (size_t k = 0; k < entries_.size(); ++k) ordinary[k] = entries_[k].ordinary_us[instance];
  const std::vector<double> settled =
      settle_runoff(ordinary, runoff_[instance].as_vector(entries_.size()));
  for (size_t k = 0; k < entries_.size(); ++k) entries_[k].latency_us[instance] = settled[k];
}

void KernelBook::note_registers(KernelEntry& entry, int registers) {
  if (entry.resources) return;
  KernelResources res;
  res.entry = entry.plan.entry;
  res.registers = registers;
  entry.resources = res;
}

void KernelBook::add_failure(KernelEntry& entry, size_t instance, MeasureStatus status,
                             const std::string& error) {
  entry.recorded[instance] = 1;
  if (!entry.failed) {
    entry.failed = true;
    entry.status = status;
    entry.error = error;
  }
}

std::vector<size_t> KernelBook::usable() const {
  std::vector<size_t> out;
  for (size_t k = 0; k < entries_.size(); ++k)
    if (!entries_[k].failed && entries_[k].measured > 0) out.push_back(k);
  return out;
}

std::vector<double> KernelBook::best_latency() const {
  std::vector<double> best(table_->size(), std::numeric_limits<double>::infinity());
  std::vector<int> kernel = best_kernel();
  for (size_t i = 0; i < best.size(); ++i)
    if (kernel[i] >= 0) best[i] = entries_[size_t(kernel[i])].latency_us[i];
  return best;
}

std::vector<int> KernelBook::best_kernel() const {
  std::vector<int> kernel(table_->size(), -1);
  std::vector<double> best(table_->size(), std::numeric_limits<double>::infinity());
  for (size_t k : usable()) {
    const KernelEntry& e = entries_[k];
    for (size_t i = 0; i < best.size(); ++i)
      if (e.latency_us[i] < best[i]) {  // false for NaN
        best[i] = e.latency_us[i];
        kernel[i] = int(k);
      }
  }
  return kernel;
}

}  // namespace dietcode

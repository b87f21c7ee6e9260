// OpSearch once its rounds stop: timing the kernels in use on the instances they lack
// (complete_kernels_in_use), the runoff of each instance's finalists, and what both are expected
// to cost (end_seconds), which a time budget holds back. The rounds are in op_search.cc.
#include <algorithm>
#include <chrono>
#include <map>
#include <vector>

#include "search/op_search.h"
#include "search/runoff.h"

namespace dietcode {

double OpSearch::end_seconds() const {
  double seconds = 0;
  if (book_.usable().size() >= kMinKernelsForQuality)
    seconds += held_out_trainings(options_.holdout_fraction) * last_retrain_seconds_;
  // Completion at its most: complete_kernels kernels, each timed on a sample only. Counting the
  // kernels in use instead would let the reserve jump when a round adds some, after that round
  // had been sized to the smaller one.
  const size_t sample = std::min(table_.size(), options_.max_instances_per_kernel);
  const double per_measurement =
      stats_.measurements > 0 ? stats_.measure_seconds / double(stats_.measurements) : 0.0;
  if (options_.complete_kernels > 0 && sample < table_.size()) {
    const double missing = double(options_.complete_kernels) * double(table_.size() - sample);
    seconds += missing * per_measurement;
  }
  // The runoff at its most: every instance's full share of finalists, timed at the rounds'
  // mean time per measurement (an overestimate: the finalists are the faster kernels). A
  // finalist this run has not timed (a resumed tune's, from the log) is first loaded and
  // checked by the measurer, which on a CPU costs more than its few timings: count what a
  // round's kernel cost for each.
  if (options_.runoff_finalists > 0) {
    size_t from_log = 0;
    const std::vector<size_t> usable = book_.usable();
    if (std::any_of(usable.begin(), usable.end(), [&](size_t k) { return !book_[k].timed_here; }))
      for (const auto& [k, instances] : runoff_field()) from_log += !book_[k].timed_here;
    const double per_kernel = stats_.measured_kernels > 0
                                  ? stats_.measure_seconds / double(stats_.measured_kernels)
                                  : 0.0;
    seconds += double(options_.runoff_finalists) * double(table_.size()) * per_measurement +
               double(from_log) * per_kernel;
  }
  return seconds;
}

std::map<size_t, std::vector<size_t>> OpSearch::runoff_field() const {
  const std::vector<size_t> usable = book_.usable();
  std::map<size_t, std::vector<size_t>> instances_of;  // book index -> its finalist instances
  std::vector<double> factor(usable.size(), 1.0), latency(usable.size());
  if (options_.serving_factor)
    for (size_t u = 0; u < usable.size(); ++u) factor[u] = options_.serving_factor(book_[usable[u]].mk);
  for (size_t i = 0; i < table_.size(); ++i) {
    for (size_t u = 0; u < usable.size(); ++u)
      latency[u] = factor[u] * book_[usable[u]].latency_us[i];  // NaN stays NaN
    for (size_t f : runoff_finalists(latency, size_t(std::max(options_.runoff_finalists, 0)),
                                     options_.runoff_margin))
      instances_of[usable[f]].push_back(i);
  }
  return instances_of;
}

RoundReport OpSearch::complete_kernels_in_use(int max_kernels,
                                             const std::function<void()>& on_batch) {
  RoundReport report;
  report.final_completion = true;
  std::vector<MicroKernel> chosen;
  for (const MicroKernel& mk : kernels_in_use()) {
    if (int(chosen.size()) >= max_kernels) break;
    const KernelEntry* e = book_.find(mk.key());
    if (e && std::count(e->recorded.begin(), e->recorded.end(), 0) > 0) chosen.push_back(mk);
  }
  report.completed = int(chosen.size());
  const Incumbent inc = incumbent();
  compile_and_measure(chosen, {}, inc.latency, true, report, on_batch);
  const auto start = std::chrono::steady_clock::now();
  if (report.measured > 0) retrain_model();
  stats_.model_seconds += seconds_since(start);
  report.weighted_mean_us = weighted_mean_us();
  return report;
}

RoundReport OpSearch::runoff(const std::function<void()>& on_batch) {
  RoundReport report;
  if (options_.runoff_finalists <= 0) return report;
  // Each instance's finalists, by the times the rounds (and any earlier runoff) left.
  const std::map<size_t, std::vector<size_t>> instances_of = runoff_field();
  // A run that timed nothing new leaves the log's runoff standing: running a finished tune
  // again changes nothing. A log without one (written before runoffs, or with --runoff 0) gets
  // its first.
  if (instances_of.empty() || (book_.latest_runoff() > 0 && stats_.measurements == 0))
    return report;
  report.runoff = book_.latest_runoff() + 1;
  report.weighted_mean_before_us = weighted_mean_us();

  std::vector<MicroKernel> chosen;
  std::map<std::string, size_t> by_key;
  for (const auto& [k, instances] : instances_of) {
    chosen.push_back(book_[k].mk);
    by_key[book_[k].key] = k;
  }
  std::vector<CompiledCandidate> compiled = compile(chosen);  // cache hits: they compiled before

  std::vector<MeasureInput> inputs;
  std::vector<std::vector<size_t>> indices;
  for (CompiledCandidate& cc : compiled) {
    // Every finalist compiled before; one that no longer does (the compiler changed under a
    // resumed tune) keeps its rounds' times, like any kernel the runoff does not time.
    auto k = by_key.find(cc.mk.key());
    if (cc.status != MeasureStatus::kOk || k == by_key.end()) continue;
    const std::vector<size_t>& which = instances_of.at(k->second);
    report.runoff_pairs += which.size();
    inputs.push_back(measure_input(cc, which));
    indices.push_back(which);
  }
  report.runoff_kernels = int(inputs.size());
  measure_ready(inputs, indices, report, on_batch, report.runoff);
  report.weighted_mean_us = weighted_mean_us();
  runoff_report_ = report;
  return report;
}

}  // namespace dietcode

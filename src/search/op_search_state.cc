// OpSearch's state between rounds: rebuilding it from the log (resume_from), and reading the
// op's current assignment out of it (incumbent, assignment, weighted_mean_us). The rounds
// themselves are in op_search.cc.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "common/error.h"
#include "search/op_search.h"

namespace dietcode {

void OpSearch::resume_from(const std::vector<const TuningRecord*>& records,
                           std::vector<std::string>& notes) {
  size_t stale = 0, ungenerable = 0, not_offered = 0;
  for (const TuningRecord* r : records) {
    const std::optional<size_t> i = table_.find(r->shape);
    if (!i || r->gemm != table_[*i].gemm) {
      ++stale;
      continue;
    }
    // A template this run leaves out (an AVX-512 kernel under `tune --arch x86-64-v3`) must not
    // become the incumbent of a search that could not have chosen it.
    const auto space = std::find_if(templates_.begin(), templates_.end(),
                                    [r](const TemplateSpace* t) { return t->tmpl == r->mk.tmpl; });
    if (space == templates_.end()) {
      ++not_offered;
      continue;
    }
    // A tunable added to the template since the record was written takes its default, which
    // is the code that ran then (PRELOAD = 0): the kernel gets the key the search gives it
    // today, so it is not timed a second time. (The log itself stays as written.)
    MicroKernel mk = r->mk;
    for (const Tunable& t : (*space)->tunables) mk.params.emplace(t.name, t.default_value);
    const LaunchPlan* plan = nullptr;
    try {
      plan = &plan_of(mk);
    } catch (const UserError&) {  // a template or tunable this build does not know
      ++ungenerable;
      continue;
    }
    KernelEntry& e = book_.add(mk, *plan);
    if (r->registers) KernelBook::note_registers(e, *r->registers);
    if (r->status == MeasureStatus::kOk && r->latency_us && r->runoff > 0) {
      book_.add_runoff_latency(e, *i, r->runoff, *r->latency_us);
    } else if (r->status == MeasureStatus::kOk && r->latency_us) {
      book_.add_latency(e, *i, *r->latency_us);
    } else {
      book_.add_failure(e, *i, r->status, r->error);
    }
    tried_.insert(e.key);
    ++stats_.resumed_records;
  }
  stats_.resumed_kernels = int(book_.size());
  if (stale)
    notes.push_back(
        fmt::format("{}: {} earlier record{} no longer match the workload (shape or "
                    "GEMM changed): not used",
                    op_->name, stale, stale == 1 ? "" : "s"));
  if (not_offered)
    notes.push_back(fmt::format(
        "{}: {} earlier record{} measured templates this run does not offer (another --arch?): "
        "not used",
        op_->name, not_offered, not_offered == 1 ? "" : "s"));
  if (ungenerable)
    notes.push_back(
        fmt::format("{}: {} earlier record{} name micro-kernels this build cannot "
                    "generate: not used",
                    op_->name, ungenerable, ungenerable == 1 ? "" : "s"));

  // Kernels a killed run left half-measured are finished first, before new candidates.
  for (size_t k = 0; k < book_.size(); ++k) {
    const KernelEntry& e = book_[k];
    if (e.failed || table_.size() > options_.max_instances_per_kernel) continue;
    if (std::count(e.recorded.begin(), e.recorded.end(), 0) > 0) pending_.push_back(e.mk);
  }
  for (size_t k : book_.usable()) model_->learn(book_[k]);
  if (model_->model().measurements() > 0) retrain_model();
  // A log that already holds the whole budget (or every listed kernel) leaves nothing to do
  // but report.
  if (trials() >= trial_budget() && pending_.empty())
    stop(times_listed_kernels() ? StopReason::kListed : StopReason::kTrials);
}

OpSearch::Incumbent OpSearch::incumbent() const {
  Incumbent inc{book_.best_latency(), book_.best_kernel()};
  std::vector<size_t> missing;
  for (size_t i = 0; i < table_.size(); ++i)
    if (inc.kernel[i] < 0) missing.push_back(i);
  const std::vector<size_t> usable = book_.usable();
  if (missing.empty() || usable.empty()) return inc;
  // Instances no kernel was measured on (a sampled cross product) get the prediction of the
  // measured kernels: what they would run if tuning stopped now.
  std::vector<KernelCandidate> candidates;
  for (size_t k : usable) candidates.push_back(model_->candidate(book_[k]));
  const std::vector<double> predicted = model_->predict(candidates, missing);
  for (size_t c = 0; c < usable.size(); ++c)
    for (size_t j = 0; j < missing.size(); ++j) {
      const double p = predicted[c * missing.size() + j];
      if (p < inc.latency[missing[j]]) {
        inc.latency[missing[j]] = p;
        inc.kernel[missing[j]] = int(usable[c]);
      }
    }
  return inc;
}

std::vector<InstanceChoice> OpSearch::assignment() const {
  const Incumbent inc = incumbent();
  const std::vector<int> measured = book_.best_kernel();
  std::vector<InstanceChoice> out(table_.size());
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = {inc.kernel[i], inc.latency[i], measured[i] >= 0};
  return out;
}

std::vector<MicroKernel> OpSearch::kernels_in_use() const {
  const Incumbent inc = incumbent();
  std::map<int, double> served;  // book index -> weighted latency of its instances
  for (size_t i = 0; i < inc.kernel.size(); ++i)
    if (inc.kernel[i] >= 0) served[inc.kernel[i]] += table_.weights()[i] * inc.latency[i];
  std::vector<std::pair<double, int>> order;
  for (const auto& [k, w] : served) order.push_back({-w, k});
  std::sort(order.begin(), order.end());
  std::vector<MicroKernel> out;
  for (const auto& [w, k] : order) out.push_back(book_[size_t(k)].mk);
  return out;
}

double OpSearch::weighted_mean_us() const {
  const Incumbent inc = incumbent();
  for (int k : inc.kernel)
    if (k < 0) return std::numeric_limits<double>::infinity();
  return table_.weighted_mean(inc.latency);
}

double OpSearch::objective_value_us() const {
  if (options_.objective == SearchObjective::kWeightedTime) return weighted_mean_us();
  const Incumbent inc = incumbent();
  double log_sum = 0;
  for (size_t i = 0; i < inc.latency.size(); ++i) {
    if (inc.kernel[i] < 0) return std::numeric_limits<double>::infinity();
    log_sum += table_.weights()[i] * objective_term(options_.objective, inc.latency[i]);
  }
  return std::exp(log_sum);
}

}  // namespace dietcode

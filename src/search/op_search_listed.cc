// OpSearch under `tune --kernels`: the listed kernels this op can run (and why the others are
// left out), a round's worth of them at a time, and the trial count they define. The search's
// own rounds are in op_search.cc.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "search/op_search.h"
#include "space/op_computation.h"

namespace dietcode {

void OpSearch::choose_listed_kernels() {
  if (!options_.listed_kernels) return;
  std::set<std::string> keys;
  for (const ListedKernel& listed : *options_.listed_kernels) {
    const MicroKernel& mk = listed.mk;
    auto space = std::find_if(spaces_.begin(), spaces_.end(),
                              [&](const SearchSpace& s) { return s.space().tmpl == mk.tmpl; });
    std::string why;
    if (space != spaces_.end() && space->is_valid(mk, &why)) {
      if (keys.insert(mk.key()).second) listed_.push_back(mk);
      continue;
    }
    if (space == spaces_.end()) {
      // The list was read against every template there is; this op is offered fewer.
      const TemplateSpace& t = template_space(mk.tmpl);
      if (t.target != env_.target)
        why = fmt::format("a {} template, and this run tunes for {}", to_string(t.target),
                          to_string(env_.target));
      else if (!t.supports(*op_))
        why = fmt::format("{} does not compute {}", mk.tmpl, op_computation_text(*op_));
      else
        why = "its template is not offered on this machine (an ISA level above --arch?)";
    }
    listed_skipped_.push_back(
        fmt::format("{}: {} ({}) skipped: {}", op_->name, listed.origin, mk.tmpl, why));
  }
}

std::vector<MicroKernel> OpSearch::take_listed(int slots) {
  std::vector<MicroKernel> out;
  while (next_listed_ < listed_.size() && int(out.size()) < slots) {
    const MicroKernel& mk = listed_[next_listed_++];
    if (!tried_.count(mk.key())) out.push_back(mk);  // the log's are not timed again
  }
  return out;
}

int OpSearch::trials() const {
  if (!times_listed_kernels()) return int(tried_.size());
  return int(std::count_if(listed_.begin(), listed_.end(),
                           [&](const MicroKernel& mk) { return tried_.count(mk.key()) > 0; }));
}

int OpSearch::trial_budget() const {
  return times_listed_kernels() ? int(listed_.size()) : options_.budget.trials_per_op;
}

int OpSearch::choose_listed_round(int slots, std::vector<MicroKernel>& chosen,
                                  std::vector<std::vector<double>>& chosen_predicted) {
  // The list's next kernels, in its order, a round's worth at a time, so that a time budget is
  // checked between rounds as it is for a search. Each is timed on the instances a candidate
  // of the search would be: all of them, or beyond max_instances_per_kernel a sample, half of
  // it where the model predicts it gains most.
  const std::vector<MicroKernel> listed = take_listed(slots);
  std::vector<KernelCandidate> candidates;
  for (const MicroKernel& mk : listed)
    candidates.push_back(model_->candidate(mk, plan_of(mk), std::nullopt));
  const std::vector<double> predicted =
      candidates.empty() ? std::vector<double>() : model_->predict(candidates);
  const size_t n = table_.size();
  for (size_t c = 0; c < listed.size(); ++c) {
    chosen.push_back(listed[c]);
    chosen_predicted.emplace_back(predicted.begin() + c * n, predicted.begin() + (c + 1) * n);
  }
  return int(listed.size());
}

}  // namespace dietcode

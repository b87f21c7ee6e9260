#include "search/joint_search.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <set>
#include <stdexcept>

#include "nvrtc/parallel_compile.h"
#include "space/template_space.h"

namespace dietcode {

JointSearch::JointSearch(const Workload& workload, std::vector<const OpSpec*> ops,
                         SearchEnvironment env, JointSearchOptions options, SpacesFor spaces_for)
    : workload_(&workload), options_(options) {
  if (!env.compiler || !env.measurer)
    throw std::invalid_argument("JointSearch: a compiler and a measurer are required");
  if (!spaces_for)
    spaces_for = [target = env.target](const OpSpec& op) { return template_spaces_for(op, target); };
  for (const OpSpec* op : ops) {
    auto search = std::make_unique<OpSearch>(workload, *op, env, options, spaces_for(*op));
    if (search->times_listed_kernels()) {
      const std::vector<std::string>& skipped = search->listed_kernels_skipped();
      notes_.insert(notes_.end(), skipped.begin(), skipped.end());
      // Nothing it could time: the op is left as the log has it, neither completed nor run
      // off, as if --ops had left it out.
      if (search->listed_kernels().empty()) {
        notes_.push_back(op->name + ": no listed kernel can compute it: left untuned");
        continue;
      }
    }
    searches_.push_back(std::move(search));
  }
  share_measurements();
}

void JointSearch::set_log(TuningLogWriter* log) {
  for (auto& search : searches_) search->set_log(log);
}

JointSearch::~JointSearch() = default;

void JointSearch::resume_from(const std::vector<const TuningRecord*>& records) {
  for (auto& search : searches_) {
    std::vector<const TuningRecord*> mine;
    for (const TuningRecord* r : records)
      if (r->op == search->op().name) mine.push_back(r);
    search->resume_from(mine, notes_);
  }
  share_measurements();
}

void JointSearch::share_measurements() {
  for (auto& search : searches_) {
    std::vector<OpSearch*> peers;
    for (auto& other : searches_)
      if (other != search) peers.push_back(other.get());
    search->learn_from_peers(std::move(peers));
  }
}

int JointSearch::round_cap(const Deadline& deadline, size_t position) const {
  if (!deadline.limited()) return INT_MAX;
  double seconds = 0;
  int kernels = 0;
  // A kernel costs its compile and its timing: on a GPU the compile dominates, on a CPU the
  // timing (the kernel's own milliseconds on dozens of shapes) does.
  for (const auto& s : searches_) {
    seconds += s->stats().compile_seconds + s->stats().measure_seconds;
    kernels += s->stats().compiled;
  }
  // Nothing to estimate from yet: one compile wave measures the rate for the price of one
  // kernel, before a whole round might spend the budget on the first op alone.
  if (kernels == 0 || seconds <= 0)
    return options_.jobs > 0 ? options_.jobs : default_compile_jobs();
  return std::max(1, int(round_share_seconds(deadline, position) / (seconds / kernels)));
}

double JointSearch::round_share_seconds(const Deadline& deadline, size_t position) const {
  if (!deadline.limited()) return INFINITY;
  // The time left is shared by the ops still to take their turn in this pass, so that under a
  // tight budget every op gets kernels, not only the first ones.
  int waiting = 0;
  for (size_t n = position; n < searches_.size(); ++n) waiting += !searches_[n]->finished();
  return deadline.remaining() / std::max(waiting, 1);
}

std::vector<MicroKernel> JointSearch::kernels_of_other_ops(size_t position) const {
  std::vector<MicroKernel> out;
  for (size_t n = 0; n < searches_.size(); ++n)
    if (n != position)
      if (std::vector<MicroKernel> in_use = searches_[n]->kernels_in_use(); !in_use.empty())
        out.push_back(in_use.front());
  return out;
}

int JointSearch::trials_done() const {
  int done = 0;
  // A finished op counts as done in full, so the bar reaches its end when every op stops.
  for (const auto& s : searches_)
    done += s->finished() ? s->trial_budget() : std::min(s->trials(), s->trial_budget());
  return done;
}

void JointSearch::notify(SearchProgress::Kind kind, const OpSearch& op, const RoundReport* round,
                         const Deadline& deadline) const {
  if (!observer_) return;
  SearchProgress p;
  p.kind = kind;
  p.op = &op;
  if (round) p.round = *round;
  p.trials_done = trials_done();
  for (const auto& s : searches_) p.trials_total += s->trial_budget();
  p.trials_at_start = trials_at_start_;
  p.elapsed_seconds = deadline.elapsed();
  p.time_limit_seconds = deadline.limit();
  observer_(p);
}

OpOutcome JointSearch::outcome(OpSearch& search) const {
  OpOutcome o;
  o.op = search.op().name;
  o.instances = search.table().size();
  o.trials = search.trials();
  o.stats = search.stats();
  o.stop = search.stop_reason();
  o.assignment = search.assignment();
  for (size_t k = 0; k < search.book().size(); ++k) o.kernels.push_back(search.book()[k].mk);
  for (size_t i = 0; i < search.table().size(); ++i) {
    o.shapes.push_back(search.table().shape(i));
    o.flops.push_back(search.table()[i].flops);
  }
  o.weights = search.table().weights();
  o.weighted_mean_us = search.weighted_mean_us();
  std::vector<double> latency;
  std::set<int> used;
  for (const InstanceChoice& c : o.assignment) {
    latency.push_back(c.latency_us);
    if (c.kernel >= 0) used.insert(c.kernel);
  }
  o.tflops = search.table().achieved_tflops(latency);
  o.kernels_used = int(used.size());
  o.quality = search.quality();
  o.runoff = search.runoff_report();
  return o;
}

double JointSearch::end_seconds() const {
  double seconds = 0;
  for (const auto& s : searches_) seconds += s->end_seconds();
  return seconds;
}

JointSearchResult JointSearch::run() {
  const Deadline deadline(options_.budget.time_budget_seconds);
  JointSearchResult result;
  trials_at_start_ = trials_done();
  bool active = true;
  while (active) {
    active = false;
    for (size_t n = 0; n < searches_.size(); ++n) {
      OpSearch& s = *searches_[n];
      if (s.finished()) continue;
      // The rounds end early enough for every op's end (completing the kernels in use, the
      // cost model's held-out evaluation) to fit in the budget too: --time-budget bounds the
      // whole run, not its rounds alone.
      const Deadline rounds = deadline.earlier_by(end_seconds());
      if (rounds.expired()) {
        s.stop(StopReason::kTime);
        result.out_of_time = true;
        continue;
      }
      s.borrow(kernels_of_other_ops(n));
      // The cap counts kernels at the run's average cost, from before this op timed any; the
      // share in seconds prices the round's own picks once the op has rounds to go by.
      const RoundReport report = s.run_round(
          rounds, round_cap(rounds, n),
          [&] { notify(SearchProgress::Kind::kBatch, s, nullptr, deadline); },
          round_share_seconds(rounds, n));
      if (report.selected + report.completed > 0 || report.cut_for_time == 0)
        notify(SearchProgress::Kind::kRound, s, &report, deadline);
      if (s.stop_reason() == StopReason::kTime) result.out_of_time = true;
      active = active || !s.finished();
    }
  }
  // Kernels timed on a sample of the instances: the ones in use are timed on the rest, so the
  // pack is fitted to measurements (a no-op where every kernel was timed everywhere).
  if (options_.complete_kernels > 0)
    for (auto& s : searches_) {
      const RoundReport report = s->complete_kernels_in_use(options_.complete_kernels, [&] {
        notify(SearchProgress::Kind::kBatch, *s, nullptr, deadline);
      });
      if (report.completed > 0) notify(SearchProgress::Kind::kRound, *s, &report, deadline);
    }
  // The runoff: each instance decided by its finalists timed together (runoff.h), so the
  // assignment and the pack's tree rest on a same-time comparison.
  for (auto& s : searches_) {
    const RoundReport report = s->runoff([&] {
      notify(SearchProgress::Kind::kBatch, *s, nullptr, deadline);
    });
    if (report.runoff > 0) notify(SearchProgress::Kind::kRound, *s, &report, deadline);
  }
  for (auto& s : searches_) {
    s->evaluate_quality();
    notify(SearchProgress::Kind::kOpDone, *s, nullptr, deadline);
    result.ops.push_back(outcome(*s));
  }
  result.wall_seconds = deadline.elapsed();
  return result;
}

}  // namespace dietcode

#include "search/op_search.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>
#include <stdexcept>

#include "codegen/generated_kernel.h"
#include "common/error.h"
#include "measure/measure_pool.h"
#include "nvrtc/stable_hash.h"
#include "search/candidate_selection.h"

namespace dietcode {

namespace {

GemmShape largest_shape(const InstanceTable& table) {
  GemmShape g{0, 0, 0, 0};
  for (const GemmShape& s : table.shapes()) {
    g.batch = std::max(g.batch, s.batch);
    g.M = std::max(g.M, s.M);
    g.N = std::max(g.N, s.N);
    g.K = std::max(g.K, s.K);
  }
  return g;
}

// Every op gets its own random stream, so adding or removing an op (--ops) leaves the others'
// searches as they were.
uint64_t op_seed(uint64_t seed, const std::string& op) {
  return (seed * 0x9E3779B97F4A7C15ull) ^ stable_hash(op);
}

}  // namespace

OpSearch::OpSearch(const Workload& workload, const OpSpec& op, const SearchEnvironment& env,
                   const JointSearchOptions& options, std::vector<const TemplateSpace*> spaces)
    : op_(&op),
      env_(env),
      options_(options),
      table_(workload, op,
             options.instance_ranges.count(op.name)
                 ? std::optional(options.instance_ranges.at(op.name))
                 : std::nullopt),
      templates_(std::move(spaces)),
      book_(table_),
      model_(std::make_unique<OpCostModel>(table_, env_.machine(), env_.cost_model)),
      rng_(op_seed(options.seed, op.name)),
      tracker_(options.budget.patience_rounds, options.budget.min_improvement) {
  const SpaceContext context{env_.gpu, *op_, largest_shape(table_)};
  for (const TemplateSpace* t : templates_) spaces_.emplace_back(*t, context);
  choose_listed_kernels();
}

OpSearch::~OpSearch() = default;

const LaunchPlan& OpSearch::plan_of(const MicroKernel& mk) {
  // Code generation reads the template on every call (~0.7 ms); the plan depends on the
  // micro-kernel alone, and scoring needs it for hundreds of candidates a round.
  const std::string key = mk.key();
  auto it = plans_.find(key);
  if (it == plans_.end()) it = plans_.emplace(key, generate_kernel(*op_, mk).plan).first;
  return it->second;
}

std::vector<size_t> OpSearch::instances_for(const KernelEntry* entry, const double* predicted_row,
                                            const std::vector<double>& incumbent) {
  std::vector<size_t> open;
  for (size_t i = 0; i < table_.size(); ++i)
    if (!entry || !entry->recorded[i]) open.push_back(i);
  const size_t limit = std::max<size_t>(options_.max_instances_per_kernel, 1);
  if (open.size() <= limit) return open;

  // Half where the kernel is predicted to gain most (unknown instances first, by weight)...
  const std::vector<double>& w = table_.weights();
  std::vector<double> gain(table_.size(), 0.0);
  if (predicted_row)
    for (size_t i : open)
      gain[i] = std::isfinite(incumbent[i]) ? w[i] * (incumbent[i] - predicted_row[i])
                                            : w[i] * predicted_row[i] * 1e6;
  std::vector<size_t> by_gain = open;
  std::stable_sort(by_gain.begin(), by_gain.end(),
                   [&](size_t a, size_t b) { return gain[a] > gain[b]; });
  std::vector<size_t> chosen(by_gain.begin(), by_gain.begin() + std::ptrdiff_t(limit / 2));
  std::vector<size_t> rest(by_gain.begin() + std::ptrdiff_t(limit / 2), by_gain.end());
  std::sort(rest.begin(), rest.end());
  // ... and half drawn by priority, without replacement.
  const std::vector<double>& priority = table_.priorities();
  while (chosen.size() < limit && !rest.empty()) {
    double total = 0;
    for (size_t i : rest) total += priority[i];
    double draw = double(rng_() >> 11) * 0x1.0p-53 * total;
    size_t j = 0;
    while (j + 1 < rest.size() && draw >= priority[rest[j]]) draw -= priority[rest[j++]];
    chosen.push_back(rest[j]);
    rest.erase(rest.begin() + std::ptrdiff_t(j));
  }
  std::sort(chosen.begin(), chosen.end());
  return chosen;
}

void OpSearch::record(const MeasureInput& input, const std::vector<size_t>& indices,
                      const MeasureResult& result, int runoff) {
  // The log first: what is on disk is the state a resumed run starts from.
  std::vector<TuningRecord> records =
      records_from_result(env_.workload, input, result, env_.device);
  // A finalist that fails in the runoff fails as it would in a round: an ordinary record.
  if (result.status == MeasureStatus::kOk)
    for (TuningRecord& r : records) r.runoff = runoff;
  if (env_.log)
    for (const TuningRecord& r : records) env_.log->append(r);

  KernelEntry& e = book_.add(input.mk, input.kernel.plan);
  // ptxas's report for the binary that ran (sm_90a's for a wgmma kernel).
  if (const KernelResources* r = main_entry_resources(input.compiled, input.kernel.plan,
                                                      compile_arch(input.kernel, env_.device.arch)))
    e.resources = *r;
  if (result.status != MeasureStatus::kOk) {
    for (size_t i : indices) book_.add_failure(e, i, result.status, result.error);
    return;
  }
  std::vector<size_t> measured;
  for (size_t j = 0; j < indices.size() && j < result.latency_us.size(); ++j) {
    const double latency = result.latency_us[j];
    if (!(latency > 0) || !std::isfinite(latency)) continue;  // not measured: no record either
    if (runoff > 0)
      book_.add_runoff_latency(e, indices[j], runoff, latency);
    else
      book_.add_latency(e, indices[j], latency);
    measured.push_back(indices[j]);
  }
  e.timed_here = e.timed_here || !measured.empty();
  stats_.measurements += measured.size();
  if (runoff == 0 && !e.failed && !measured.empty()) {
    model_->learn(e, measured);
    for (OpSearch* peer : peers_) peer->model_->learn_peer(e, table_, measured);
  }
}

void OpSearch::retrain_model() {
  const auto start = std::chrono::steady_clock::now();
  model_->retrain();
  last_retrain_seconds_ = seconds_since(start);
}

void OpSearch::learn_from_peers(std::vector<OpSearch*> peers) {
  peers_ = std::move(peers);
  size_t learned = 0;
  for (const OpSearch* peer : peers_)
    for (size_t k : peer->book_.usable())
      if (model_->learn_peer(peer->book_[k], peer->table_)) ++learned;
  if (learned) retrain_model();
}

double OpSearch::measure_ready(const std::vector<MeasureInput>& inputs,
                             const std::vector<std::vector<size_t>>& indices, RoundReport& report,
                             const std::function<void()>& on_batch, int runoff) {
  // Kernels compiled in this round are measured even past the deadline: measuring is the
  // cheap part, and without it the compiling was for nothing. Results are recorded in input
  // order, job after job, whatever order they arrive in, so neither the log nor the search's
  // next decisions depend on how many devices there are or how fast each is. Jobs are smaller
  // when there are more devices than full jobs, so that every device gets work; a job's size
  // changes how a real GPU interleaves its kernels, not what the log says of them.
  size_t batch = size_t(std::max(options_.measure_batch, 1));
  if (runoff > 0)
    batch = std::max<size_t>(1, inputs.size());  // one job: its kernels are interleaved
  else if (env_.pool && env_.pool->size() > 1)
    batch = std::min(
        batch, std::max<size_t>(1, (inputs.size() + env_.pool->size() - 1) / env_.pool->size()));
  std::vector<std::vector<MeasureInput>> jobs;
  for (size_t begin = 0; begin < inputs.size(); begin += batch)
    jobs.emplace_back(inputs.begin() + std::ptrdiff_t(begin),
                      inputs.begin() + std::ptrdiff_t(std::min(inputs.size(), begin + batch)));
  double committing = 0;  // log writes and learning, not measuring
  double timed_us = 0;
  auto commit = [&](size_t job, std::vector<MeasureResult>& results) {
    const auto begin = std::chrono::steady_clock::now();
    if (results.size() != jobs[job].size())
      throw std::logic_error(fmt::format("measurer returned {} results for {} inputs",
                                         results.size(), jobs[job].size()));
    for (size_t j = 0; j < results.size(); ++j) {
      record(jobs[job][j], indices[job * batch + j], results[j], runoff);
      if (results[j].status == MeasureStatus::kOk) {
        for (double us : results[j].latency_us)
          if (std::isfinite(us)) timed_us += us;
        ++report.measured;
        if (runoff == 0) ++stats_.measured_kernels;  // a runoff times kernels counted before
      } else {
        ++report.failed;
        ++stats_.failed_kernels;
      }
    }
    committing += seconds_since(begin);
    if (on_batch) on_batch();
  };
  const auto start = std::chrono::steady_clock::now();
  if (env_.pool) {
    env_.pool->run(jobs, commit);
  } else {
    for (size_t job = 0; job < jobs.size(); ++job) {
      std::vector<MeasureResult> results = env_.measurer->measure(jobs[job]);
      commit(job, results);
    }
  }
  stats_.measure_seconds += std::max(0.0, seconds_since(start) - committing);
  return timed_us;
}

std::vector<CompiledCandidate> OpSearch::compile(const std::vector<MicroKernel>& mks) {
  CompileStats cs;
  std::vector<CompiledCandidate> compiled = compile_candidates(
      *env_.compiler, *op_, mks, env_.gpu,
      {env_.device.arch, options_.jobs, env_.device.constant_weights}, binaries_, &cs);
  stats_.compile_seconds += cs.wall_seconds;
  stats_.nvrtc_seconds += cs.nvrtc_seconds;
  stats_.cache_hits += cs.cache_hits;
  return compiled;
}

MeasureInput OpSearch::measure_input(CompiledCandidate& cc, const std::vector<size_t>& which) {
  MeasureInput input;
  input.op = op_;
  input.mk = cc.mk;
  input.kernel = std::move(cc.kernel);
  input.compiled = std::move(cc.compiled);
  for (size_t i : which) input.instances.push_back(table_[i]);
  return input;
}

void OpSearch::compile_and_measure(const std::vector<MicroKernel>& chosen,
                                   const std::vector<std::vector<double>>& predicted,
                                   const std::vector<double>& incumbent, bool every_instance,
                                   RoundReport& report, const std::function<void()>& on_batch) {
  if (chosen.empty()) return;
  const double compile_before = stats_.compile_seconds;
  const double measure_before = stats_.measure_seconds;
  std::vector<CompiledCandidate> compiled = compile(chosen);
  stats_.compiled += int(compiled.size());

  std::vector<MeasureInput> inputs;
  std::vector<std::vector<size_t>> indices;
  for (size_t c = 0; c < compiled.size(); ++c) {
    CompiledCandidate& cc = compiled[c];
    tried_.insert(cc.mk.key());
    const KernelEntry* existing = book_.find(cc.mk.key());
    std::vector<size_t> which;
    if (every_instance) {
      for (size_t i = 0; i < table_.size(); ++i)
        if (!existing || !existing->recorded[i]) which.push_back(i);
    } else {
      const double* row = c < predicted.size() && !predicted[c].empty() ? predicted[c].data() : nullptr;
      which = instances_for(existing, row, incumbent);
    }
    if (which.empty()) continue;
    // A kernel compiled again (to complete it) matches its own earlier binary: not a duplicate.
    if (!cc.duplicate_of.empty() && cc.duplicate_of != cc.mk.key()) {
      ++stats_.duplicates;
      ++report.duplicates;
      continue;
    }
    MeasureInput input = measure_input(cc, which);
    if (cc.status != MeasureStatus::kOk) {
      // Rejected before measuring: recorded on the instances it would have been timed on, so
      // a resumed run does not compile it again.
      MeasureResult failed;
      failed.status = cc.status;
      failed.error = cc.error;
      record(input, which, failed);
      ++report.rejected;
      ++(cc.status == MeasureStatus::kCompileError ? stats_.compile_errors : stats_.over_limits);
      continue;
    }
    inputs.push_back(std::move(input));
    indices.push_back(std::move(which));
  }
  const double timed_us = measure_ready(inputs, indices, report, on_batch);
  round_cost_.add(int(chosen.size()), timed_us,
                  stats_.compile_seconds - compile_before + stats_.measure_seconds - measure_before);
}

size_t OpSearch::picks_within(const std::vector<size_t>& picks,
                              const std::vector<double>& predicted, size_t already,
                              double seconds_share) const {
  if (!std::isfinite(seconds_share) || !round_cost_.known()) return picks.size();
  const size_t n = table_.size();
  // A kernel is timed on all instances, or on a sample of max_instances_per_kernel of them.
  const double timed_share = double(std::min(n, options_.max_instances_per_kernel)) / double(n);
  double timed_us = 0;
  for (size_t keep = 0; keep < picks.size(); ++keep) {
    double row = 0;
    for (size_t i = 0; i < n; ++i)
      if (std::isfinite(predicted[picks[keep] * n + i])) row += predicted[picks[keep] * n + i];
    timed_us += row * timed_share;
    if (round_cost_.seconds(int(already + keep + 1), timed_us) > seconds_share) return keep;
  }
  return picks.size();
}

RoundReport OpSearch::run_round(const Deadline& deadline, int max_new_kernels,
                                const std::function<void()>& on_batch, double seconds_share) {
  RoundReport report;
  report.round = ++stats_.rounds;
  auto start = std::chrono::steady_clock::now();
  const Incumbent inc = incumbent();

  // What this round compiles: kernels a killed run left half-measured, then new candidates.
  std::vector<MicroKernel> chosen = std::move(pending_);
  pending_.clear();
  report.completed = int(chosen.size());
  std::vector<std::vector<double>> chosen_predicted(chosen.size());

  const int slots = std::max(
      0, std::min({options_.kernels_per_round, trial_budget() - trials(), max_new_kernels}));
  if (times_listed_kernels() && slots > 0) {
    report.selected = choose_listed_round(slots, chosen, chosen_predicted);
  } else if (slots > 0) {
    std::vector<const SearchSpace*> spaces;
    for (const SearchSpace& s : spaces_) spaces.push_back(&s);
    // Each template's default micro-kernel (a classic 128 x 128 SGEMM tile on a GPU, a BLIS
    // blocking on a CPU) and its seeds (tiles the vendor libraries run) go first until timed:
    // the model starts out knowing nothing, and a tune should never end behind them. Those of a
    // space that break its constraints for this op are left out.
    for (const SearchSpace& space : spaces_) {
      std::vector<MicroKernel> untried;
      for (const MicroKernel& mk : space.space().starting_kernels())
        if (!tried_.count(mk.key()) && space.is_valid(mk)) untried.push_back(mk);
      borrowed_.insert(borrowed_.begin(), untried.begin(), untried.end());
    }
    const ProposalContext ctx{spaces,      &table_,      &book_,  &inc.latency,
                              &inc.kernel, &population_, &tried_, &borrowed_};
    const std::vector<MicroKernel> proposals = propose_candidates(ctx, options_, rng_);
    std::vector<KernelCandidate> candidates;
    for (const MicroKernel& mk : proposals)
      candidates.push_back(model_->candidate(mk, plan_of(mk), std::nullopt));
    const std::vector<double> predicted = model_->predict(candidates);
    const size_t n = table_.size();
    const SelectionInput in{&predicted, candidates.size(), &table_.weights(), &inc.latency,
                            options_.objective};
    const double epsilon = book_.usable().empty() || explore_afresh_
                               ? options_.first_round_exploration
                               : options_.exploration;
    explore_afresh_ = false;
    // Borrowed kernels first (they come right after the population among the proposals),
    // then the model's selection for the slots left.
    std::vector<size_t> picks;
    std::set<std::string> borrowed_keys;
    for (const MicroKernel& mk : borrowed_) borrowed_keys.insert(mk.key());
    for (size_t c = 0; c < proposals.size() && int(picks.size()) < slots / 2; ++c)
      if (borrowed_keys.count(proposals[c].key())) picks.push_back(c);
    for (size_t p : select_round(in, size_t(slots) - picks.size(), epsilon, rng_))
      if (std::find(picks.begin(), picks.end(), p) == picks.end()) picks.push_back(p);
    // The last rounds of a time budget: as many picks as their predicted cost lets fit, so
    // that a round of slow kernels does not outlast the budget. None fits: the op is done.
    if (const size_t fit = picks_within(picks, predicted, chosen.size(), seconds_share);
        fit < picks.size()) {
      report.cut_for_time = int(picks.size() - fit);
      picks.resize(fit);
      if (picks.empty() && chosen.empty()) {
        --stats_.rounds;  // not started
        stop(StopReason::kTime);
        stats_.model_seconds += seconds_since(start);
        report.weighted_mean_us = weighted_mean_us();
        return report;
      }
    }

    // The runners-up are next round's population (and parents).
    std::vector<char> picked(candidates.size(), 0);
    for (size_t p : picks) picked[p] = 1;
    std::vector<std::pair<double, size_t>> ranked;
    for (size_t c = 0; c < candidates.size(); ++c) {
      const double cost = picked[c] ? INFINITY : assignment_cost_with(in, c);
      if (std::isfinite(cost)) ranked.push_back({cost, c});
    }
    std::stable_sort(ranked.begin(), ranked.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    population_.clear();
    for (size_t r = 0; r < ranked.size() && r < size_t(options_.population); ++r) {
      const size_t c = ranked[r].second;
      population_.push_back({proposals[c], std::vector<double>(predicted.begin() + c * n,
                                                               predicted.begin() + (c + 1) * n)});
    }
    for (size_t p : picks) {
      chosen.push_back(proposals[p]);
      chosen_predicted.emplace_back(predicted.begin() + p * n, predicted.begin() + (p + 1) * n);
    }
    report.selected = int(picks.size());
    if (picks.empty()) stop(StopReason::kExhausted);
    borrowed_.clear();
  }
  stats_.model_seconds += seconds_since(start);

  compile_and_measure(chosen, chosen_predicted, inc.latency, false, report, on_batch);

  start = std::chrono::steady_clock::now();
  if (report.measured > 0) retrain_model();
  stats_.model_seconds += seconds_since(start);

  report.weighted_mean_us = weighted_mean_us();
  if (times_listed_kernels()) {
    // A list is timed in full, however little its later kernels improve on the first.
    if (next_listed_ >= listed_.size() && pending_.empty()) stop(StopReason::kListed);
  } else {
    const bool out_of_trials = trials() >= trial_budget() && pending_.empty();
    if (tracker_.stalled_after(objective_value_us())) {
      if (stats_.restarts < options_.budget.restarts && !out_of_trials && !deadline.expired()) {
        restart();
        report.restarting = true;
      } else {
        stop(StopReason::kNoImprovement);
      }
    }
    if (out_of_trials) stop(StopReason::kTrials);
  }
  if (deadline.expired()) stop(StopReason::kTime);
  return report;
}

void OpSearch::restart() {
  ++stats_.restarts;
  // The population holds the runners-up of rounds that refined the same few tiles; dropped,
  // the next round's mutants come from the measured kernels alone and its fresh samples get
  // the exploration share of a first round. The measurements, the model and the incumbent
  // stay: a fresh start explores anew, it does not forget.
  population_.clear();
  explore_afresh_ = true;
  tracker_.restart();
}

const CostModelQuality& OpSearch::evaluate_quality() {
  const auto start = std::chrono::steady_clock::now();
  std::vector<PeerBook> peers;
  for (const OpSearch* peer : peers_) peers.push_back({&peer->book_, &peer->table_});
  quality_ = evaluate_held_out(book_, table_, env_.machine(), env_.cost_model, options_.holdout_fraction,
                               op_seed(options_.seed, op_->name), options_.regret_tolerance, peers);
  stats_.model_seconds += seconds_since(start);
  // A run that measured nothing new has nothing new to say about the model.
  if (quality_.evaluated && env_.log && stats_.measurements > 0)
    env_.log->append_json(quality_record(env_.workload, op_->name, env_.device, quality_,
                                         options_.regret_tolerance,
                                         model_->model().analytic_params(), env_.machine().target));
  return quality_;
}

}  // namespace dietcode

#include "search/model_quality.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "common/version.h"
#include "cost/analytic_fit.h"
#include "search/op_cost_model.h"
#include "search/tuning_log.h"

namespace dietcode {

namespace {

// The shapes' half of evaluate_held_out: the instances dealt into folds, and for each fold every
// kernel learned on the other folds' instances (the peers' kernels on all of theirs: other ops'
// shapes), then ranked on the fold's instances. Every instance is held out once.
void evaluate_held_out_shapes(const KernelBook& book, const InstanceTable& table,
                              const MachineSpec& machine, const CostModelParams& params, int folds,
                              uint64_t seed, double regret_tolerance,
                              const std::vector<PeerBook>& peers, CostModelQuality& q) {
  if (table.size() < 2) return;
  std::vector<std::string> names;
  for (size_t i = 0; i < table.size(); ++i) names.push_back(table.name(i));
  folds = std::min<int>(folds, int(table.size()));
  // Another stream of the same seed: which instances are held out together is no function of
  // which kernels were.
  const std::vector<int> fold = folds_by_group(names, folds, seed ^ 0x9e3779b97f4a7c15ull);
  const std::vector<size_t> usable = book.usable();
  std::vector<QualityRecord> records;
  for (int f = 0; f < folds; ++f) {
    std::vector<size_t> train, held_out;
    for (size_t i = 0; i < table.size(); ++i) (fold[i] == f ? held_out : train).push_back(i);
    if (train.empty() || held_out.empty()) continue;

    OpCostModel model(table, machine, params);
    for (size_t k : usable) model.learn(book[k], train);
    for (const PeerBook& peer : peers)
      for (size_t k : peer.book->usable()) model.learn_peer((*peer.book)[k], *peer.table);
    if (model.model().measurements() == 0) continue;
    model.retrain();

    std::vector<KernelCandidate> candidates;
    for (size_t k : usable) candidates.push_back(model.candidate(book[k]));
    const std::vector<double> predicted = model.predict(candidates, held_out);
    for (size_t c = 0; c < usable.size(); ++c) {
      const KernelEntry& e = book[usable[c]];
      for (size_t j = 0; j < held_out.size(); ++j)
        if (e.latency_us[held_out[j]] > 0)
          records.push_back({table.name(held_out[j]), e.key, predicted[c * held_out.size() + j],
                             e.latency_us[held_out[j]], table.weights()[held_out[j]]});
    }
    q.held_out_instances += held_out.size();
  }
  if (records.empty()) return;
  q.shapes = evaluate_quality(records, regret_tolerance);
  q.shapes_evaluated = true;
}

}  // namespace

int held_out_folds(double holdout_fraction) {
  return std::max(2, int(std::lround(1.0 / std::clamp(holdout_fraction, 0.05, 0.5))));
}

CostModelQuality evaluate_held_out(const KernelBook& book, const InstanceTable& table,
                                   const MachineSpec& machine, const CostModelParams& params,
                                   double holdout_fraction, uint64_t seed,
                                   double regret_tolerance, const std::vector<PeerBook>& peers) {
  CostModelQuality q;
  const std::vector<size_t> usable = book.usable();
  if (usable.size() < kMinKernelsForQuality) return q;

  const int folds = held_out_folds(holdout_fraction);
  std::vector<std::string> keys;
  for (size_t k : usable) keys.push_back(book[k].key);
  const std::vector<int> fold = folds_by_group(keys, folds, seed);

  std::vector<QualityRecord> records;
  size_t train_total = 0, peer_total = 0;
  for (int f = 0; f < folds; ++f) {
    OpCostModel model(table, machine, params);
    std::vector<size_t> held_out;
    std::set<std::string> held_out_keys;
    for (size_t j = 0; j < usable.size(); ++j) {
      if (fold[j] == f) {
        held_out.push_back(usable[j]);
        held_out_keys.insert(keys[j]);
      } else {
        model.learn(book[usable[j]]);
        ++train_total;
      }
    }
    if (held_out.empty()) continue;
    ++q.folds;
    // A held-out kernel is one no op has measured: its rows in the peers' books are left out.
    for (const PeerBook& peer : peers)
      for (size_t k : peer.book->usable()) {
        const KernelEntry& e = (*peer.book)[k];
        if (held_out_keys.count(e.key)) {
          if (model.learns_from(*peer.table)) ++q.peer_kernels_withheld;
        } else if (model.learn_peer(e, *peer.table)) {
          ++peer_total;
        }
      }
    model.retrain();

    std::vector<KernelCandidate> candidates;
    for (size_t k : held_out) candidates.push_back(model.candidate(book[k]));
    const std::vector<double> predicted = model.predict(candidates);
    for (size_t j = 0; j < held_out.size(); ++j) {
      const KernelEntry& e = book[held_out[j]];
      for (size_t i = 0; i < table.size(); ++i)
        if (e.latency_us[i] > 0)  // false for NaN: measured instances only
          records.push_back({table.name(i), e.key, predicted[j * table.size() + i],
                             e.latency_us[i], table.weights()[i]});
    }
    q.held_out_kernels += held_out.size();
  }
  if (q.folds == 0) return q;
  // Per fold, rounded: what one fold's model learned from.
  q.train_kernels = (train_total + q.folds / 2) / q.folds;
  q.peer_kernels = (peer_total + q.folds / 2) / q.folds;
  q.summary = evaluate_quality(records, regret_tolerance);
  q.evaluated = true;
  evaluate_held_out_shapes(book, table, machine, params, folds, seed, regret_tolerance, peers, q);
  return q;
}

nlohmann::json quality_record(const std::string& workload, const std::string& op,
                              const DeviceIdentity& device, const CostModelQuality& quality,
                              double regret_tolerance, const AnalyticParams& fitted,
                              Target target) {
  auto number = [](double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(); };
  const QualitySummary& s = quality.summary;
  // What the machine looked like to the model: a CPU's packing cost and pool wake-up differ
  // from guest to guest (docs/cpu-target.md), a GPU's partial-wave penalty from part to part.
  const FittedShapeKnob knob = fitted_shape_knob(fitted, target);
  const nlohmann::json analytic = {{"launch_overhead_us", number(fitted.launch_overhead_us)},
                                   {knob.name, number(knob.value)}};
  return {{"kind", "cost_model_quality"},
          {"workload", workload},
          {"op", op},
          {"device", device.name},
          {"arch", device.arch},
          {"simulated", device.simulated},
          {"folds", quality.folds},
          {"train_kernels", quality.train_kernels},
          {"held_out_kernels", quality.held_out_kernels},
          {"peer_kernels", quality.peer_kernels},
          {"held_out_shapes",
           quality.shapes_evaluated
               ? nlohmann::json{{"instances", quality.held_out_instances},
                                {"mean_spearman", number(quality.shapes.mean_spearman)},
                                {"top1_within_tolerance", number(quality.shapes.fraction_within)},
                                {"weighted_mean_regret", number(quality.shapes.weighted_mean_regret)},
                                {"max_regret", number(quality.shapes.max_regret)}}
               : nlohmann::json()},
          {"instances", s.instances},
          {"mean_spearman", number(s.mean_spearman)},
          {"top1_within_tolerance", number(s.fraction_within)},
          {"regret_tolerance", regret_tolerance},
          {"weighted_mean_regret", number(s.weighted_mean_regret)},
          {"max_regret", number(s.max_regret)},
          {"analytic", analytic},
          {"tool_version", tool_version()},
          {"timestamp", iso8601_utc_now()}};
}

}  // namespace dietcode

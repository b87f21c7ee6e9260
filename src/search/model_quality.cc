#include "search/model_quality.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "common/version.h"
#include "search/op_cost_model.h"
#include "search/tuning_log.h"

namespace dietcode {

namespace {

// The shapes' half of evaluate_held_out: a fold of the instances held out, every kernel learned
// on the others (the peers' kernels on all of theirs: other ops' shapes), then every kernel
// ranked on each held-out instance.
void evaluate_held_out_shapes(const KernelBook& book, const InstanceTable& table,
                              const MachineSpec& machine, const CostModelParams& params, int folds,
                              uint64_t seed, double regret_tolerance,
                              const std::vector<PeerBook>& peers, CostModelQuality& q) {
  if (table.size() < 2) return;
  std::vector<std::string> names;
  for (size_t i = 0; i < table.size(); ++i) names.push_back(table.name(i));
  // Another stream of the same seed: which instances are held out is no function of which
  // kernels were.
  const std::vector<int> fold = folds_by_group(names, std::min<int>(folds, int(table.size())),
                                               seed ^ 0x9e3779b97f4a7c15ull);
  std::vector<size_t> train, held_out;
  for (size_t i = 0; i < table.size(); ++i) (fold[i] == 0 ? held_out : train).push_back(i);
  if (train.empty() || held_out.empty()) return;

  OpCostModel model(table, machine, params);
  const std::vector<size_t> usable = book.usable();
  for (size_t k : usable) model.learn(book[k], train);
  for (const PeerBook& peer : peers)
    for (size_t k : peer.book->usable()) model.learn_peer((*peer.book)[k], *peer.table);
  if (model.model().measurements() == 0) return;
  model.retrain();

  std::vector<KernelCandidate> candidates;
  for (size_t k : usable) candidates.push_back(model.candidate(book[k]));
  const std::vector<double> predicted = model.predict(candidates, held_out);
  std::vector<QualityRecord> records;
  for (size_t c = 0; c < usable.size(); ++c) {
    const KernelEntry& e = book[usable[c]];
    for (size_t j = 0; j < held_out.size(); ++j)
      if (e.latency_us[held_out[j]] > 0)
        records.push_back({table.name(held_out[j]), e.key, predicted[c * held_out.size() + j],
                           e.latency_us[held_out[j]], table.weights()[held_out[j]]});
  }
  if (records.empty()) return;
  q.held_out_instances = held_out.size();
  q.shapes = evaluate_quality(records, regret_tolerance);
  q.shapes_evaluated = true;
}

}  // namespace

CostModelQuality evaluate_held_out(const KernelBook& book, const InstanceTable& table,
                                   const MachineSpec& machine, const CostModelParams& params,
                                   double holdout_fraction, uint64_t seed,
                                   double regret_tolerance, const std::vector<PeerBook>& peers) {
  CostModelQuality q;
  const std::vector<size_t> usable = book.usable();
  if (usable.size() < kMinKernelsForQuality) return q;

  // One fold of round(1 / fraction) is held out: 5 folds for the default 20%.
  const int folds = std::max(2, int(std::lround(1.0 / std::clamp(holdout_fraction, 0.05, 0.5))));
  std::vector<std::string> keys;
  for (size_t k : usable) keys.push_back(book[k].key);
  const std::vector<int> fold = folds_by_group(keys, folds, seed);

  OpCostModel model(table, machine, params);
  std::vector<size_t> held_out;
  for (size_t j = 0; j < usable.size(); ++j) {
    if (fold[j] == 0) {
      held_out.push_back(usable[j]);
    } else {
      model.learn(book[usable[j]]);
      ++q.train_kernels;
    }
  }
  std::set<std::string> held_out_keys;
  for (size_t k : held_out) held_out_keys.insert(book[k].key);
  for (const PeerBook& peer : peers)
    for (size_t k : peer.book->usable())
      if (!held_out_keys.count((*peer.book)[k].key) &&
          model.learn_peer((*peer.book)[k], *peer.table))
        ++q.peer_kernels;
  model.retrain();

  std::vector<KernelCandidate> candidates;
  for (size_t k : held_out) candidates.push_back(model.candidate(book[k]));
  const std::vector<double> predicted = model.predict(candidates);
  std::vector<QualityRecord> records;
  for (size_t j = 0; j < held_out.size(); ++j) {
    const KernelEntry& e = book[held_out[j]];
    for (size_t i = 0; i < table.size(); ++i)
      if (e.latency_us[i] > 0)  // false for NaN: measured instances only
        records.push_back({table.name(i), e.key, predicted[j * table.size() + i], e.latency_us[i],
                           table.weights()[i]});
  }
  q.held_out_kernels = held_out.size();
  q.summary = evaluate_quality(records, regret_tolerance);
  q.evaluated = true;
  evaluate_held_out_shapes(book, table, machine, params, folds, seed, regret_tolerance, peers, q);
  return q;
}

nlohmann::json quality_record(const std::string& workload, const std::string& op,
                              const DeviceIdentity& device, const CostModelQuality& quality,
                              double regret_tolerance) {
  auto number = [](double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(); };
  const QualitySummary& s = quality.summary;
  return {{"kind", "cost_model_quality"},
          {"workload", workload},
          {"op", op},
          {"device", device.name},
          {"arch", device.arch},
          {"simulated", device.simulated},
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
          {"tool_version", tool_version()},
          {"timestamp", iso8601_utc_now()}};
}

}  // namespace dietcode

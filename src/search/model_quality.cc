#include "search/model_quality.h"

#include <algorithm>
#include <cmath>

#include "common/version.h"
#include "search/op_cost_model.h"
#include "search/tuning_log.h"

namespace dietcode {

CostModelQuality evaluate_held_out(const KernelBook& book, const InstanceTable& table,
                                   const MachineSpec& machine, const CostModelParams& params,
                                   double holdout_fraction, uint64_t seed,
                                   double regret_tolerance) {
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

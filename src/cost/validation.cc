#include "cost/validation.h"

#include <map>
#include <stdexcept>

namespace dietcode {

QualitySummary cross_validate(const std::vector<KernelCandidate>& kernels,
                              const std::vector<MeasuredLatency>& measurements,
                              const CostModelParams& params, int folds, uint64_t seed,
                              double regret_tolerance) {
  if (folds < 2) throw std::invalid_argument("cross_validate: folds must be >= 2");
  for (const MeasuredLatency& m : measurements)
    if (m.kernel >= kernels.size())
      throw std::invalid_argument("cross_validate: kernel index " + std::to_string(m.kernel) +
                                  " out of " + std::to_string(kernels.size()));
  std::vector<std::string> keys;
  keys.reserve(kernels.size());
  for (const KernelCandidate& c : kernels) keys.push_back(c.mk.key());
  std::vector<int> fold_of = folds_by_group(keys, folds, seed);

  std::vector<QualityRecord> records;
  for (int fold = 0; fold < folds; ++fold) {
    CostModel model(params);
    for (const MeasuredLatency& m : measurements)
      if (fold_of[m.kernel] != fold)
        model.add_measurement(kernels[m.kernel], m.shape, m.latency_us, m.weight);
    model.retrain();

    // Predict each held-out kernel once over the shapes it was measured on.
    std::map<size_t, std::vector<const MeasuredLatency*>> held_out;
    for (const MeasuredLatency& m : measurements)
      if (fold_of[m.kernel] == fold) held_out[m.kernel].push_back(&m);
    std::vector<KernelCandidate> candidates;
    std::vector<std::vector<const MeasuredLatency*>> rows;
    for (auto& [kernel, ms] : held_out) {
      candidates.push_back(kernels[kernel]);
      rows.push_back(std::move(ms));
    }
    std::vector<double> f_mk = model.predict_throughput(candidates);
    std::vector<KernelProfile> profiles;
    for (const KernelCandidate& c : candidates) profiles.push_back(make_profile(c));
    for (size_t i = 0; i < candidates.size(); ++i) {
      for (const MeasuredLatency* m : rows[i]) {
        AnalyticTerms t = analytic_terms(profiles[i], m->shape, model.analytic_params());
        records.push_back({std::to_string(fold) + ":" + m->instance, keys[m->kernel],
                           model_latency_us(t, f_mk[i]), m->latency_us, m->weight});
      }
    }
  }
  return evaluate_quality(records, regret_tolerance);
}

}  // namespace dietcode

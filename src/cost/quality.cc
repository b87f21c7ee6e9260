#include "cost/quality.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <stdexcept>

namespace dietcode {

std::vector<double> average_ranks(const std::vector<double>& values) {
  std::vector<size_t> order(values.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return values[a] < values[b]; });
  std::vector<double> ranks(values.size());
  for (size_t start = 0; start < order.size();) {
    size_t end = start + 1;
    while (end < order.size() && values[order[end]] == values[order[start]]) ++end;
    double mean_rank = (double(start + 1) + double(end)) / 2.0;  // ranks start+1 .. end
    for (size_t i = start; i < end; ++i) ranks[order[i]] = mean_rank;
    start = end;
  }
  return ranks;
}

double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size())
    throw std::invalid_argument("spearman: " + std::to_string(a.size()) + " values against " +
                                std::to_string(b.size()));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (a.size() < 2) return nan;
  std::vector<double> ra = average_ranks(a), rb = average_ranks(b);
  double n = double(a.size());
  double mean = (n + 1) / 2;  // ranks always average to (n + 1) / 2, ties or not
  double cov = 0, va = 0, vb = 0;
  for (size_t i = 0; i < ra.size(); ++i) {
    cov += (ra[i] - mean) * (rb[i] - mean);
    va += (ra[i] - mean) * (ra[i] - mean);
    vb += (rb[i] - mean) * (rb[i] - mean);
  }
  if (va == 0 || vb == 0) return nan;
  return cov / std::sqrt(va * vb);
}

namespace {

InstanceQuality score_instance(const std::string& name,
                               const std::vector<const QualityRecord*>& rs) {
  InstanceQuality q;
  q.instance = name;
  q.candidates = int(rs.size());
  q.weight = rs.front()->weight;
  std::vector<double> predicted, measured;
  for (const QualityRecord* r : rs) {
    predicted.push_back(r->predicted_us);
    measured.push_back(r->measured_us);
  }
  q.spearman = spearman(predicted, measured);
  double best_measured = *std::min_element(measured.begin(), measured.end());
  double best_predicted = *std::min_element(predicted.begin(), predicted.end());
  double picked = 0;
  int ties = 0;
  for (size_t i = 0; i < rs.size(); ++i) {
    if (predicted[i] == best_predicted) {
      if (ties == 0) q.picked = rs[i]->kernel;
      picked += measured[i];
      ++ties;
    }
    if (measured[i] == best_measured && q.best.empty()) q.best = rs[i]->kernel;
  }
  q.regret = (picked / ties) / best_measured - 1.0;
  return q;
}

}  // namespace

QualitySummary evaluate_quality(const std::vector<QualityRecord>& records,
                                double regret_tolerance) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<const QualityRecord*>> by_instance;
  for (const QualityRecord& r : records) {
    auto& group = by_instance[r.instance];
    if (group.empty()) order.push_back(r.instance);
    group.push_back(&r);
  }

  QualitySummary s;
  double spearman_sum = 0, regret_sum = 0, weight_sum = 0;
  int within = 0;
  for (const std::string& name : order) {
    InstanceQuality q = score_instance(name, by_instance[name]);
    if (!std::isnan(q.spearman)) {
      spearman_sum += q.spearman;
      ++s.ranked_instances;
    }
    if (q.regret <= regret_tolerance) ++within;
    regret_sum += q.weight * q.regret;
    weight_sum += q.weight;
    s.max_regret = std::max(s.max_regret, q.regret);
    s.per_instance.push_back(q);
  }
  s.instances = int(order.size());
  s.mean_spearman = s.ranked_instances ? spearman_sum / s.ranked_instances
                                       : std::numeric_limits<double>::quiet_NaN();
  s.fraction_within = s.instances ? double(within) / s.instances : 0;
  s.weighted_mean_regret = weight_sum > 0 ? regret_sum / weight_sum : 0;
  return s;
}

std::vector<int> folds_by_group(const std::vector<std::string>& group_of_row, int folds,
                                uint64_t seed) {
  if (folds < 1) throw std::invalid_argument("folds_by_group: folds must be >= 1");
  std::vector<std::string> groups(group_of_row);
  std::sort(groups.begin(), groups.end());
  groups.erase(std::unique(groups.begin(), groups.end()), groups.end());
  // Fisher-Yates with the raw engine: std::shuffle and the std distributions differ between
  // standard libraries, and a split must be the same wherever the log is replayed.
  std::mt19937_64 engine(seed);
  for (size_t i = groups.size(); i > 1; --i) std::swap(groups[i - 1], groups[engine() % i]);
  std::map<std::string, int> fold_of;
  for (size_t i = 0; i < groups.size(); ++i) fold_of[groups[i]] = int(i % size_t(folds));
  std::vector<int> out;
  out.reserve(group_of_row.size());
  for (const std::string& g : group_of_row) out.push_back(fold_of[g]);
  return out;
}

}  // namespace dietcode

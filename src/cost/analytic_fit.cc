#include "cost/analytic_fit.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace dietcode {

namespace {

constexpr double kGammaStep = 0.1;  // the coarse grid's gamma step over [0, 1]
constexpr int kRefineSteps = 5;     // the fine grid's steps are 1/5 of the coarse ones
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A grid axis as the search walks it: lo, lo + step, ... up to hi (accumulated, as a loop
// would), each clamped to [min, max].
std::vector<double> axis(double lo, double hi, double step, double min, double max) {
  std::vector<double> out;
  if (!(step > 0)) return {std::clamp(lo, min, max)};
  for (double v = lo; v <= hi + 1e-9; v += step) out.push_back(std::clamp(v, min, max));
  return out;
}

// The three parts of every measurement's label: log(f_MK / peak) = fixed - occ(gamma) -
// compute(overhead), each NaN where the label would be.
class LabelParts {
 public:
  explicit LabelParts(const std::vector<FitMeasurement>& rows) : rows_(rows) {
    size_t kernels = 0;
    for (const FitMeasurement& r : rows) kernels = std::max(kernels, r.kernel + 1);
    std::vector<std::vector<size_t>> members(kernels);
    for (size_t i = 0; i < rows.size(); ++i) members[rows[i].kernel].push_back(i);
    for (std::vector<size_t>& m : members)
      if (m.size() >= 2) groups_.push_back(std::move(m));
    fixed_.reserve(rows.size());
    for (const FitMeasurement& r : rows) {
      const AnalyticTerms& t = *r.terms;
      fixed_.push_back(t.flops > 0 && t.peak_flops_per_us > 0 && t.f_pad > 0
                           ? std::log(t.flops) - std::log(t.peak_flops_per_us) - std::log(t.f_pad)
                           : kNaN);
    }
  }

  // log f_occ of every measurement under gamma, computed once per gamma.
  const std::vector<double>& occupancy(double gamma) {
    auto [it, fresh] = occupancy_.try_emplace(gamma);
    if (fresh) {
      it->second.reserve(rows_.size());
      AnalyticParams p;
      p.underfilled_sm_gamma = gamma;
      for (const FitMeasurement& r : rows_) {
        const double f_occ = with_params(*r.terms, p).f_occ;
        it->second.push_back(f_occ > 0 ? std::log(f_occ) : kNaN);
      }
    }
    return it->second;
  }

  // log of the compute time every measurement leaves under the overhead, once per overhead.
  const std::vector<double>& compute(double overhead_us, const AnalyticParams& knobs) {
    auto [it, fresh] = compute_.try_emplace(overhead_us);
    if (fresh) {
      it->second.reserve(rows_.size());
      AnalyticParams p = knobs;
      p.launch_overhead_us = overhead_us;
      for (const FitMeasurement& r : rows_) {
        const double us = compute_time_us(with_params(*r.terms, p), r.latency_us);
        it->second.push_back(us > 0 ? std::log(us) : kNaN);
      }
    }
    return it->second;
  }

  // The pooled within-kernel weighted variance of the labels; +inf when nothing is pooled.
  double spread(const std::vector<double>& occ, const std::vector<double>& comp) const {
    double sum_sq = 0, weight = 0;
    for (const std::vector<size_t>& members : groups_) {
      double w_sum = 0, mean = 0;
      int n = 0;
      for (size_t i : members) {
        const double y = fixed_[i] - occ[i] - comp[i];
        if (std::isnan(y)) continue;
        w_sum += rows_[i].weight;
        mean += rows_[i].weight * y;
        ++n;
      }
      if (n < 2 || !(w_sum > 0)) continue;
      mean /= w_sum;
      for (size_t i : members) {
        const double y = fixed_[i] - occ[i] - comp[i];
        if (!std::isnan(y)) sum_sq += rows_[i].weight * (y - mean) * (y - mean);
      }
      weight += w_sum;
    }
    return weight > 0 ? sum_sq / weight : std::numeric_limits<double>::infinity();
  }

 private:
  const std::vector<FitMeasurement>& rows_;
  std::vector<std::vector<size_t>> groups_;  // kernels with two measurements or more
  std::vector<double> fixed_;
  std::map<double, std::vector<double>> occupancy_, compute_;
};

}  // namespace

AnalyticFit fit_analytic(const std::vector<FitMeasurement>& rows, const AnalyticParams& start,
                         double max_overhead_us, double overhead_step_us) {
  AnalyticFit fit;
  fit.params = start;
  LabelParts parts(rows);
  double best = parts.spread(parts.occupancy(start.underfilled_sm_gamma),
                             parts.compute(start.launch_overhead_us, start));
  if (!std::isfinite(best)) return fit;  // no kernel measured on two shapes yet
  auto search = [&](const std::vector<double>& gammas, const std::vector<double>& overheads) {
    for (double g : gammas) {
      const std::vector<double>& occ = parts.occupancy(g);
      for (double o : overheads) {
        const double s = parts.spread(occ, parts.compute(o, start));
        if (s < best * (1 - 1e-9)) {
          best = s;
          fit.params.underfilled_sm_gamma = g;
          fit.params.launch_overhead_us = o;
        }
      }
    }
  };
  const double o_max = std::max(0.0, max_overhead_us);
  search(axis(0, 1, kGammaStep, 0, 1), axis(0, o_max, overhead_step_us, 0, o_max));
  const double g0 = fit.params.underfilled_sm_gamma, o0 = fit.params.launch_overhead_us;
  search(axis(g0 - kGammaStep, g0 + kGammaStep, kGammaStep / kRefineSteps, 0, 1),
         axis(o0 - overhead_step_us, o0 + overhead_step_us, overhead_step_us / kRefineSteps, 0,
              o_max));
  fit.spread = best;
  fit.fitted = true;
  return fit;
}

double label_spread(const std::vector<FitMeasurement>& rows, const AnalyticParams& p) {
  size_t kernels = 0;
  for (const FitMeasurement& r : rows) kernels = std::max(kernels, r.kernel + 1);
  double sum_sq = 0, weight = 0;
  for (size_t k = 0; k < kernels; ++k) {
    std::vector<std::pair<double, double>> labels;  // (label, weight)
    double w_sum = 0, mean = 0;
    for (const FitMeasurement& r : rows) {
      if (r.kernel != k) continue;
      const AnalyticTerms t = with_params(*r.terms, p);
      const double f = implied_throughput(t, r.latency_us);
      if (!(f > 0) || !std::isfinite(f)) continue;
      const double y = std::log(f / t.peak_flops_per_us);
      labels.push_back({y, r.weight});
      w_sum += r.weight;
      mean += r.weight * y;
    }
    if (labels.size() < 2 || !(w_sum > 0)) continue;
    mean /= w_sum;
    for (const auto& [y, w] : labels) sum_sq += w * (y - mean) * (y - mean);
    weight += w_sum;
  }
  return weight > 0 ? sum_sq / weight : std::numeric_limits<double>::infinity();
}

}  // namespace dietcode

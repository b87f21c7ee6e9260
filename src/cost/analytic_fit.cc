#include "cost/analytic_fit.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <thread>
#include <utility>

namespace dietcode {

namespace {

constexpr int kRefineSteps = 5;  // the fine grid's steps are 1/5 of the coarse ones
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// Below this many measurements the fit runs on the calling thread (a fresh tune's first
// rounds: milliseconds). A resumed log brings tens of thousands, and then the grid's few
// hundred pairs, each a pass over every measurement, were most of a round's model time.
constexpr size_t kRowsPerFitThread = 4096;

// Threads for the grid: the host's, up to 16. The search retrains between rounds, when no
// kernel is being timed, so the fit may use every core.
int fit_threads() {
  const unsigned n = std::thread::hardware_concurrency();
  return int(std::clamp(n, 1u, 16u));
}

// Calls body(i) for i in [0, n) on up to `threads` threads, each taking every threads-th i.
template <class Body>
void parallel_for(size_t n, int threads, const Body& body) {
  const size_t workers = std::min(n, size_t(std::max(1, threads)));
  if (workers <= 1) {
    for (size_t i = 0; i < n; ++i) body(i);
    return;
  }
  std::vector<std::thread> pool;
  for (size_t w = 1; w < workers; ++w)
    pool.emplace_back([&, w] {
      for (size_t i = w; i < n; i += workers) body(i);
    });
  for (size_t i = 0; i < n; i += workers) body(i);
  for (std::thread& t : pool) t.join();
}

// A grid axis as the search walks it: lo, lo + step, ... up to hi (accumulated, as a loop
// would), each clamped to [min, max].
std::vector<double> axis(double lo, double hi, double step, double min, double max) {
  std::vector<double> out;
  if (!(step > 0)) return {std::clamp(lo, min, max)};
  for (double v = lo; v <= hi + 1e-9; v += step) out.push_back(std::clamp(v, min, max));
  return out;
}

// The knob of f_occ the fit searches beside the overhead, per target: on a GPU the
// underfilled-SM gamma (waves), on a CPU the packing cost per element (the busiest thread's
// share of its time in FMAs, which enters f_occ through balance). f_occ depends on it alone.
struct ShapeKnob {
  const char* name;  // as the log spells it (fitted_shape_knob)
  double AnalyticParams::*field;
  double lo, hi, step;  // the coarse grid
};

ShapeKnob shape_knob(Target target) {
  // 0-1.5 ns: replays of docs/results/cpu's logs fit 0.1 on the Zen 4 guest, 0.2-0.3 on Zen 5.
  if (target == Target::kCpu)
    return {"pack_ns_per_element", &AnalyticParams::pack_ns_per_element, 0.0, 1.5, 0.1};
  return {"underfilled_sm_gamma", &AnalyticParams::underfilled_sm_gamma, 0.0, 1.0, 0.1};
}

// The three parts of every measurement's label: log(f_MK / peak) = fixed - occ(knob) -
// compute(overhead), each NaN where the label would be.
class LabelParts {
 public:
  LabelParts(const std::vector<FitMeasurement>& rows, const ShapeKnob& knob)
      : rows_(rows), knob_(knob) {
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

  // Makes the tables of the shape knob's values and the overheads not made yet (the fitter's
  // knobs as in `knobs`), spread over the threads; each table is computed by one thread, as it
  // would be serially, so the values do not depend on the thread count.
  void prepare(const std::vector<double>& shape_values, const std::vector<double>& overheads,
               const AnalyticParams& knobs, int threads) {
    std::vector<std::pair<bool, double>> todo;  // (is a shape knob value, value)
    for (double g : shape_values)
      if (occupancy_.try_emplace(g).second) todo.push_back({true, g});
    for (double o : overheads)
      if (compute_.try_emplace(o).second) todo.push_back({false, o});
    parallel_for(todo.size(), threads, [&](size_t i) {
      const auto [is_shape, value] = todo[i];
      std::vector<double>& out = is_shape ? occupancy_.at(value) : compute_.at(value);
      out.reserve(rows_.size());
      AnalyticParams p = knobs;
      if (is_shape) {
        p = AnalyticParams{};  // f_occ depends on the shape knob alone
        p.*knob_.field = value;
      } else {
        p.launch_overhead_us = value;
      }
      for (const FitMeasurement& r : rows_) {
        const AnalyticTerms t = with_params(*r.terms, p);
        const double v = is_shape ? t.f_occ : compute_time_us(t, r.latency_us);
        out.push_back(v > 0 ? std::log(v) : kNaN);
      }
    });
  }
  // The tables prepare() made (read-only, so any thread may read them).
  const std::vector<double>& occupancy(double shape_value) const {
    return occupancy_.at(shape_value);
  }
  const std::vector<double>& compute(double overhead_us) const { return compute_.at(overhead_us); }

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
  const ShapeKnob knob_;
  std::vector<std::vector<size_t>> groups_;  // kernels with two measurements or more
  std::vector<double> fixed_;
  std::map<double, std::vector<double>> occupancy_, compute_;
};

}  // namespace

AnalyticFit fit_analytic(const std::vector<FitMeasurement>& rows, const AnalyticParams& start,
                         double max_overhead_us, double overhead_step_us, int threads) {
  AnalyticFit fit;
  fit.params = start;
  const ShapeKnob knob = shape_knob(rows.empty() ? Target::kCuda : rows.front().terms->target);
  LabelParts parts(rows, knob);
  // Threads only where the grid's work (pairs times rows) outweighs starting them.
  if (rows.size() < kRowsPerFitThread) threads = 1;
  else if (threads <= 0) threads = fit_threads();
  parts.prepare({start.*knob.field}, {start.launch_overhead_us}, start, 1);
  double best =
      parts.spread(parts.occupancy(start.*knob.field), parts.compute(start.launch_overhead_us));
  if (!std::isfinite(best)) return fit;  // no kernel measured on two shapes yet
  // Every pair's spread is scored in parallel, then the pairs are walked in grid order with
  // the serial rule (a pair replaces the best only if clearly lower), so the fit is the same
  // on any number of threads.
  auto search = [&](const std::vector<double>& shape_values, const std::vector<double>& overheads) {
    parts.prepare(shape_values, overheads, start, threads);
    std::vector<double> spreads(shape_values.size() * overheads.size());
    parallel_for(spreads.size(), threads, [&](size_t i) {
      spreads[i] = parts.spread(parts.occupancy(shape_values[i / overheads.size()]),
                                parts.compute(overheads[i % overheads.size()]));
    });
    for (size_t i = 0; i < spreads.size(); ++i)
      if (spreads[i] < best * (1 - 1e-9)) {
        best = spreads[i];
        fit.params.*knob.field = shape_values[i / overheads.size()];
        fit.params.launch_overhead_us = overheads[i % overheads.size()];
      }
  };
  const double o_max = std::max(0.0, max_overhead_us);
  search(axis(knob.lo, knob.hi, knob.step, knob.lo, knob.hi),
         axis(0, o_max, overhead_step_us, 0, o_max));
  const double k0 = fit.params.*knob.field, o0 = fit.params.launch_overhead_us;
  search(axis(k0 - knob.step, k0 + knob.step, knob.step / kRefineSteps, knob.lo, knob.hi),
         axis(o0 - overhead_step_us, o0 + overhead_step_us, overhead_step_us / kRefineSteps, 0,
              o_max));
  fit.spread = best;
  fit.fitted = true;
  return fit;
}

FittedShapeKnob fitted_shape_knob(const AnalyticParams& params, Target target) {
  const ShapeKnob knob = shape_knob(target);
  return {knob.name, params.*knob.field};
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

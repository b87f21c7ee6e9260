#include "search/candidate_selection.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "space/space.h"

namespace dietcode {

namespace {

bool all_finite(const SelectionInput& in, size_t c) {
  const size_t n = in.weights->size();
  const double* row = in.predicted->data() + c * n;
  for (size_t i = 0; i < n; ++i)
    if (!std::isfinite(row[i])) return false;
  return true;
}

// sum_i w_i * f(min(current_i, p_ci)), and sum_i w_i * f(p_ci) for ties, f the objective's
// term (t or log t).
void costs(const SelectionInput& in, const std::vector<double>& current, size_t c, double* cost,
           double* mean) {
  const size_t n = in.weights->size();
  const double* row = in.predicted->data() + c * n;
  double total = 0, plain = 0;
  for (size_t i = 0; i < n; ++i) {
    const double w = (*in.weights)[i];
    total += w * objective_term(in.objective, std::min(current[i], row[i]));
    plain += w * objective_term(in.objective, row[i]);
  }
  *cost = total;
  *mean = plain;
}

}  // namespace

double assignment_cost_with(const SelectionInput& in, size_t c) {
  double cost, mean;
  costs(in, *in.incumbent, c, &cost, &mean);
  return cost;
}

std::vector<size_t> select_greedy(const SelectionInput& in, size_t count) {
  std::vector<double> current = *in.incumbent;
  std::vector<char> taken(in.candidates, 0);
  for (size_t c = 0; c < in.candidates; ++c)
    if (!all_finite(in, c)) taken[c] = 1;
  std::vector<size_t> picked;
  const size_t n = in.weights->size();
  while (picked.size() < count) {
    size_t best = in.candidates;
    double best_cost = std::numeric_limits<double>::infinity(), best_mean = best_cost;
    for (size_t c = 0; c < in.candidates; ++c) {
      if (taken[c]) continue;
      double cost, mean;
      costs(in, current, c, &cost, &mean);
      // Costs within a relative 1e-9 are a tie: rounding must not decide between kernels.
      const double tolerance = 1e-9 * std::max(std::abs(best_cost), 1e-30);
      const bool better = best == in.candidates || cost < best_cost - tolerance ||
                          (cost <= best_cost + tolerance && mean < best_mean);
      if (better) best = c, best_cost = cost, best_mean = mean;
    }
    if (best == in.candidates) break;
    taken[best] = 1;
    picked.push_back(best);
    const double* row = in.predicted->data() + best * n;
    for (size_t i = 0; i < n; ++i) current[i] = std::min(current[i], row[i]);
  }
  return picked;
}

std::vector<size_t> select_round(const SelectionInput& in, size_t count, double exploration,
                                 std::mt19937_64& rng, std::vector<bool>* random_picked) {
  const auto random_count = size_t(std::lround(double(count) * std::clamp(exploration, 0.0, 1.0)));
  std::vector<size_t> picked = select_greedy(in, count - std::min(random_count, count));
  std::vector<char> taken(in.candidates, 0);
  for (size_t c : picked) taken[c] = 1;
  std::vector<size_t> rest;
  for (size_t c = 0; c < in.candidates; ++c)
    if (!taken[c] && all_finite(in, c)) rest.push_back(c);
  if (random_picked) random_picked->assign(picked.size(), false);
  while (picked.size() < count && !rest.empty()) {
    size_t j = size_t(uniform_index(rng, rest.size()));
    picked.push_back(rest[j]);
    rest.erase(rest.begin() + std::ptrdiff_t(j));
    if (random_picked) random_picked->push_back(true);
  }
  return picked;
}

}  // namespace dietcode

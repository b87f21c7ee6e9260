// Fitting the dispatcher: choose a kernel subset, then grow a regret-minimising tree.
//
// Both steps minimise weighted time, sum(weight * latency of the picked kernel), which equals
// the weighted regret plus a constant. A kernel with no time on an instance (not measured,
// not predicted) may not serve it: costs are compared as (instances left without a usable
// kernel, weighted time), lexicographically, so feasibility always comes first.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "common/error.h"
#include "dispatch/decision_tree.h"
#include "dispatch/regret_table.h"

namespace dietcode {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Cost {
  int unknown = 0;  // instances the choice has no time for
  double us = 0;    // weighted time over the others
};

bool better(const Cost& a, const Cost& b, double margin) {
  if (a.unknown != b.unknown) return a.unknown < b.unknown;
  return a.us < b.us - margin;
}

// A margin against floating-point noise: improvements smaller than this are ties.
double noise(double scale) { return 1e-12 * std::max(1.0, std::fabs(scale)); }

std::string values_text(const std::vector<int64_t>& values) {
  std::string out;
  for (int64_t v : values) out += (out.empty() ? "" : ",") + std::to_string(v);
  return out;
}

// ---- kernel subset -------------------------------------------------------------------------

// Per instance, the weighted time of the best kernel in a subset (kInf when none has a time).
struct SubsetState {
  std::vector<double> best, second;
  std::vector<int> best_kernel;
};

SubsetState subset_state(const RegretTable& t, const std::vector<int>& subset) {
  SubsetState s{std::vector<double>(t.instances(), kInf), std::vector<double>(t.instances(), kInf),
                std::vector<int>(t.instances(), -1)};
  for (int i = 0; i < t.instances(); ++i)
    for (int k : subset) {
      if (!t.known(i, k)) continue;
      double v = t.weighted_us(i, k);
      if (v < s.best[i]) {
        s.second[i] = s.best[i];
        s.best[i] = v;
        s.best_kernel[i] = k;
      } else if (v < s.second[i]) {
        s.second[i] = v;
      }
    }
  return s;
}

// Cost of a subset whose per-instance best is `base` (kInf = none) once kernel k joins it.
Cost cost_with(const RegretTable& t, const std::vector<double>& base, int k) {
  Cost c;
  for (int i = 0; i < t.instances(); ++i) {
    double v = base[i];
    if (k >= 0 && t.known(i, k)) v = std::min(v, t.weighted_us(i, k));
    if (v == kInf)
      ++c.unknown;
    else
      c.us += v;
  }
  return c;
}

}  // namespace

std::vector<int> choose_kernel_subset(const std::vector<TreeSample>& samples, int n_kernels,
                                      int max_kernels, double tie_fraction) {
  RegretTable t(samples, n_kernels, tie_fraction);
  std::vector<int> subset;
  std::vector<char> in(n_kernels, 0);
  Cost current = cost_with(t, std::vector<double>(t.instances(), kInf), -1);
  // Forward: add the kernel that saves the most until the budget is spent or nothing helps.
  while (max_kernels <= 0 || int(subset.size()) < max_kernels) {
    SubsetState s = subset_state(t, subset);
    int pick = -1;
    Cost pick_cost = current;
    for (int k = 0; k < n_kernels; ++k) {
      if (in[k]) continue;
      Cost c = cost_with(t, s.best, k);
      if (better(c, pick_cost, noise(pick_cost.us))) pick = k, pick_cost = c;
    }
    if (pick < 0) break;
    subset.push_back(pick);
    in[pick] = 1;
    current = pick_cost;
  }
  // Swaps: replace one member by an outsider while that helps (greedy forward can lock in an
  // early all-rounder that two specialists beat together).
  for (int pass = 0; pass < 20 && !subset.empty(); ++pass) {
    SubsetState s = subset_state(t, subset);
    int out_pos = -1, in_kernel = -1;
    Cost swap_cost = current;
    for (size_t pos = 0; pos < subset.size(); ++pos) {
      std::vector<double> without(t.instances());
      for (int i = 0; i < t.instances(); ++i)
        without[i] = s.best_kernel[i] == subset[pos] ? s.second[i] : s.best[i];
      for (int k = 0; k < n_kernels; ++k) {
        if (in[k]) continue;
        Cost c = cost_with(t, without, k);
        if (better(c, swap_cost, noise(swap_cost.us)))
          out_pos = int(pos), in_kernel = k, swap_cost = c;
      }
    }
    if (out_pos < 0) break;
    in[subset[out_pos]] = 0;
    subset[out_pos] = in_kernel;
    in[in_kernel] = 1;
    current = swap_cost;
  }
  if (current.unknown > 0) {
    SubsetState s = subset_state(t, subset);
    int i = int(std::find(s.best.begin(), s.best.end(), kInf) - s.best.begin());
    throw UserError("no " + std::to_string(max_kernels) + " kernel(s) together have a time on " +
                    "every tuned instance (none of them was measured at " +
                    values_text(samples[i].values) + "); raise --max-kernels or tune more");
  }
  std::sort(subset.begin(), subset.end());
  return subset;
}

namespace {

class TreeGrower {
 public:
  TreeGrower(const std::vector<TreeSample>& samples, const RegretTable& table,
             std::vector<int> subset, const TreeFitOptions& options, int n_vars)
      : samples_(samples), t_(table), subset_(std::move(subset)), opt_(options), vars_(n_vars) {}

  std::vector<TreeNode> grow() {
    std::vector<int> all(t_.instances());
    std::iota(all.begin(), all.end(), 0);
    grow_node(all, 0);
    return std::move(nodes_);
  }

 private:
  struct Sums {
    std::vector<int> unknown;
    std::vector<double> us;
  };
  struct Choice {
    int kernel_pos = 0;
    Cost cost;
  };

  Sums empty_sums() const {
    return {std::vector<int>(subset_.size(), 0), std::vector<double>(subset_.size(), 0.0)};
  }
  void add(Sums& s, int i, int sign) const {
    for (size_t j = 0; j < subset_.size(); ++j) {
      if (t_.known(i, subset_[j]))
        s.us[j] += sign * t_.weighted_us(i, subset_[j]);
      else
        s.unknown[j] += sign;
    }
  }
  // The best single kernel for a set of instances; ties go to the lower index.
  Choice choose(const Sums& s) const {
    Choice best{0, {s.unknown[0], s.us[0]}};
    for (size_t j = 1; j < subset_.size(); ++j) {
      Cost c{s.unknown[j], s.us[j]};
      if (better(c, best.cost, noise(best.cost.us))) best = {int(j), c};
    }
    return best;
  }

  // The best single kernel's cost over the instances counted in `hi` but not in `lo`.
  Cost choose_between(const Sums& hi, const Sums& lo) const {
    Cost best{hi.unknown[0] - lo.unknown[0], hi.us[0] - lo.us[0]};
    for (size_t j = 1; j < subset_.size(); ++j) {
      Cost c{hi.unknown[j] - lo.unknown[j], hi.us[j] - lo.us[j]};
      if (better(c, best, noise(best.us))) best = c;
    }
    return best;
  }
  static Cost plus(const Cost& a, const Cost& b) { return {a.unknown + b.unknown, a.us + b.us}; }

  // One variable seen from a node: the thresholds halfway between consecutive distinct values
  // and the sums over the instances at or below each.
  struct Axis {
    std::vector<int64_t> thresholds;
    std::vector<Sums> below;
  };
  Axis axis(const std::vector<int>& idx, int d) const {
    std::vector<int> order = idx;
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return samples_[a].values[d] < samples_[b].values[d]; });
    Axis out;
    Sums left = empty_sums();
    for (size_t p = 0; p + 1 < order.size(); ++p) {
      add(left, order[p], +1);
      int64_t lo = samples_[order[p]].values[d], hi = samples_[order[p + 1]].values[d];
      if (lo == hi) continue;
      out.thresholds.push_back(lo + (hi - lo) / 2);  // the midpoint, rounded down
      out.below.push_back(left);
    }
    return out;
  }

  int grow_node(const std::vector<int>& idx, int depth) {
    int at = int(nodes_.size());
    nodes_.emplace_back();
    Sums total = empty_sums();
    for (int i : idx) add(total, i, +1);
    Choice leaf = choose(total);

    bool must_split = leaf.cost.unknown > 0;  // no kernel has a time on all of them
    double margin = std::max(opt_.min_improvement_us, noise(leaf.cost.us));
    int best_var = -1;
    int64_t best_threshold = 0;
    Cost best_cost{std::numeric_limits<int>::max(), kInf};
    std::vector<Axis> axes;
    if (must_split || depth < opt_.max_depth) {
      for (int d = 0; d < vars_; ++d) {
        axes.push_back(axis(idx, d));
        const Axis& a = axes.back();
        for (size_t b = 0; b < a.thresholds.size(); ++b) {
          Cost c = plus(choose(a.below[b]).cost, choose_between(total, a.below[b]));
          if (better(c, best_cost, noise(best_cost.us)))
            best_cost = c, best_var = d, best_threshold = a.thresholds[b];
        }
      }
    }
    bool split = best_var >= 0 && (must_split || better(best_cost, leaf.cost, margin));
    // No single split helps, yet two may: a kernel that wins only on a middle interval of
    // one variable. Isolating that interval takes a split on each side; take the first one
    // and the child finds the second. (In one variable this always finds an improvement
    // while some instance is served by a kernel that is not its best.)
    if (!split && depth + 1 < opt_.max_depth) {
      Cost best3{std::numeric_limits<int>::max(), kInf};
      int var3 = -1;
      int64_t threshold3 = 0;
      for (int d = 0; d < int(axes.size()); ++d) {
        const Axis& a = axes[d];
        for (size_t b1 = 0; b1 < a.thresholds.size(); ++b1) {
          Cost left = choose(a.below[b1]).cost;
          for (size_t b2 = b1 + 1; b2 < a.thresholds.size(); ++b2) {
            Cost c = plus(left, plus(choose_between(a.below[b2], a.below[b1]),
                                     choose_between(total, a.below[b2])));
            if (better(c, best3, noise(best3.us)))
              best3 = c, var3 = d, threshold3 = a.thresholds[b1];
          }
        }
      }
      if (var3 >= 0 && better(best3, leaf.cost, 2 * margin))
        split = true, best_var = var3, best_threshold = threshold3;
    }
    if (!split) {
      nodes_[at].kernel = subset_[leaf.kernel_pos];
      return at;
    }
    std::vector<int> left_idx, right_idx;
    for (int i : idx)
      (samples_[i].values[best_var] <= best_threshold ? left_idx : right_idx).push_back(i);
    int left = grow_node(left_idx, depth + 1);
    int right = grow_node(right_idx, depth + 1);
    TreeNode& n = nodes_[at];
    n.var = best_var;
    n.threshold = best_threshold;
    n.left = left;
    n.right = right;
    return at;
  }

  const std::vector<TreeSample>& samples_;
  const RegretTable& t_;
  std::vector<int> subset_;
  TreeFitOptions opt_;
  int vars_;
  std::vector<TreeNode> nodes_;
};

}  // namespace

DecisionTree fit_decision_tree(const std::vector<std::string>& vars,
                               const std::vector<TreeSample>& samples, int n_kernels,
                               const TreeFitOptions& options) {
  if (samples.empty()) throw std::invalid_argument("fit_decision_tree: no samples");
  if (n_kernels <= 0) throw std::invalid_argument("fit_decision_tree: no kernels");
  std::vector<std::vector<int64_t>> tuples;
  for (const TreeSample& s : samples) {
    if (s.values.size() != vars.size())
      throw std::invalid_argument("fit_decision_tree: one value per variable expected");
    tuples.push_back(s.values);
  }
  std::sort(tuples.begin(), tuples.end());
  if (std::adjacent_find(tuples.begin(), tuples.end()) != tuples.end())
    throw std::invalid_argument("fit_decision_tree: duplicate instance " +
                                values_text(*std::adjacent_find(tuples.begin(), tuples.end())));
  RegretTable table(samples, n_kernels, options.tie_fraction);
  std::vector<int> subset =
      choose_kernel_subset(samples, n_kernels, options.max_kernels, options.tie_fraction);
  TreeGrower grower(samples, table, subset, options, int(vars.size()));
  DecisionTree tree(vars, grower.grow());
  tree.set_leaf_stats(samples);
  return tree;
}

}  // namespace dietcode

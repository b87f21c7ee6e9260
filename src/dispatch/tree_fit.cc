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

// How many standard deviations of timing noise a saving must exceed (TreeFitOptions::
// timing_noise): 2, about 98% one-sided, so that a kernel or a leaf kept for noise alone is rare.
constexpr double kSignificance = 2.0;

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

// A subset's cost after a change, and the noise of the change: the sum, over the instances
// whose time it changes, of the old and the new weighted time squared (times the timing noise
// squared, the variance of the time saved).
struct Change {
  Cost cost;
  double noise_us2 = 0;
};

// The subset whose per-instance best is `base` (kInf = none) once kernel k joins it, against
// `now`, the per-instance best before the change (`base` itself when adding a kernel).
Change cost_with(const RegretTable& t, const std::vector<double>& base,
                 const std::vector<double>& now, int k) {
  Change c;
  for (int i = 0; i < t.instances(); ++i) {
    double v = base[i];
    if (k >= 0 && t.known(i, k)) v = std::min(v, t.weighted_us(i, k));
    if (v == kInf) {
      ++c.cost.unknown;
      continue;
    }
    c.cost.us += v;
    if (now[i] != kInf && v != now[i]) c.noise_us2 += now[i] * now[i] + v * v;
  }
  return c;
}

// Kernel k joining a subset whose per-instance best is `now`, serving only the instances
// where that is most surely a gain: with timing noise, a kernel slightly faster on many
// instances would otherwise bring all their noise into the test of the few where it is much
// faster. Instances without a time take k wherever it has one; of the others where k is
// faster, those with the best ratio of time saved to its noise, as many as make the saving
// surest.
Change cost_adding(const RegretTable& t, const std::vector<double>& now, int k,
                   double timing_noise) {
  Change c;
  struct Gain {
    double us, us2;
  };
  std::vector<Gain> gains;
  for (int i = 0; i < t.instances(); ++i) {
    const bool has = t.known(i, k);
    const double v = has ? t.weighted_us(i, k) : kInf;
    if (now[i] == kInf) {
      if (has)
        c.cost.us += v;
      else
        ++c.cost.unknown;
      continue;
    }
    c.cost.us += now[i];
    if (v < now[i]) gains.push_back({now[i] - v, now[i] * now[i] + v * v});
  }
  std::stable_sort(gains.begin(), gains.end(), [](const Gain& a, const Gain& b) {
    return a.us * std::sqrt(b.us2) > b.us * std::sqrt(a.us2);  // saving over its noise
  });
  double saved = 0, us2 = 0, best_sure = 0, best_saved = 0, best_us2 = 0;
  for (const Gain& g : gains) {
    saved += g.us;
    us2 += g.us2;
    const double sure = saved - kSignificance * timing_noise * std::sqrt(us2);
    if (sure > best_sure || timing_noise == 0) best_sure = sure, best_saved = saved, best_us2 = us2;
  }
  c.cost.us -= best_saved;
  c.noise_us2 = best_us2;
  return c;
}

// The time a change saves beyond kSignificance standard deviations of its noise.
double sure_saving(const Cost& before, const Cost& after, double noise_us2, double timing_noise) {
  return before.us - after.us - kSignificance * timing_noise * std::sqrt(noise_us2);
}

// Whether `c` is a better change than the best so far (`best`, whose sure saving is `best_sure`):
// fewer instances without a time first, then the larger sure saving.
bool better_change(const Change& c, double sure, const Change* best, double best_sure) {
  if (!best) return true;
  if (c.cost.unknown != best->cost.unknown) return c.cost.unknown < best->cost.unknown;
  return sure > best_sure + noise(best_sure);
}

// Whether making a change is worth it at all.
bool worth_it(const Cost& before, const Change& c, double sure) {
  if (c.cost.unknown != before.unknown) return c.cost.unknown < before.unknown;
  return sure > noise(before.us);
}

}  // namespace

std::vector<int> choose_kernel_subset(const std::vector<TreeSample>& samples, int n_kernels,
                                      int max_kernels, double tie_fraction, double timing_noise) {
  if (!(timing_noise >= 0) || !std::isfinite(timing_noise))
    throw std::invalid_argument("timing noise " + std::to_string(timing_noise) + " is not >= 0");
  RegretTable t(samples, n_kernels, tie_fraction);
  std::vector<int> subset;
  std::vector<char> in(n_kernels, 0);
  const std::vector<double> none(t.instances(), kInf);
  Cost current = cost_with(t, none, none, -1).cost;
  // Forward: add the kernel that saves the most until the budget is spent or nothing helps.
  while (max_kernels <= 0 || int(subset.size()) < max_kernels) {
    SubsetState s = subset_state(t, subset);
    int pick = -1;
    Change pick_change;
    double pick_sure = 0;
    for (int k = 0; k < n_kernels; ++k) {
      if (in[k]) continue;
      Change c = cost_adding(t, s.best, k, timing_noise);
      double sure = sure_saving(current, c.cost, c.noise_us2, timing_noise);
      if (worth_it(current, c, sure) &&
          better_change(c, sure, pick < 0 ? nullptr : &pick_change, pick_sure))
        pick = k, pick_change = c, pick_sure = sure;
    }
    if (pick < 0) break;
    subset.push_back(pick);
    in[pick] = 1;
    // The kernel serves every instance it is fastest on from now on, not only those its
    // sure saving counted.
    const std::vector<double> best = subset_state(t, subset).best;
    current = cost_with(t, best, best, -1).cost;
  }
  // Swaps: replace one member by an outsider while that helps (greedy forward can lock in an
  // early all-rounder that two specialists beat together).
  for (int pass = 0; pass < 20 && !subset.empty(); ++pass) {
    SubsetState s = subset_state(t, subset);
    int out_pos = -1, in_kernel = -1;
    Change swap_change;
    double swap_sure = 0;
    for (size_t pos = 0; pos < subset.size(); ++pos) {
      std::vector<double> without(t.instances());
      for (int i = 0; i < t.instances(); ++i)
        without[i] = s.best_kernel[i] == subset[pos] ? s.second[i] : s.best[i];
      for (int k = 0; k < n_kernels; ++k) {
        if (in[k]) continue;
        Change c = cost_with(t, without, s.best, k);
        double sure = sure_saving(current, c.cost, c.noise_us2, timing_noise);
        if (worth_it(current, c, sure) &&
            better_change(c, sure, out_pos < 0 ? nullptr : &swap_change, swap_sure))
          out_pos = int(pos), in_kernel = k, swap_change = c, swap_sure = sure;
      }
    }
    if (out_pos < 0) break;
    in[subset[out_pos]] = 0;
    subset[out_pos] = in_kernel;
    in[in_kernel] = 1;
    current = swap_change.cost;
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
  // Per subset kernel, over a set of instances: how many it has no time for, and the sums of
  // its weighted times and of their squares (for the timing noise).
  struct Sums {
    std::vector<int> unknown;
    std::vector<double> us, us2;
  };
  struct Choice {
    int kernel_pos = 0;
    Cost cost;
  };

  Sums empty_sums() const {
    const size_t n = subset_.size();
    return {std::vector<int>(n, 0), std::vector<double>(n, 0.0), std::vector<double>(n, 0.0)};
  }
  void add(Sums& s, int i, int sign) const {
    for (size_t j = 0; j < subset_.size(); ++j) {
      if (t_.known(i, subset_[j])) {
        const double v = t_.weighted_us(i, subset_[j]);
        s.us[j] += sign * v;
        s.us2[j] += sign * v * v;
      } else {
        s.unknown[j] += sign;
      }
    }
  }
  // The best single kernel for the instances counted in `hi` but not in `lo` (null: none);
  // ties go to the lower index.
  Choice choose(const Sums& hi, const Sums* lo = nullptr) const {
    auto cost = [&](size_t j) {
      return lo ? Cost{hi.unknown[j] - lo->unknown[j], hi.us[j] - lo->us[j]}
                : Cost{hi.unknown[j], hi.us[j]};
    };
    Choice best{0, cost(0)};
    for (size_t j = 1; j < subset_.size(); ++j) {
      Cost c = cost(j);
      if (better(c, best.cost, noise(best.cost.us))) best = {int(j), c};
    }
    return best;
  }
  // The noise of moving the instances in `hi` but not in `lo` from kernel `from` to `to`.
  static double moved_us2(const Sums& hi, const Sums* lo, int from, int to) {
    if (from == to) return 0.0;
    auto us2 = [&](int j) { return hi.us2[j] - (lo ? lo->us2[j] : 0.0); };
    return us2(from) + us2(to);
  }
  static Cost plus(const Cost& a, const Cost& b) { return {a.unknown + b.unknown, a.us + b.us}; }

  // A way to cut a node's instances into parts, each served by its best kernel.
  struct Cut {
    Cost cost;        // all parts together
    double sure = 0;  // the time saved against the node's single kernel, less its noise
  };
  // The parts' choices against the node's leaf; `moved` is the noise of their changes.
  Cut cut(const Choice& leaf, const Cost& cost, double moved) const {
    return {cost, sure_saving(leaf.cost, cost, moved, opt_.timing_noise)};
  }
  static bool better_cut(const Cut& c, const Cut& best) {
    if (c.cost.unknown != best.cost.unknown) return c.cost.unknown < best.cost.unknown;
    return best.sure == -kInf || c.sure > best.sure + noise(best.sure);
  }

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
    const Choice leaf = choose(total);
    const int from = leaf.kernel_pos;

    bool must_split = leaf.cost.unknown > 0;  // no kernel has a time on all of them
    double margin = std::max(opt_.min_improvement_us, noise(leaf.cost.us));
    int best_var = -1;
    int64_t best_threshold = 0;
    Cut best{{std::numeric_limits<int>::max(), kInf}, -kInf};
    std::vector<Axis> axes;
    if (must_split || depth < opt_.max_depth) {
      for (int d = 0; d < vars_; ++d) {
        axes.push_back(axis(idx, d));
        const Axis& a = axes.back();
        for (size_t b = 0; b < a.thresholds.size(); ++b) {
          const Choice left = choose(a.below[b]), right = choose(total, &a.below[b]);
          Cut c = cut(leaf, plus(left.cost, right.cost),
                      moved_us2(a.below[b], nullptr, from, left.kernel_pos) +
                          moved_us2(total, &a.below[b], from, right.kernel_pos));
          if (better_cut(c, best)) best = c, best_var = d, best_threshold = a.thresholds[b];
        }
      }
    }
    auto worth = [&](const Cut& c, double m) {
      return c.cost.unknown < leaf.cost.unknown ||
             (c.cost.unknown == leaf.cost.unknown && c.sure > m);
    };
    bool split = best_var >= 0 && (must_split || worth(best, margin));
    // No single split helps, yet two may: a kernel that wins only on a middle interval of
    // one variable. Isolating that interval takes a split on each side; take the first one
    // and the child finds the second. (In one variable this always finds an improvement
    // while some instance is served by a kernel that is not its best, timing noise aside.)
    if (!split && depth + 1 < opt_.max_depth) {
      Cut best3{{std::numeric_limits<int>::max(), kInf}, -kInf};
      int var3 = -1;
      int64_t threshold3 = 0;
      for (int d = 0; d < int(axes.size()); ++d) {
        const Axis& a = axes[d];
        for (size_t b1 = 0; b1 < a.thresholds.size(); ++b1) {
          const Choice left = choose(a.below[b1]);
          const double left_us2 = moved_us2(a.below[b1], nullptr, from, left.kernel_pos);
          for (size_t b2 = b1 + 1; b2 < a.thresholds.size(); ++b2) {
            const Choice mid = choose(a.below[b2], &a.below[b1]);
            const Choice right = choose(total, &a.below[b2]);
            Cut c = cut(leaf, plus(left.cost, plus(mid.cost, right.cost)),
                        left_us2 + moved_us2(a.below[b2], &a.below[b1], from, mid.kernel_pos) +
                            moved_us2(total, &a.below[b2], from, right.kernel_pos));
            if (better_cut(c, best3)) best3 = c, var3 = d, threshold3 = a.thresholds[b1];
          }
        }
      }
      if (var3 >= 0 && worth(best3, 2 * margin))
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
      choose_kernel_subset(samples, n_kernels, options.max_kernels, options.tie_fraction,
                           options.timing_noise);
  TreeGrower grower(samples, table, subset, options, int(vars.size()));
  DecisionTree tree(vars, grower.grow());
  tree.set_leaf_stats(samples);
  return tree;
}

}  // namespace dietcode

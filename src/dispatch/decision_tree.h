// The dispatcher of a kernel pack: a decision tree over shape-variable values whose leaves are
// kernel indices (METHOD.md §5).
//
// Guided tour
//   TreeSample        one tuned instance: its variable values, its weight, and the latency of
//                     every candidate kernel there (NaN = not measured), optionally predicted ones.
//   TreeFitOptions    the knobs: max_kernels (pack size vs time lost), max_depth, and the least
//                     weighted regret a split must save.
//   fit_decision_tree picks a kernel subset greedily by weighted regret, then grows the tree
//                     greedily on weighted regret (time lost), not on misclassification.
//   DecisionTree      the result: select(), the C if-chain the pack generator inlines, JSON for
//                     the manifest and `inspect`, and per-leaf regret statistics.
//
// Regret of a kernel on an instance is its latency minus the best *measured* latency of any
// candidate there (the best predicted one when nothing was measured). Splits are thresholds
// `v <= c` with c halfway between two tuned values, so the tree maps every integer — inside the
// tuned range, between tuned values and outside it — to a kernel; values beyond the range land
// in the outermost leaves.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace dietcode {

struct TreeSample {
  std::vector<int64_t> values;       // one per tree variable
  double weight = 1.0;               // how much this instance matters (>= 0)
  std::vector<double> latency_us;    // per candidate kernel; NaN = not measured
  std::vector<double> predicted_us;  // empty, or per candidate kernel; NaN = no prediction
};

struct TreeFitOptions {
  int max_kernels = 0;              // at most this many distinct kernels in the leaves; 0 = any
  int max_depth = 10;               // exceeded only where a leaf would have no usable kernel
  double min_improvement_us = 0.0;  // a split must cut the weighted regret by more than this
  // Latencies within this fraction of an instance's best measured one count as equal to it in
  // the fit (not in the reported time lost). Two kernels 0.4% apart on one instance differ by
  // less than the timing noise: without it the fit keeps a kernel, and grows a leaf, for each
  // such coin toss, and the pack runs kernels that won once by chance.
  double tie_fraction = 0.0;
  // The timing noise: the relative standard deviation of one measured latency (0.045: 4.5%);
  // 0 takes the times as exact. With it, a kernel joins the subset, and a split is made, only
  // where the time it saves is more than twice the noise of that saving, summed over the
  // instances whose kernel it changes. On a noisy host a kernel that wins one or two instances
  // by a few percent won by chance about as often as not; many instances agreeing are
  // stronger evidence, so a kernel better over a whole range still gets its leaf.
  double timing_noise = 0.0;
};

struct LeafStats {
  int instances = 0;          // tuned instances reaching the leaf
  double weight = 0;          // their total weight
  double max_regret_us = 0;   // worst time lost on one of them
  double mean_regret_us = 0;  // weighted mean time lost
  double max_regret_pct = 0;  // the same relative to each instance's best time
  double mean_regret_pct = 0;
};

struct TreeNode {
  int var = -1;           // split variable; -1 for a leaf
  int64_t threshold = 0;  // values[var] <= threshold goes left
  int left = -1, right = -1;
  int kernel = -1;  // leaf only: index of the kernel it picks
  LeafStats stats;  // leaf only
  bool leaf() const { return var < 0; }
};

class DecisionTree {
 public:
  DecisionTree() = default;
  // Checks the structure (root at 0, children in range, every node reached once).
  DecisionTree(std::vector<std::string> vars, std::vector<TreeNode> nodes);
  // A single leaf: every value picks `kernel`.
  static DecisionTree constant(std::vector<std::string> vars, int kernel);

  const std::vector<std::string>& vars() const { return vars_; }
  const std::vector<TreeNode>& nodes() const { return nodes_; }

  int select(const int64_t* values) const;             // values parallel to vars()
  std::vector<int> path(const int64_t* values) const;  // node indices, root to leaf
  std::vector<int> kernels() const;                    // distinct leaf kernels, ascending
  int depth() const;                                   // edges on the longest path
  int leaf_count() const;

  // Renumbers leaf kernels to 0..n-1 in ascending order of their old index and returns the
  // old indices in new order, so the caller can keep only the kernels the tree uses.
  std::vector<int> compact();

  // Renumbers leaf kernels through new_id (old index -> new index), for trees that share one
  // kernel list: several dispatchers of one op (one per GPU arch) index the same pack kernels.
  void renumber(const std::map<int, int>& new_id);

  // Recomputes every leaf's statistics from samples (indexed by the kernels the leaves use).
  void set_leaf_stats(const std::vector<TreeSample>& samples);

  // The split of an inner node as text: "T <= 40".
  std::string split_text(int node) const;

  // The body of a C function returning the kernel index: nested `if (T <= 40) {...} else {...}`.
  // c_names are the C expressions for the variables (parallel to vars()); every line is
  // indented by `indent` spaces.
  std::string to_c(const std::vector<std::string>& c_names, int indent = 2) const;

  // {"vars": [...], "root": {"var": "T", "le": 40, "left": {...}, "right": {...}}}, leaves
  // {"kernel": 0, "instances": .., "weight": .., "max_regret_us": .., ...}.
  nlohmann::json to_json() const;
  static DecisionTree from_json(const nlohmann::json& j);  // throws UserError naming the path

 private:
  std::vector<std::string> vars_;
  std::vector<TreeNode> nodes_;
};

// Weighted time lost by a tree over samples, against each instance's best measured time.
struct TreeQuality {
  double total_weight = 0;
  double mean_regret_us = 0;
  double max_regret_us = 0;
  double mean_regret_pct = 0;
  double mean_best_us = 0;  // weighted mean of the best times, for scale
};
TreeQuality evaluate_tree(const DecisionTree& tree, const std::vector<TreeSample>& samples);

// Greedy forward selection (then single swaps) of at most max_kernels kernels minimising the
// weighted regret of picking, per instance, the best kernel of the subset (latencies within
// tie_fraction of the best count as the best; a kernel joins only for a saving beyond the
// timing noise: TreeFitOptions). Returns ascending indices. Throws UserError when no subset of
// that size has a time on every instance.
std::vector<int> choose_kernel_subset(const std::vector<TreeSample>& samples, int n_kernels,
                                      int max_kernels, double tie_fraction = 0.0,
                                      double timing_noise = 0.0);

// Fits the dispatcher. Samples must have distinct value tuples, one value per variable, and at
// least one measured or predicted latency each. Leaf kernels index the candidate list.
DecisionTree fit_decision_tree(const std::vector<std::string>& vars,
                               const std::vector<TreeSample>& samples, int n_kernels,
                               const TreeFitOptions& options = {});

}  // namespace dietcode

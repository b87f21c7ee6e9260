#include "dispatch/decision_tree.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "common/error.h"
#include "dispatch/regret_table.h"

namespace dietcode {

using nlohmann::json;

DecisionTree::DecisionTree(std::vector<std::string> vars, std::vector<TreeNode> nodes)
    : vars_(std::move(vars)), nodes_(std::move(nodes)) {
  if (nodes_.empty()) throw std::invalid_argument("decision tree: no nodes");
  std::vector<int> seen(nodes_.size(), 0);
  std::function<void(int)> visit = [&](int at) {
    if (at < 0 || at >= int(nodes_.size()) || seen[at]++)
      throw std::invalid_argument("decision tree: node " + std::to_string(at) +
                                  " missing or reached twice");
    const TreeNode& n = nodes_[at];
    if (n.leaf()) {
      if (n.kernel < 0) throw std::invalid_argument("decision tree: leaf without a kernel");
      return;
    }
    if (n.var >= int(vars_.size()))
      throw std::invalid_argument("decision tree: split on an unknown variable");
    visit(n.left);
    visit(n.right);
  };
  visit(0);
  if (std::count(seen.begin(), seen.end(), 0))
    throw std::invalid_argument("decision tree: unreachable nodes");
}

DecisionTree DecisionTree::constant(std::vector<std::string> vars, int kernel) {
  TreeNode leaf;
  leaf.kernel = kernel;
  return DecisionTree(std::move(vars), {leaf});
}

int DecisionTree::select(const int64_t* values) const {
  int at = 0;
  while (!nodes_[at].leaf())
    at = values[nodes_[at].var] <= nodes_[at].threshold ? nodes_[at].left : nodes_[at].right;
  return nodes_[at].kernel;
}

std::vector<int> DecisionTree::path(const int64_t* values) const {
  std::vector<int> out{0};
  while (!nodes_[out.back()].leaf()) {
    const TreeNode& n = nodes_[out.back()];
    out.push_back(values[n.var] <= n.threshold ? n.left : n.right);
  }
  return out;
}

std::vector<int> DecisionTree::kernels() const {
  std::set<int> used;
  for (const TreeNode& n : nodes_)
    if (n.leaf()) used.insert(n.kernel);
  return {used.begin(), used.end()};
}

int DecisionTree::depth() const {
  std::function<int(int)> depth_of = [&](int at) -> int {
    const TreeNode& n = nodes_[at];
    return n.leaf() ? 0 : 1 + std::max(depth_of(n.left), depth_of(n.right));
  };
  return nodes_.empty() ? 0 : depth_of(0);
}

int DecisionTree::leaf_count() const {
  return int(
      std::count_if(nodes_.begin(), nodes_.end(), [](const TreeNode& n) { return n.leaf(); }));
}

std::vector<int> DecisionTree::compact() {
  std::vector<int> old_ids = kernels();
  std::map<int, int> new_id;
  for (size_t i = 0; i < old_ids.size(); ++i) new_id[old_ids[i]] = int(i);
  renumber(new_id);
  return old_ids;
}

void DecisionTree::renumber(const std::map<int, int>& new_id) {
  for (TreeNode& n : nodes_)
    if (n.leaf()) n.kernel = new_id.at(n.kernel);
}

void DecisionTree::set_leaf_stats(const std::vector<TreeSample>& samples) {
  int n_kernels = 0;
  for (const TreeNode& n : nodes_)
    if (n.leaf()) n_kernels = std::max(n_kernels, n.kernel + 1);
  for (const TreeSample& s : samples) n_kernels = std::max(n_kernels, int(s.latency_us.size()));
  RegretTable table(samples, n_kernels);
  for (TreeNode& n : nodes_)
    if (n.leaf()) n.stats = LeafStats{};
  std::vector<double> regret_sum(nodes_.size(), 0.0), pct_sum(nodes_.size(), 0.0);
  for (int i = 0; i < table.instances(); ++i) {
    int leaf = path(samples[i].values.data()).back();
    TreeNode& n = nodes_[leaf];
    double w = table.weight(i);
    // A kernel with no time on an instance cannot be judged there; the fit never lets this
    // happen, but a tree read back against other samples may.
    double regret = table.known(i, n.kernel) ? table.regret_us(i, n.kernel) : NAN;
    double pct = 100.0 * regret / table.best_us(i);
    n.stats.instances += 1;
    n.stats.weight += w;
    n.stats.max_regret_us = std::fmax(n.stats.max_regret_us, regret);
    n.stats.max_regret_pct = std::fmax(n.stats.max_regret_pct, pct);
    regret_sum[leaf] += w * regret;
    pct_sum[leaf] += w * pct;
  }
  for (size_t at = 0; at < nodes_.size(); ++at) {
    LeafStats& s = nodes_[at].stats;
    if (!nodes_[at].leaf() || s.weight <= 0) continue;
    s.mean_regret_us = regret_sum[at] / s.weight;
    s.mean_regret_pct = pct_sum[at] / s.weight;
  }
}

std::string DecisionTree::split_text(int node) const {
  const TreeNode& n = nodes_.at(node);
  return vars_.at(n.var) + " <= " + std::to_string(n.threshold);
}

std::string DecisionTree::to_c(const std::vector<std::string>& c_names, int indent) const {
  if (c_names.size() != vars_.size())
    throw std::invalid_argument("decision tree: one C name per variable expected");
  std::string out;
  std::function<void(int, int)> emit = [&](int at, int pad) {
    const TreeNode& n = nodes_[at];
    std::string space(pad, ' ');
    if (n.leaf()) {
      out += space + "return " + std::to_string(n.kernel) + ";\n";
      return;
    }
    out += space + "if (" + c_names[n.var] + " <= " + std::to_string(n.threshold) + ") {\n";
    emit(n.left, pad + 2);
    out += space + "} else {\n";
    emit(n.right, pad + 2);
    out += space + "}\n";
  };
  emit(0, indent);
  return out;
}

// Statistics are rounded so the manifest reads well and stays byte-stable.
static double rounded(double x) { return std::round(x * 1e4) / 1e4; }

json DecisionTree::to_json() const {
  std::function<json(int)> node_json = [&](int at) -> json {
    const TreeNode& n = nodes_[at];
    if (!n.leaf())
      return {{"var", vars_[n.var]},
              {"le", n.threshold},
              {"left", node_json(n.left)},
              {"right", node_json(n.right)}};
    return {{"kernel", n.kernel},
            {"instances", n.stats.instances},
            {"weight", std::round(n.stats.weight * 1e9) / 1e9},
            {"max_regret_us", rounded(n.stats.max_regret_us)},
            {"mean_regret_us", rounded(n.stats.mean_regret_us)},
            {"max_regret_pct", rounded(n.stats.max_regret_pct)},
            {"mean_regret_pct", rounded(n.stats.mean_regret_pct)}};
  };
  return {{"vars", vars_}, {"root", node_json(0)}};
}

DecisionTree DecisionTree::from_json(const json& j) {
  auto fail = [](const std::string& path, const std::string& what) -> UserError {
    return UserError(path + ": " + what);
  };
  if (!j.is_object() || !j.contains("vars") || !j["vars"].is_array() || !j.contains("root"))
    throw fail("tree", "expected {\"vars\": [...], \"root\": {...}}");
  std::vector<std::string> vars;
  for (const json& v : j["vars"]) {
    if (!v.is_string()) throw fail("tree.vars", "expected variable names");
    vars.push_back(v.get<std::string>());
  }
  std::vector<TreeNode> nodes;
  auto number = [&](const json& node, const char* key, const std::string& path) {
    if (!node.contains(key)) return 0.0;
    if (!node[key].is_number()) throw fail(path + "." + key, "expected a number");
    return node[key].get<double>();
  };
  std::function<int(const json&, const std::string&)> read = [&](const json& node,
                                                                 const std::string& path) {
    if (!node.is_object()) throw fail(path, "expected a tree node");
    int at = int(nodes.size());
    nodes.emplace_back();
    if (node.contains("kernel")) {
      if (!node["kernel"].is_number_integer() || node["kernel"].get<int>() < 0)
        throw fail(path + ".kernel", "expected a kernel index");
      TreeNode leaf;
      leaf.kernel = node["kernel"].get<int>();
      leaf.stats.instances = int(number(node, "instances", path));
      leaf.stats.weight = number(node, "weight", path);
      leaf.stats.max_regret_us = number(node, "max_regret_us", path);
      leaf.stats.mean_regret_us = number(node, "mean_regret_us", path);
      leaf.stats.max_regret_pct = number(node, "max_regret_pct", path);
      leaf.stats.mean_regret_pct = number(node, "mean_regret_pct", path);
      nodes[at] = leaf;
      return at;
    }
    if (!node.contains("var") || !node["var"].is_string())
      throw fail(path, "expected \"kernel\" or \"var\"");
    auto var = std::find(vars.begin(), vars.end(), node["var"].get<std::string>());
    if (var == vars.end()) throw fail(path + ".var", "not one of the tree's variables");
    if (!node.contains("le") || !node["le"].is_number_integer())
      throw fail(path + ".le", "expected an integer threshold");
    TreeNode split;
    split.var = int(var - vars.begin());
    split.threshold = node["le"].get<int64_t>();
    split.left = read(node.value("left", json()), path + ".left");
    split.right = read(node.value("right", json()), path + ".right");
    nodes[at] = split;
    return at;
  };
  read(j["root"], "tree.root");
  return DecisionTree(std::move(vars), std::move(nodes));
}

TreeQuality evaluate_tree(const DecisionTree& tree, const std::vector<TreeSample>& samples) {
  TreeQuality q;
  if (samples.empty()) return q;
  int n_kernels = int(samples[0].latency_us.size());
  RegretTable table(samples, n_kernels);
  double regret = 0, pct = 0, best = 0;
  for (int i = 0; i < table.instances(); ++i) {
    int k = tree.select(samples[i].values.data());
    double r = k < n_kernels && table.known(i, k) ? table.regret_us(i, k) : NAN;
    double w = table.weight(i);
    q.total_weight += w;
    regret += w * r;
    pct += w * 100.0 * r / table.best_us(i);
    best += w * table.best_us(i);
    q.max_regret_us = std::fmax(q.max_regret_us, r);
  }
  if (q.total_weight > 0) {
    q.mean_regret_us = regret / q.total_weight;
    q.mean_regret_pct = pct / q.total_weight;
    q.mean_best_us = best / q.total_weight;
  }
  return q;
}

}  // namespace dietcode

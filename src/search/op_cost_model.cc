#include "search/op_cost_model.h"

#include <cmath>

#include "cost/analytic.h"
#include "cost/features.h"

namespace dietcode {

OpCostModel::OpCostModel(const InstanceTable& table, const MachineSpec& machine,
                         CostModelParams params)
    : table_(&table), machine_(machine), model_(params) {}

KernelCandidate OpCostModel::candidate(const MicroKernel& mk, const LaunchPlan& plan,
                                       const std::optional<KernelResources>& resources) const {
  KernelCandidate c;
  c.mk = mk;
  c.plan = plan;
  c.compiled = resources;
  c.dtype = table_->op().dtype;
  c.target = machine_.target;
  c.gpu = machine_.gpu;
  c.cpu = machine_.cpu;
  return c;
}

void OpCostModel::learn(const KernelEntry& entry, const std::vector<size_t>& instances) {
  const KernelCandidate c = candidate(entry);
  // Features and the shape-independent profile once per kernel, the terms once per shape.
  const KernelFeatures features = kernel_features(c);
  const KernelProfile profile = make_profile(c);
  auto add = [&](size_t i) {
    const double latency = entry.latency_us[i];
    if (!(latency > 0) || !std::isfinite(latency)) return;
    model_.add_measurement(entry.key, features,
                           analytic_terms(profile, table_->shapes()[i], model_.analytic_params()),
                           latency, table_->priorities()[i]);
  };
  if (instances.empty()) {
    for (size_t i = 0; i < table_->size(); ++i) add(i);
  } else {
    for (size_t i : instances) add(i);
  }
}

std::vector<double> OpCostModel::predict(const std::vector<KernelCandidate>& candidates) const {
  return model_.predict_latency_us(candidates, table_->shapes());
}

std::vector<double> OpCostModel::predict(const std::vector<KernelCandidate>& candidates,
                                         const std::vector<size_t>& instances) const {
  std::vector<GemmShape> shapes;
  for (size_t i : instances) shapes.push_back(table_->shapes()[i]);
  return model_.predict_latency_us(candidates, shapes);
}

}  // namespace dietcode

#include "search/op_cost_model.h"

#include <cmath>

#include "cost/analytic.h"
#include "cost/features.h"

namespace dietcode {

namespace {

// The machine says how much a launch can cost; the model fits the overhead up to that.
CostModelParams with_overhead_ceiling(CostModelParams params, const MachineSpec& machine) {
  params.max_launch_overhead_us = machine.max_launch_overhead_us;
  return params;
}

}  // namespace

OpCostModel::OpCostModel(const InstanceTable& table, const MachineSpec& machine,
                         CostModelParams params)
    : table_(&table),
      machine_(machine),
      peer_weight_(params.peer_weight),
      model_(with_overhead_ceiling(params, machine)) {}

namespace {

KernelCandidate candidate_of(const OpSpec& op, const MachineSpec& machine, const MicroKernel& mk,
                             const LaunchPlan& plan,
                             const std::optional<KernelResources>& resources) {
  KernelCandidate c;
  c.mk = mk;
  c.plan = plan;
  c.compiled = resources;
  c.dtype = op.dtype;
  c.epilogue = op.epilogue;
  c.target = machine.target;
  c.gpu = machine.gpu;
  c.cpu = machine.cpu;
  c.weights_prepacked = machine.target == Target::kCpu && machine.cpu.weights_prepacked &&
                        (op.kind == OpKind::kDense || op.kind == OpKind::kConv2d);
  return c;
}

}  // namespace

KernelCandidate OpCostModel::candidate(const MicroKernel& mk, const LaunchPlan& plan,
                                       const std::optional<KernelResources>& resources) const {
  return candidate_of(table_->op(), machine_, mk, plan, resources);
}

void OpCostModel::learn(const KernelEntry& entry, const std::vector<size_t>& instances) {
  add_rows(entry, *table_, entry.key, instances, 1.0);
}

bool OpCostModel::learns_from(const InstanceTable& peer) const {
  return peer.op().dtype == table_->op().dtype;
}

bool OpCostModel::learn_peer(const KernelEntry& entry, const InstanceTable& peer,
                             const std::vector<size_t>& instances) {
  if (!learns_from(peer)) return false;
  add_rows(entry, peer, peer.op().name + "/" + entry.key, instances, peer_weight_);
  return true;
}

void OpCostModel::add_rows(const KernelEntry& entry, const InstanceTable& table,
                           const std::string& key, const std::vector<size_t>& instances,
                           double weight) {
  const KernelCandidate c =
      candidate_of(table.op(), machine_, entry.mk, entry.plan, entry.resources);
  // Features and the shape-independent profile once per kernel, the terms once per shape.
  const KernelFeatures features = kernel_features(c);
  const KernelProfile profile = make_profile(c);
  auto add = [&](size_t i) {
    const double latency = entry.latency_us[i];
    if (!(latency > 0) || !std::isfinite(latency)) return;
    model_.add_measurement(key, features, table.shapes()[i],
                           analytic_terms(profile, table.shapes()[i], model_.analytic_params()),
                           latency, weight * table.priorities()[i]);
  };
  if (instances.empty()) {
    for (size_t i = 0; i < table.size(); ++i) add(i);
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

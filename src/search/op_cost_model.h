// The cost model of one op's search (cost/cost_model.h) fed from its KernelBook: kernels become
// KernelCandidates (tunables, launch plan, ptxas report, dtype, machine), measurements become
// training rows weighted by the instance's priority, and predictions come back for every
// instance of the op at once.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "cost/cost_model.h"
#include "search/instance_table.h"
#include "search/kernel_book.h"
#include "space/machine_spec.h"

namespace dietcode {

class OpCostModel {
 public:
  OpCostModel(const InstanceTable& table, const MachineSpec& machine, CostModelParams params = {});

  KernelCandidate candidate(const MicroKernel& mk, const LaunchPlan& plan,
                            const std::optional<KernelResources>& resources) const;
  KernelCandidate candidate(const KernelEntry& entry) const {
    return candidate(entry.mk, entry.plan, entry.resources);
  }

  // Adds the entry's measured latencies on `instances` (all of its latencies when empty).
  void learn(const KernelEntry& entry, const std::vector<size_t>& instances = {});
  TrainingReport retrain() { return model_.retrain(); }

  // Predicted latency of each candidate on every instance, row-major [c * instances + i].
  std::vector<double> predict(const std::vector<KernelCandidate>& candidates) const;
  // The same on chosen instances only, row-major [c * instances.size() + j].
  std::vector<double> predict(const std::vector<KernelCandidate>& candidates,
                              const std::vector<size_t>& instances) const;

  const CostModel& model() const { return model_; }
  size_t kernels() const { return model_.distinct_kernels(); }

 private:
  const InstanceTable* table_;
  MachineSpec machine_;
  CostModel model_;
};

}  // namespace dietcode

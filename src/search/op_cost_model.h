// The cost model of one op's search (cost/cost_model.h) fed from its KernelBook: kernels become
// KernelCandidates (tunables, launch plan, ptxas report, dtype, epilogue, machine), measurements
// become training rows weighted by the instance's priority, and predictions come back for every
// instance of the op at once.
//
// It also learns from the workload's other ops (learn_peer): f_MK is a property of the
// micro-kernel, not of the op, and the analytic terms carry each op's own shapes, so what qkv
// measured says how a tile will do on fc2. BERT's four dense ops then train one op's model on
// four times the kernels; replayed on five CPU tuning logs, that raised the held-out Spearman on
// 16 of 20 ops (docs/cpu-target.md, "One model for the workload's ops").
#pragma once

#include <cstddef>
#include <optional>
#include <string>
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
  // The same for a kernel of another op of the workload, measured on that op's instances
  // (`peer`'s indices). Its rows are the peer's (a kernel key of their own, the peer's shapes
  // and epilogue). Ignored, returning false, when the ops' element types differ: the kernel
  // then runs on other units.
  bool learn_peer(const KernelEntry& entry, const InstanceTable& peer,
                  const std::vector<size_t>& instances = {});
  // Whether learn_peer takes kernels of `peer`: an op of the same element type.
  bool learns_from(const InstanceTable& peer) const;
  TrainingReport retrain() { return model_.retrain(); }

  // Predicted latency of each candidate on every instance, row-major [c * instances + i].
  std::vector<double> predict(const std::vector<KernelCandidate>& candidates) const;
  // The same on chosen instances only, row-major [c * instances.size() + j].
  std::vector<double> predict(const std::vector<KernelCandidate>& candidates,
                              const std::vector<size_t>& instances) const;

  const CostModel& model() const { return model_; }
  size_t kernels() const { return model_.distinct_kernels(); }

 private:
  void add_rows(const KernelEntry& entry, const InstanceTable& table, const std::string& key,
                const std::vector<size_t>& instances, double weight);

  const InstanceTable* table_;
  MachineSpec machine_;
  double peer_weight_;
  CostModel model_;
};

}  // namespace dietcode

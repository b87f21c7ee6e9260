// How well the cost model predicted, checked at the end of an op's search on micro-kernels it
// never saw (METHOD.md §3), by k-fold cross-validation: the measured kernels are dealt into
// round(1 / holdout_fraction) folds (5 for 20%; all measurements of a kernel in one fold, since
// the search predicts new kernels, not new shapes of old ones), and for each fold a fresh model
// learns from the other folds and predicts this one's kernels. Every kernel is predicted once,
// by a model that never saw it, and on every instance the predicted ranking of all the kernels
// is compared with their measured ranking:
//   spearman         mean over instances of the rank correlation, predicted vs measured;
//   within tolerance the share of instances whose predicted-best kernel is within 5% of the
//                    measured best (the top-1 regret criterion).
// One fold alone ranks a fifth of the kernels and moved by +-0.2 from seed to seed on 8-20
// kernels; all folds together rank every kernel.
// A second check holds out shapes instead (CostModelQuality::shapes): new shape values of the
// kernels it has measured, which is what METHOD.md §3 and the dispatcher ask of it, again
// fold by fold, every instance held out once.
// The result is printed and appended to the log as a line of kind "cost_model_quality".
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cost/cost_model.h"
#include "cost/quality.h"
#include "measure/measurer.h"
#include "search/instance_table.h"
#include "search/kernel_book.h"
#include "space/machine_spec.h"

namespace dietcode {

struct CostModelQuality {
  bool evaluated = false;  // false: too few measured kernels to hold any out
  size_t folds = 0;
  size_t train_kernels = 0;     // what one fold's model learned from (the mean over folds)
  size_t held_out_kernels = 0;  // over all folds: every usable kernel, each held out once
  size_t peer_kernels = 0;      // kernels of the other ops one fold's model also learned from
  // Peer kernels a fold left out because it held out their key: a held-out kernel is one no op
  // has measured.
  size_t peer_kernels_withheld = 0;
  QualitySummary summary;
  // The same question for new shapes of measured kernels, which the search asks of instances
  // it sampled and the pack's dispatcher of shape values between the tuned ones: the instances
  // dealt into folds, every kernel learned on the other folds' instances, and all of them
  // ranked on each held-out instance. Needs two instances or more.
  bool shapes_evaluated = false;
  size_t held_out_instances = 0;  // over all folds: every instance, each held out once
  QualitySummary shapes;
};

// Another op's measurements, which the search's model also learns from (OpCostModel::learn_peer).
struct PeerBook {
  const KernelBook* book;
  const InstanceTable* table;
};

// Needs at least kMinKernelsForQuality usable kernels; seed deals the folds. Each fold's model
// learns from the peers' kernels as the search's did, less every kernel the fold holds out.
inline constexpr size_t kMinKernelsForQuality = 5;
// Folds of each half of evaluate_held_out: round(1 / holdout_fraction), 5 for 20%.
int held_out_folds(double holdout_fraction);
// Models evaluate_held_out trains: one per fold of the kernels and one per fold of the shapes,
// each on about as much as the search's own model. What a tune's end costs, per op.
inline int held_out_trainings(double holdout_fraction) {
  return 2 * held_out_folds(holdout_fraction);
}
CostModelQuality evaluate_held_out(const KernelBook& book, const InstanceTable& table,
                                   const MachineSpec& machine, const CostModelParams& params,
                                   double holdout_fraction, uint64_t seed, double regret_tolerance,
                                   const std::vector<PeerBook>& peers = {});

// The log line: {"kind": "cost_model_quality", "workload", "op", "device", "arch",
// "simulated", "folds", "train_kernels", "held_out_kernels", "peer_kernels", "instances", "mean_spearman",
// "top1_within_tolerance", "regret_tolerance", "weighted_mean_regret", "max_regret",
// "held_out_shapes" ({"instances", "mean_spearman", "top1_within_tolerance",
// "weighted_mean_regret", "max_regret"}, or null), "analytic" (the knobs the search's model
// fitted, analytic_fit.h: {"launch_overhead_us", and "underfilled_sm_gamma" on a GPU or
// "pack_ns_per_element" on a CPU}), "tool_version", "timestamp"}. NaN figures are written as
// null.
nlohmann::json quality_record(const std::string& workload, const std::string& op,
                              const DeviceIdentity& device, const CostModelQuality& quality,
                              double regret_tolerance, const AnalyticParams& fitted,
                              Target target);

}  // namespace dietcode

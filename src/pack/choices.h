// Where a pack's kernels come from. A ChoicesProvider answers, per op, which micro-kernels are
// candidates and how fast each was (or is predicted to be) on each tuned instance; the pack
// builder fits the dispatcher over that and keeps the kernels the tree uses.
//
//   LogChoices      measurements from a tuning log (`build --log`)
//   DefaultChoices  each op's template at its default tunables: one kernel, no timings — an
//                   untuned pack that still computes every shape correctly
// A cost-model provider (predicted latencies, TreeSample::predicted_us) plugs in the same way.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dispatch/decision_tree.h"
#include "search/runoff.h"
#include "space/micro_kernel.h"
#include "space/target.h"
#include "workload/workload.h"

namespace dietcode {

struct OpChoices {
  std::vector<MicroKernel> candidates;
  // One per tuned instance that has any time; latency_us (and predicted_us) are parallel to
  // candidates, values to op.vars. Empty: no timings, so the pack takes candidates[0] alone.
  std::vector<TreeSample> samples;
};

class ChoicesProvider {
 public:
  virtual ~ChoicesProvider() = default;
  // What the manifest's "choices" says: "measured", "simulated (test double)", ...
  virtual std::string description() const = 0;
  // Empty candidates: this provider has nothing for the op (the builder falls back).
  virtual OpChoices choices(const Workload& workload, const OpSpec& op) = 0;
  // The target every candidate is for (the templates' Target), when the provider knows one.
  virtual std::optional<Target> target() const { return std::nullopt; }
  // How noisy the provider's times are (TreeFitOptions::timing_noise), when it can tell.
  virtual std::optional<TimingNoise> timing_noise() const { return std::nullopt; }
};

// Reads the log now; its timing noise is what its runoffs measured (runoff_timing_noise, over
// every op of the workload: the noise is the host's, not an op's). Throws UserError naming the log when it holds simulated measurements for
// this workload and allow_simulated is false, or when it cannot be read. Lines it skips are
// described in `warnings`. With a target, records of other targets' templates are ignored
// (and counted in a warning); without one, the log's records for the workload must all be of
// one target (else a UserError asks for --target), which target() then reports.
std::unique_ptr<ChoicesProvider> make_log_choices(const Workload& workload,
                                                  const std::string& log_path, bool allow_simulated,
                                                  std::vector<std::string>& warnings,
                                                  std::optional<Target> target = std::nullopt);

// The first template of the target that computes the op (the CPU: AVX2, which every x86-64-v3
// CPU runs).
std::unique_ptr<ChoicesProvider> make_default_choices(Target target = Target::kCuda);

}  // namespace dietcode

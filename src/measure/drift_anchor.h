// DriftAnchor: one reference kernel timed beside every batch, so that batches timed minutes
// apart on a machine whose speed drifts are comparable.
//
// Why: a batch's candidates are interleaved round by round, so drift within a batch hits all
// of them alike. Between batches it does not, and on a shared host it is large: on a 2-core
// cloud guest the same kernel ran at 168-196 GFLOP/s from one run to the next (other tenants
// on the cores' SMT siblings and on the memory), while two kernels timed together kept their
// ratio within about 1.5%. A tune times each op's kernels in a hundred small batches over ten
// minutes, so without a common reference the ranking of two kernels timed in different
// batches is decided by when they ran as much as by what they are.
//
// How: the first kernel that times ok becomes the anchor (adopt). Each later batch also times
// the anchor, interleaved with the batch's candidates, on one of the anchor's own shapes: the
// largest whose FLOPs stay within max_share of the batch's per round (so it costs about that
// share of the timing; a batch too small for any goes uncorrected). observe() returns the
// batch's correction, the anchor's median time on that shape over the batches before divided
// by its time in this batch, and the batch's latencies are multiplied by it: they read as if
// the machine had been in its typical state.
//
// A correction beyond 10% either way is refused (1, and the time is not kept): the anchor is
// timed on one shape, a median of a few runs, and a hiccup of its own would otherwise move a
// whole batch. In the first tune with the anchor (BERT-base on a 2-core Zen 4 guest), the
// corrections followed the machine smoothly, 0.94-1.03 with episodes of several batches at
// 0.96-0.97, except for two single batches at 0.80 and 0.82 whose kernels had run at their
// usual speed: the anchor alone had been slow, and the correction made their kernels faster
// than the FMA peak.
//
// Target-independent bookkeeping; the measurer (x86/cpu_measurer.h) adds the anchor to its
// requests and applies the correction, which the log keeps as "drift_scale".
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "measure/gpu_protocol.h"

namespace dietcode {

class DriftAnchor {
 public:
  explicit DriftAnchor(double max_share = 0.05) : max_share_(max_share) {}

  bool adopted() const { return adopted_; }
  // Makes `candidate`, timed ok with `latency_us` per shape, the anchor. Only the first call
  // counts; shapes without a finite positive latency are not used.
  void adopt(const WorkerCandidate& candidate, const std::vector<double>& latency_us);

  // The anchor shape to time beside a batch doing `batch_flops` per round; nullopt when no
  // shape is small enough (or nothing is adopted).
  std::optional<size_t> pick(double batch_flops) const;
  // The anchor restricted to shape `shape` (an index from pick), ready for a time request.
  WorkerCandidate candidate(size_t shape) const;
  // The anchor took `latency_us` on `shape` in this batch: the batch's correction factor, or 1
  // when the time is no time or an outlier (beyond kMaxDrift).
  double observe(size_t shape, double latency_us);

  static constexpr double kMaxDrift = 0.10;

 private:
  double max_share_;
  bool adopted_ = false;
  WorkerCandidate anchor_;                    // with every usable shape
  std::vector<std::vector<double>> samples_;  // per shape, its times so far
};

}  // namespace dietcode

// The runoff: once an op's rounds are over, the kernels closest to each instance's best are
// timed again, all of them in one measurement, so that the kernel a pack serves an instance
// with is chosen by a same-time comparison (docs/cpu-target.md, "The runoff", for what it
// changed on a shared 2-core guest).
//
// Why. Every kernel is timed once per instance, in whichever batch the round put it, over
// minutes in which a shared host's speed drifts (on the 2-core guests, in phases of up to 2x).
// Two things then go wrong at the end:
//   - kernels timed in different batches are compared, though only a batch's own kernels were
//     interleaved;
//   - the best of many noisy timings is biased low (the winner's curse): the instance's chosen
//     kernel looks faster than it runs, and the tune's figure with it.
// A runoff's timings are independent of the selection that made the finalists, and the
// finalists of an instance share one measurement, interleaved round by round.
//
// What a log holds: the runoff's times are ordinary measurement records with "runoff": N, the
// N-th runoff of the op in the log. Readers (the search's KernelBook, `build`) settle every
// instance the same way, here: the latest runoff that timed an instance decides it; its
// finalists take their runoff times, and every other kernel keeps its ordinary time scaled by
// how the finalists' times moved (the median ratio runoff / ordinary), so that a kernel timed
// in a faster phase cannot undercut the finalists merely because the runoff met a slow one.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace dietcode {

// The finalists of one instance: kernels (indices into `latency_us`, NaN where a kernel has no
// time) within `margin` of the fastest (0.10: at most 10% slower), fastest first, at most
// `per_instance` of them. Empty when no kernel has a time.
std::vector<size_t> runoff_finalists(const std::vector<double>& latency_us, size_t per_instance,
                                     double margin);

// One instance's times once a runoff re-timed some of its kernels. ordinary_us[k]: kernel k's
// time from the rounds (NaN: none); runoff_us[k]: from the runoff (NaN: not a finalist). Both
// vectors have one entry per kernel. A finalist takes its runoff time; any other kernel its
// ordinary time times the median of runoff/ordinary over the finalists that have both (1 when
// none has). Without a runoff time anywhere, the ordinary times are returned unchanged.
std::vector<double> settle_runoff(const std::vector<double>& ordinary_us,
                                  const std::vector<double>& runoff_us);

// The runoff times a reader keeps for one instance: those of the latest runoff that timed it.
class InstanceRunoff {
 public:
  // A runoff record of `kernel`: one of an earlier runoff than the latest seen is dropped; one
  // of a later runoff discards what the earlier one said.
  void add(size_t kernel, int runoff, double latency_us);
  int latest() const { return latest_; }  // 0: no runoff timed this instance
  const std::map<size_t, double>& times() const { return times_; }
  // Per kernel (n of them), the runoff time or NaN, as settle_runoff takes it.
  std::vector<double> as_vector(size_t n) const;

 private:
  int latest_ = 0;
  std::map<size_t, double> times_;  // kernel -> latency of the latest runoff
};

// How noisy one timing is, as a log's runoffs show it. A runoff times each instance's
// finalists again: per finalist, log(runoff time / ordinary time) is the host's change of
// phase between the two timings, the same for all of the instance's finalists, plus two
// timings' own noise. The difference of two finalists' log ratios is noise alone.
struct TimingNoise {
  double sd = 0;     // relative standard deviation of one timing (0.045: 4.5%)
  size_t pairs = 0;  // the (ordinary, runoff) pairs it was measured on
};

// The fewest pairs an estimate is made from.
constexpr size_t kMinTimingNoisePairs = 8;

// From (ordinary us, runoff us) pairs, one list per instance (instances with fewer than two
// pairs tell nothing and are skipped): the differences of log ratios between every two pairs
// of an instance, their spread taken robustly (1.4826 x the median absolute difference, the
// standard deviation were they normal: a few timings caught in a hiccup do not set it), and
// halved, a difference holding four timings' noise. nullopt with fewer than
// kMinTimingNoisePairs usable pairs.
std::optional<TimingNoise> runoff_timing_noise(
    const std::vector<std::vector<std::pair<double, double>>>& instances);

}  // namespace dietcode

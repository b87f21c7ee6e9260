// What a round costs in wall time, learned from the op's own rounds, so that a time budget's
// last round is sized by what its kernels will cost and not by the run's average kernel.
//
// A round's wall time is close to linear in two things:
//   a * kernels      compiling, loading and checking each kernel (NVRTC dominates on a GPU,
//                    the worker's load and its correctness check on odd shapes on a CPU);
//   b * timed_us     timing them: every (kernel, instance) pair runs warm-up + repeats times,
//                    so the wall time grows with the kernels' own latencies. On a CPU, where
//                    BERT's kernels take milliseconds, this is most of a round, and a round of
//                    slow kernels (a first or fresh start's exploring) costs twice the average.
// Fitted by least squares over the op's rounds; the round to come is priced with its picks'
// predicted latencies.
#pragma once

#include <cstddef>
#include <vector>

namespace dietcode {

class RoundCostFit {
 public:
  // One finished round (or completion pass): kernels compiled, the sum of the latencies it
  // measured over every (kernel, instance) pair, and its compile + measure wall seconds.
  void add(int kernels, double timed_us, double seconds);
  bool known() const { return !rounds_.empty(); }
  // Seconds a round of `kernels` kernels whose pairs sum to `timed_us` is expected to take;
  // 0 while nothing is known.
  double seconds(int kernels, double timed_us) const;
  double per_kernel_seconds() const { return a_; }  // the fitted a
  double per_timed_us_seconds() const { return b_; }  // the fitted b

 private:
  struct Round {
    double kernels, timed_us, seconds;
  };
  void refit();
  std::vector<Round> rounds_;
  double a_ = 0;
  double b_ = 0;
};

}  // namespace dietcode

// What the joint search minimises over an op's instances, each weighted by the workload.
//
// Why two. The weighted time (sum_i w_i t_i) is what a server spends on the workload as its
// weights spread the calls: a 2% gain on a 48 ms shape is worth as much as a 40% gain on a
// 0.6 ms one, so a search for it spends its rounds on the large shapes. `bench` reports the
// weighted geometric mean of the per-instance speedups, where every instance's relative speed
// counts alike: the search for that minimises sum_i w_i log t_i. On BERT's CPU workload (17
// values of T, 16-2048 rows) the time objective gives T = 1 about 0.2% of the mutations and
// the selection's attention; a fresh tune then served fc2 at T = 1 with a kernel 1.1-1.5x
// slower than an older log's (docs/results/cpu/README.md, AS).
#pragma once

#include <algorithm>
#include <cmath>

namespace dietcode {

enum class SearchObjective {
  kWeightedTime,     // sum_i w_i t_i (the default)
  kWeightedLogTime,  // sum_i w_i log t_i: the weighted geometric mean of the times
};

// What one instance contributes, before its weight: t, or log t (of at least a picosecond, so
// that a model's prediction of zero cannot outweigh every other instance).
inline double objective_term(SearchObjective objective, double latency_us) {
  if (objective == SearchObjective::kWeightedTime) return latency_us;
  return std::log(std::max(latency_us, 1e-6));
}

}  // namespace dietcode

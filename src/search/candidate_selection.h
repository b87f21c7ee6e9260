// Which candidates a round compiles and measures. A candidate is worth what it would take off
// the op's weighted time if it joined the current assignment:
//
//   cost(c) = sum_i w_i * min(incumbent_i, predicted(c, i))
//
// where incumbent_i is the latency instance i has now (its best measured kernel, else the best
// prediction among measured kernels, else +infinity) and w_i its normalised weight. The round
// is filled greedily: the cheapest candidate joins, the incumbents are lowered to its
// predictions, and the next pick is scored against that. This favours a set of kernels that
// each win a different range of shapes over several copies of one generalist, which is what a
// per-instance assignment needs. Ties (no candidate predicted to gain anything) are broken by
// the weighted mean predicted latency, so the near-misses get measured.
//
// Then epsilon-greedy: a share of the round is drawn uniformly among the rest, so the cost
// model also learns from kernels it does not rate.
#pragma once

#include <cstddef>
#include <random>
#include <vector>

#include "search/objective.h"

namespace dietcode {

// predicted: row-major [candidate * instances + instance]; weights and incumbent have one
// entry per instance. Candidates whose predictions are not all finite are never picked.
struct SelectionInput {
  const std::vector<double>* predicted = nullptr;
  size_t candidates = 0;
  const std::vector<double>* weights = nullptr;
  const std::vector<double>* incumbent = nullptr;
  // kWeightedLogTime sums w_i * log(min(incumbent_i, predicted(c, i))) instead (objective.h).
  SearchObjective objective = SearchObjective::kWeightedTime;
};

// The objective's value for the assignment if candidate c joined it: its weighted latency, or
// the weighted sum of log latencies.
double assignment_cost_with(const SelectionInput& in, size_t c);

// The greedy part: up to `count` candidates, best first.
std::vector<size_t> select_greedy(const SelectionInput& in, size_t count);

// A round: round(count * exploration) random picks among those greedy left, the rest greedy.
// Returned in pick order (greedy first); `random_picked`, when given, flags the random ones.
std::vector<size_t> select_round(const SelectionInput& in, size_t count, double exploration,
                                 std::mt19937_64& rng, std::vector<bool>* random_picked = nullptr);

}  // namespace dietcode

// Where a round's candidates come from (METHOD.md §4): fresh uniform samples of the space, the
// population of promising unmeasured candidates carried over from the last round, and mutants.
//
// Mutation is retargeted at the instances that lose the most time: a target instance is drawn
// in proportion to its weighted latency w_i * incumbent_i, and the parent is a kernel serving
// that instance — its best measured kernel, or the population member predicted fastest on it.
// The child is one to max_mutation_steps moves away (SearchSpace::mutate: a factor moved between
// tile levels, or one tunable stepped), so the search refines around what wins the costly
// shapes instead of around the overall average.
#pragma once

#include <cstddef>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "search/instance_table.h"
#include "search/kernel_book.h"
#include "search/search_options.h"
#include "space/space.h"

namespace dietcode {

// A candidate carried from one round to the next, with its predictions on every instance.
struct PopulationMember {
  MicroKernel mk;
  std::vector<double> predicted_us;
};

struct ProposalContext {
  // The op's template spaces: fresh samples are drawn from each in turn, a mutant from its
  // parent's template.
  std::vector<const SearchSpace*> spaces;
  const InstanceTable* table = nullptr;
  const KernelBook* book = nullptr;
  const std::vector<double>* incumbent = nullptr;      // per instance; +inf where nothing is known
  const std::vector<int>* incumbent_kernel = nullptr;  // book index per instance, -1 for none
  const std::vector<PopulationMember>* population = nullptr;
  const std::set<std::string>* excluded = nullptr;  // keys never to propose (already tried)
  // Kernels that serve the workload's other ops best: micro-kernels are shape-generic, so a
  // tile that wins fc1 is worth a look for qkv. Offered after the population, where one of
  // this op's spaces holds them. May be null.
  const std::vector<MicroKernel>* borrowed = nullptr;
};

// The instance a mutation targets: drawn with probability proportional to w_i * incumbent_i
// over instances with a finite incumbent (the weighted time: where the time is), by weight
// alone when none has one. Under kWeightedLogTime by w_i over those instances: a relative gain
// is worth as much on every instance.
size_t pick_target_instance(const InstanceTable& table, const std::vector<double>& incumbent,
                            std::mt19937_64& rng,
                            SearchObjective objective = SearchObjective::kWeightedTime);

// Distinct valid candidates not in `excluded`, in a deterministic order for a given rng state:
// population first, then kernels borrowed from other ops, then mutants, then fresh samples.
std::vector<MicroKernel> propose_candidates(const ProposalContext& ctx,
                                            const JointSearchOptions& options,
                                            std::mt19937_64& rng);

}  // namespace dietcode

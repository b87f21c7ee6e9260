// The search space of one template for one operator on one GPU: which micro-kernels are
// valid, all of them, a uniform random one, and a random neighbour of one. The search and
// `dietcode inspect --space` are built on this; it knows templates only through their data
// (TemplateSpace: tunables, factor chains, constraints, launch resources).
//
// A candidate is valid when every tunable has one of its listed values (and nothing else is
// set), every constraint holds, and its launch resources fit the GPU: threads a positive
// multiple of the warp size and at most the per-block maximum, dynamic shared memory within
// the opt-in limit. Registers and spills are known only after compiling: fits_registers().
//
// Randomness comes only from the std::mt19937_64 the caller passes, and is drawn in a fixed
// way, so a seed reproduces a search on every platform.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "nvrtc/compiler.h"
#include "space/template_space.h"

namespace dietcode {

struct SearchLimits {
  size_t max_candidates = 1000000;  // enumerate() stops after this many valid candidates
  size_t max_visits = 20000000;     // ... or after visiting this many (partial) assignments
  // sample() enumerates once and draws from the list when the unconstrained product of the
  // tunables' value lists is at most this; larger spaces are sampled by rejection.
  double enumerate_for_sampling = 200000;
  int sample_tries = 100000;  // rejection-sampling draws before sample() gives up
  int mutate_tries = 100;     // random moves tried before mutate() gives up
};

struct Enumeration {
  std::vector<MicroKernel> candidates;  // valid, in lexicographic order of the tunables' lists
  bool complete = true;  // false once a limit is reached (even if nothing was left to visit)
};

class SearchSpace {
 public:
  // Keeps references to `space` and to the GPU and op inside `context`: they must outlive it.
  SearchSpace(const TemplateSpace& space, const SpaceContext& context, SearchLimits limits = {});
  ~SearchSpace();
  SearchSpace(SearchSpace&&) noexcept;

  const TemplateSpace& space() const { return space_; }
  const SpaceContext& context() const { return context_; }

  // `why`, when given and the answer is no, says what is wrong: "TM=3 is not one of 1, 2, 4".
  bool is_valid(const MicroKernel& mk, std::string* why = nullptr) const;

  // Every valid candidate: the cartesian product of the tunables' values, with each
  // constraint that lists its `uses` checked as soon as those are chosen.
  Enumeration enumerate() const;

  // The number of combinations before any constraint: the product of the lists' lengths.
  double unconstrained_size() const;

  // A valid candidate drawn uniformly; nullopt when there is none (or, for a huge space, when
  // rejection sampling found none within SearchLimits::sample_tries).
  std::optional<MicroKernel> sample(std::mt19937_64& rng) const;

  // A valid candidate near `mk` and different from it: a prime factor moved between two levels
  // of a factor chain (TM *= 2, THREADS_M /= 2: the same tile spread differently), or one
  // tunable stepped to the next or previous value in its list (a chain level grows or shrinks
  // alone). nullopt when no move tried within SearchLimits::mutate_tries gave a valid one.
  std::optional<MicroKernel> mutate(const MicroKernel& mk, std::mt19937_64& rng) const;

 private:
  struct SamplingCache;

  const TemplateSpace& space_;
  SpaceContext context_;
  SearchLimits limits_;
  std::unique_ptr<SamplingCache> cache_;
};

// After compiling: false, with the reason in `why`, when the compile failed, or any entry in
// any arch spills registers or uses more registers per thread than the GPU has.
bool fits_registers(const CompileResult& result, const GpuSpec& gpu, std::string* why = nullptr);

// A uniform integer in [0, n) for n > 0, identical on every platform (the standard
// distributions are implementation-defined).
uint64_t uniform_index(std::mt19937_64& rng, uint64_t n);

}  // namespace dietcode

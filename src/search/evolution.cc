#include "search/evolution.h"

#include <cmath>
#include <limits>
#include <optional>

namespace dietcode {

namespace {

// A double in [0, 1) from 53 random bits, identical on every platform.
double unit_draw(std::mt19937_64& rng) { return double(rng() >> 11) * 0x1.0p-53; }

// The parent for a target instance: its best measured kernel or the population member
// predicted fastest on it, each half of the time when both exist.
std::optional<MicroKernel> pick_parent(const ProposalContext& ctx, size_t target,
                                       std::mt19937_64& rng) {
  std::optional<MicroKernel> measured, predicted;
  const int k = (*ctx.incumbent_kernel)[target];
  if (k >= 0) measured = (*ctx.book)[size_t(k)].mk;
  double best = std::numeric_limits<double>::infinity();
  for (const PopulationMember& m : *ctx.population)
    if (m.predicted_us[target] < best) best = m.predicted_us[target], predicted = m.mk;
  if (measured && predicted) return uniform_index(rng, 2) == 0 ? measured : predicted;
  return measured ? measured : predicted;
}

}  // namespace

size_t pick_target_instance(const InstanceTable& table, const std::vector<double>& incumbent,
                            std::mt19937_64& rng, SearchObjective objective) {
  const bool by_time = objective == SearchObjective::kWeightedTime;
  const std::vector<double>& w = table.weights();
  std::vector<double> mass(w.size());
  double total = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    mass[i] = std::isfinite(incumbent[i]) ? w[i] * (by_time ? incumbent[i] : 1.0) : 0.0;
    total += mass[i];
  }
  if (!(total > 0)) mass = w, total = 1.0;
  double draw = unit_draw(rng) * total;
  for (size_t i = 0; i < mass.size(); ++i) {
    if (draw < mass[i]) return i;
    draw -= mass[i];
  }
  return mass.size() - 1;  // rounding left the draw just past the end
}

std::vector<MicroKernel> propose_candidates(const ProposalContext& ctx,
                                            const JointSearchOptions& options,
                                            std::mt19937_64& rng) {
  std::vector<MicroKernel> out;
  std::set<std::string> seen = *ctx.excluded;
  auto offer = [&](const MicroKernel& mk) {
    if (seen.insert(mk.key()).second) out.push_back(mk);
  };

  for (const PopulationMember& m : *ctx.population) offer(m.mk);
  if (ctx.borrowed)
    for (const MicroKernel& mk : *ctx.borrowed)
      for (const SearchSpace* space : ctx.spaces)
        if (space->space().tmpl == mk.tmpl && space->is_valid(mk)) {
          offer(mk);
          break;
        }

  const bool has_parents = !ctx.population->empty() || !ctx.book->usable().empty();
  for (int child = 0; has_parents && child < options.children; ++child) {
    const size_t target = pick_target_instance(*ctx.table, *ctx.incumbent, rng, options.objective);
    std::optional<MicroKernel> mk = pick_parent(ctx, target, rng);
    if (!mk) continue;
    const int steps =
        1 + int(uniform_index(rng, uint64_t(std::max(options.max_mutation_steps, 1))));
    const SearchSpace* space = nullptr;
    for (const SearchSpace* candidate : ctx.spaces)
      if (candidate->space().tmpl == mk->tmpl) space = candidate;
    if (!space) continue;  // a kernel from the log whose template is no longer searched
    for (int s = 0; s < steps; ++s) {
      std::optional<MicroKernel> next = space->mutate(*mk, rng);
      if (!next) break;
      mk = next;
    }
    offer(*mk);
  }

  // A space that fails to give a sample has no valid candidate (or is too constrained to
  // sample): asking it again would only repeat the failed rejection sampling.
  std::vector<char> dead(ctx.spaces.size(), 0);
  for (int i = 0; i < options.random_samples && !ctx.spaces.empty(); ++i) {
    const size_t s = size_t(i) % ctx.spaces.size();
    if (dead[s]) continue;
    if (std::optional<MicroKernel> mk = ctx.spaces[s]->sample(rng)) {
      offer(*mk);
    } else {
      dead[s] = 1;
    }
  }
  return out;
}

}  // namespace dietcode

#include "space/space.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <mutex>
#include <stdexcept>

namespace dietcode {
namespace {

enum class Verdict { kHolds, kFails, kUndecided };

// A constraint on a possibly partial candidate: a predicate that reads a tunable not chosen yet
// throws std::out_of_range (MicroKernel::get), which means "ask again later".
Verdict check(const Constraint& c, const MicroKernel& mk, const SpaceContext& context) {
  try {
    return c.holds(mk, context) ? Verdict::kHolds : Verdict::kFails;
  } catch (const std::out_of_range&) {
    return Verdict::kUndecided;
  }
}

std::string join(const std::vector<int>& values) {
  std::string out;
  for (int v : values) out += (out.empty() ? "" : ", ") + std::to_string(v);
  return out;
}

bool fail(std::string* why, std::string reason) {
  if (why) *why = std::move(reason);
  return false;
}

// Launch resources against the GPU's limits.
bool resources_fit(const TemplateSpace& space, const MicroKernel& mk, const GpuSpec& gpu,
                   std::string* why) {
  if (!space.resources) return true;
  LaunchResources r = space.resources(mk);
  if (r.threads <= 0 || r.threads % gpu.warp_size != 0)
    return fail(why, fmt::format("{} threads per block is not a positive multiple of the warp "
                                 "size {}",
                                 r.threads, gpu.warp_size));
  if (r.threads > gpu.max_threads_per_block)
    return fail(why, fmt::format("{} threads per block is more than the GPU's {}", r.threads,
                                 gpu.max_threads_per_block));
  if (r.dynamic_smem_bytes < 0 || r.dynamic_smem_bytes > gpu.smem_per_block_optin)
    return fail(why, fmt::format("{} bytes of shared memory is more than the GPU's {} per block",
                                 r.dynamic_smem_bytes, gpu.smem_per_block_optin));
  return true;
}

std::vector<int> distinct_prime_factors(int n) {
  std::vector<int> out;
  for (int p = 2; p * p <= n; ++p) {
    if (n % p) continue;
    out.push_back(p);
    while (n % p == 0) n /= p;
  }
  if (n > 1) out.push_back(n);
  return out;
}

bool listed(const Tunable& t, int value) {
  return std::binary_search(t.values.begin(), t.values.end(), value);
}

}  // namespace

uint64_t uniform_index(std::mt19937_64& rng, uint64_t n) {
  // Reject the top sliver of the 64-bit range that would make low values likelier.
  const uint64_t limit =
      std::numeric_limits<uint64_t>::max() - std::numeric_limits<uint64_t>::max() % n;
  uint64_t x;
  do x = rng();
  while (x >= limit);
  return x % n;
}

// The valid candidates of a small space, enumerated on the first sample() and shared by every
// later one (sample() is const and may be called from several threads).
struct SearchSpace::SamplingCache {
  std::once_flag once;
  std::vector<MicroKernel> candidates;
};

SearchSpace::SearchSpace(const TemplateSpace& space, const SpaceContext& context,
                         SearchLimits limits)
    : space_(space), context_(context), limits_(limits), cache_(std::make_unique<SamplingCache>()) {
  for (const Tunable& t : space_.tunables)
    if (t.values.empty() || !std::is_sorted(t.values.begin(), t.values.end()))
      throw std::logic_error(space_.tmpl + ": tunable " + t.name +
                             " needs a non-empty ascending list of values");
}

SearchSpace::~SearchSpace() = default;
SearchSpace::SearchSpace(SearchSpace&&) noexcept = default;

double SearchSpace::unconstrained_size() const {
  double size = 1;
  for (const Tunable& t : space_.tunables) size *= double(t.values.size());
  return size;
}

bool SearchSpace::is_valid(const MicroKernel& mk, std::string* why) const {
  if (mk.tmpl != space_.tmpl) return fail(why, "template " + mk.tmpl + " is not " + space_.tmpl);
  for (const auto& [name, value] : mk.params)
    if (!space_.find(name)) return fail(why, "unknown tunable " + name);
  for (const Tunable& t : space_.tunables) {
    auto it = mk.params.find(t.name);
    if (it == mk.params.end()) return fail(why, "missing tunable " + t.name);
    if (!listed(t, it->second))
      return fail(why, fmt::format("{}={} is not one of {}", t.name, it->second, join(t.values)));
  }
  for (const Constraint& c : space_.constraints)
    if (check(c, mk, context_) != Verdict::kHolds)
      return fail(why, "violates \"" + c.description + "\"");
  return resources_fit(space_, mk, context_.gpu, why);
}

Enumeration SearchSpace::enumerate() const {
  const auto& tunables = space_.tunables;
  // Each constraint that lists its uses is checked at the depth where the last of them is
  // chosen; the others (and any that turn out to read more) at the leaves.
  std::vector<std::vector<size_t>> at_depth(tunables.size());
  std::vector<bool> at_leaf(space_.constraints.size(), false);
  for (size_t c = 0; c < space_.constraints.size(); ++c) {
    const auto& uses = space_.constraints[c].uses;
    size_t depth = 0;
    bool known = !uses.empty();
    for (const std::string& name : uses) {
      auto it = std::find_if(tunables.begin(), tunables.end(),
                             [&](const Tunable& t) { return t.name == name; });
      if (it == tunables.end())
        known = false;
      else
        depth = std::max(depth, size_t(it - tunables.begin()));
    }
    if (known && !tunables.empty())
      at_depth[depth].push_back(c);
    else
      at_leaf[c] = true;
  }

  Enumeration out;
  MicroKernel mk{space_.tmpl, {}};
  std::vector<bool> undecided(space_.constraints.size(), false);
  size_t visits = 0;

  // Depth-first over the tunables in their declared order, so results come out sorted.
  std::function<void(size_t)> visit = [&](size_t depth) {
    if (depth == tunables.size()) {
      for (size_t c = 0; c < space_.constraints.size(); ++c) {
        if ((at_leaf[c] || undecided[c]) &&
            check(space_.constraints[c], mk, context_) != Verdict::kHolds)
          return;
      }
      if (!resources_fit(space_, mk, context_.gpu, nullptr)) return;
      out.candidates.push_back(mk);
      if (out.candidates.size() >= limits_.max_candidates) out.complete = false;
      return;
    }
    const Tunable& t = tunables[depth];
    for (int value : t.values) {
      if (!out.complete) break;
      if (++visits > limits_.max_visits) {
        out.complete = false;
        break;
      }
      mk.params[t.name] = value;
      bool pruned = false;
      for (size_t c : at_depth[depth]) {
        Verdict v = check(space_.constraints[c], mk, context_);
        undecided[c] = v == Verdict::kUndecided;
        if (v == Verdict::kFails) {
          pruned = true;
          break;
        }
      }
      if (!pruned) visit(depth + 1);
    }
    mk.params.erase(t.name);
  };
  visit(0);
  return out;
}

std::optional<MicroKernel> SearchSpace::sample(std::mt19937_64& rng) const {
  if (unconstrained_size() <= limits_.enumerate_for_sampling) {
    std::call_once(cache_->once, [this] { cache_->candidates = enumerate().candidates; });
    const auto& all = cache_->candidates;
    if (all.empty()) return std::nullopt;
    return all[uniform_index(rng, all.size())];
  }
  // Uniform over the product, kept only when valid: uniform over the valid candidates.
  for (int attempt = 0; attempt < limits_.sample_tries; ++attempt) {
    MicroKernel mk{space_.tmpl, {}};
    for (const Tunable& t : space_.tunables)
      mk.params[t.name] = t.values[uniform_index(rng, t.values.size())];
    if (is_valid(mk)) return mk;
  }
  return std::nullopt;
}

std::optional<MicroKernel> SearchSpace::mutate(const MicroKernel& mk, std::mt19937_64& rng) const {
  if (space_.tunables.empty()) return std::nullopt;
  for (int attempt = 0; attempt < limits_.mutate_tries; ++attempt) {
    MicroKernel next = mk;
    next.tmpl = space_.tmpl;
    bool chain_move = !space_.chains.empty() && uniform_index(rng, 2) == 0;
    if (chain_move) {
      const FactorChain& chain = space_.chains[uniform_index(rng, space_.chains.size())];
      if (chain.levels.size() < 2) continue;
      size_t from = uniform_index(rng, chain.levels.size());
      size_t to = uniform_index(rng, chain.levels.size() - 1);
      if (to >= from) ++to;
      auto source = next.params.find(chain.levels[from]);
      auto target = next.params.find(chain.levels[to]);
      if (source == next.params.end() || target == next.params.end()) continue;
      std::vector<int> primes = distinct_prime_factors(std::abs(source->second));
      if (primes.empty()) continue;
      int p = primes[uniform_index(rng, primes.size())];
      source->second /= p;
      target->second *= p;
    } else {
      const Tunable& t = space_.tunables[uniform_index(rng, space_.tunables.size())];
      if (t.values.size() < 2) continue;
      // The current value's place in the list (or where it would go), then one step.
      int current = next.get_or(t.name, t.default_value);
      size_t at =
          size_t(std::lower_bound(t.values.begin(), t.values.end(), current) - t.values.begin());
      bool up = uniform_index(rng, 2) == 0;
      size_t step_to;
      if (at < t.values.size() && t.values[at] == current)
        step_to = up ? std::min(at + 1, t.values.size() - 1) : (at == 0 ? 0 : at - 1);
      else
        step_to = up ? std::min(at, t.values.size() - 1) : (at == 0 ? 0 : at - 1);
      next.params[t.name] = t.values[step_to];
    }
    if (!(next == mk) && is_valid(next)) return next;
  }
  return std::nullopt;
}

bool fits_registers(const CompileResult& result, const GpuSpec& gpu, std::string* why) {
  if (!result.ok) return fail(why, "the compile failed");
  for (const ArchBinary& binary : result.binaries) {
    for (const KernelResources& r : binary.resources) {
      if (r.spill_stores > 0 || r.spill_loads > 0)
        return fail(why, fmt::format("{} on {} spills registers ({} bytes stored, {} loaded)",
                                     r.entry, binary.arch, r.spill_stores, r.spill_loads));
      if (r.registers > gpu.max_regs_per_thread)
        return fail(why, fmt::format("{} on {} uses {} registers per thread, more than the "
                                     "GPU's {}",
                                     r.entry, binary.arch, r.registers, gpu.max_regs_per_thread));
    }
  }
  return true;
}

}  // namespace dietcode

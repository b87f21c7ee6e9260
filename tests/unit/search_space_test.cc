// SearchSpace over a fake tiled-GEMM template defined here: validity with exact reasons,
// enumeration against brute force, sampling validity, uniformity and determinism, mutation.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "space/space.h"

namespace dietcode {
namespace {

// BM = WARPS_M * THREADS_M * TM and BN likewise; BK and STAGES on their own.
TemplateSpace fake_gemm() {
  TemplateSpace s;
  s.tmpl = "fake_gemm";
  s.tunables = {{"WARPS_M", {1, 2, 4}, 2, "warps along M"},
                {"THREADS_M", {1, 2, 4, 8}, 4, "threads of a warp along M"},
                {"TM", {1, 2, 4, 8}, 4, "rows per thread"},
                {"WARPS_N", {1, 2, 4}, 2, "warps along N"},
                {"THREADS_N", {1, 2, 4, 8}, 8, "threads of a warp along N"},
                {"TN", {1, 2, 4, 8}, 4, "columns per thread"},
                {"BK", {8, 16, 32}, 16, "K per stage"},
                {"STAGES", {1, 2, 3}, 2, "shared-memory stages"}};
  s.chains = {{"BM", {"WARPS_M", "THREADS_M", "TM"}}, {"BN", {"WARPS_N", "THREADS_N", "TN"}}};
  s.constraints = {
      {"a warp is 32 threads",
       [](const MicroKernel& mk, const SpaceContext&) {
         return mk.get("THREADS_M") * mk.get("THREADS_N") == 32;
       },
       {"THREADS_M", "THREADS_N"}},
      {"at most 32 accumulators per thread",
       [](const MicroKernel& mk, const SpaceContext&) { return mk.get("TM") * mk.get("TN") <= 32; },
       {"TM", "TN"}},
      {"BM at most the largest M",
       [](const MicroKernel& mk, const SpaceContext& c) {
         return mk.get("WARPS_M") * mk.get("THREADS_M") * mk.get("TM") <= c.largest.M;
       },
       {"WARPS_M", "THREADS_M", "TM"}},
      // Lists fewer uses than it reads: enumeration must defer it, not crash or prune wrongly.
      {"WARPS_N <= 2 * WARPS_M",
       [](const MicroKernel& mk, const SpaceContext&) {
         return mk.get("WARPS_N") <= 2 * mk.get("WARPS_M");
       },
       {"WARPS_M"}},
      // Lists no uses: checked on complete candidates only.
      {"BK * STAGES <= 64", [](const MicroKernel& mk, const SpaceContext&) {
         return mk.get("BK") * mk.get("STAGES") <= 64;
       }}};
  s.resources = [](const MicroKernel& mk) {
    LaunchResources r;
    r.threads = mk.get("WARPS_M") * mk.get("WARPS_N") * 32;
    int bm = mk.get("WARPS_M") * mk.get("THREADS_M") * mk.get("TM");
    int bn = mk.get("WARPS_N") * mk.get("THREADS_N") * mk.get("TN");
    r.dynamic_smem_bytes = (bm + bn) * mk.get("BK") * 4 * mk.get("STAGES");
    return r;
  };
  s.supports = [](const OpSpec&) { return true; };
  return s;
}

// A GPU small enough that the resource checks bite.
GpuSpec small_gpu() {
  GpuSpec gpu;
  gpu.id = "small";
  gpu.max_threads_per_block = 128;
  gpu.smem_per_block_optin = 48 * 1024;
  gpu.max_regs_per_thread = 255;
  return gpu;
}

class SearchSpaceTest : public ::testing::Test {
 protected:
  SearchSpaceTest() : space_(fake_gemm()), gpu_(small_gpu()) {
    op_.name = "dense";
    largest_.M = 256;
    largest_.N = 768;
    largest_.K = 768;
  }
  SpaceContext context() const { return {gpu_, op_, largest_}; }

  // Every combination, each checked by is_valid: the reference for enumerate().
  std::vector<MicroKernel> brute_force(const SearchSpace& search) const {
    std::vector<MicroKernel> out;
    std::vector<size_t> digit(space_.tunables.size(), 0);
    while (true) {
      MicroKernel mk{space_.tmpl, {}};
      for (size_t i = 0; i < digit.size(); ++i)
        mk.params[space_.tunables[i].name] = space_.tunables[i].values[digit[i]];
      if (search.is_valid(mk)) out.push_back(mk);
      size_t i = digit.size();
      while (i > 0 && ++digit[i - 1] == space_.tunables[i - 1].values.size()) digit[--i] = 0;
      if (i == 0) break;
    }
    return out;
  }

  TemplateSpace space_;
  GpuSpec gpu_;
  OpSpec op_;
  GemmShape largest_;
};

MicroKernel valid_kernel() {
  return {"fake_gemm",
          {{"WARPS_M", 2},
           {"THREADS_M", 4},
           {"TM", 4},
           {"WARPS_N", 2},
           {"THREADS_N", 8},
           {"TN", 4},
           {"BK", 16},
           {"STAGES", 2}}};
}

TEST_F(SearchSpaceTest, TemplateSpaceDefaultsFindAndExtent) {
  MicroKernel d = space_.defaults();
  EXPECT_EQ(d, valid_kernel());
  ASSERT_NE(space_.find("BK"), nullptr);
  EXPECT_EQ(space_.find("BK")->default_value, 16);
  EXPECT_EQ(space_.find("BM"), nullptr);
  EXPECT_EQ(space_.extent(d, "BM"), 32);
  EXPECT_EQ(space_.extent(d, "BN"), 64);
  EXPECT_EQ(space_.extent(d, "BK"), 16);  // a tunable of its own is its own extent
  EXPECT_THROW(space_.extent(d, "BQ"), std::out_of_range);
}

TEST_F(SearchSpaceTest, ValidKernelIsValid) {
  SearchSpace search(space_, context());
  std::string why = "unchanged";
  EXPECT_TRUE(search.is_valid(valid_kernel(), &why));
  EXPECT_EQ(why, "unchanged");
}

TEST_F(SearchSpaceTest, InvalidKernelsSayWhy) {
  SearchSpace search(space_, context());
  auto why_not = [&](MicroKernel mk) {
    std::string why;
    EXPECT_FALSE(search.is_valid(mk, &why));
    return why;
  };
  MicroKernel mk = valid_kernel();
  mk.params["TM"] = 3;
  EXPECT_EQ(why_not(mk), "TM=3 is not one of 1, 2, 4, 8");
  mk = valid_kernel();
  mk.params.erase("BK");
  EXPECT_EQ(why_not(mk), "missing tunable BK");
  mk = valid_kernel();
  mk.params["SPLIT_K"] = 2;
  EXPECT_EQ(why_not(mk), "unknown tunable SPLIT_K");
  mk = valid_kernel();
  mk.tmpl = "other";
  EXPECT_EQ(why_not(mk), "template other is not fake_gemm");
  mk = valid_kernel();
  mk.params["THREADS_M"] = 8;
  EXPECT_EQ(why_not(mk), "violates \"a warp is 32 threads\"");
  mk = valid_kernel();
  mk.params["BK"] = 32;
  mk.params["STAGES"] = 3;
  EXPECT_EQ(why_not(mk), "violates \"BK * STAGES <= 64\"");
  mk = valid_kernel();
  mk.params["WARPS_M"] = 1;
  mk.params["WARPS_N"] = 4;
  EXPECT_EQ(why_not(mk), "violates \"WARPS_N <= 2 * WARPS_M\"");
  mk = valid_kernel();
  mk.params["WARPS_N"] = 4;  // 8 warps: within the constraints, over the GPU's 128 threads
  EXPECT_EQ(why_not(mk), "256 threads per block is more than the GPU's 128");
  // BM = 4 * 8 * 8 = 256, BN = 1 * 4 * 4 = 16: (256 + 16) * BK * 4 bytes * STAGES.
  mk = {"fake_gemm",
        {{"WARPS_M", 4},
         {"THREADS_M", 8},
         {"TM", 8},
         {"WARPS_N", 1},
         {"THREADS_N", 4},
         {"TN", 4},
         {"BK", 16},
         {"STAGES", 2}}};
  EXPECT_TRUE(search.is_valid(mk));  // 34816 bytes
  mk.params["BK"] = 32;
  EXPECT_EQ(why_not(mk), "69632 bytes of shared memory is more than the GPU's 49152 per block");
}

TEST_F(SearchSpaceTest, LargestShapeBoundsTheTile) {
  largest_.M = 16;
  SearchSpace search(space_, context());
  MicroKernel mk = valid_kernel();  // BM = 32
  std::string why;
  EXPECT_FALSE(search.is_valid(mk, &why));
  EXPECT_EQ(why, "violates \"BM at most the largest M\"");
}

TEST_F(SearchSpaceTest, EnumerateEqualsBruteForce) {
  SearchSpace search(space_, context());
  Enumeration e = search.enumerate();
  EXPECT_TRUE(e.complete);
  std::vector<MicroKernel> expected = brute_force(search);
  ASSERT_GT(expected.size(), 100u);
  EXPECT_LT(expected.size(), size_t(search.unconstrained_size()) / 4);
  std::set<MicroKernel> got(e.candidates.begin(), e.candidates.end());
  EXPECT_EQ(got.size(), e.candidates.size()) << "duplicates";
  EXPECT_EQ(got, std::set<MicroKernel>(expected.begin(), expected.end()));
  EXPECT_EQ(search.unconstrained_size(), 3.0 * 4 * 4 * 3 * 4 * 4 * 3 * 3);
}

TEST_F(SearchSpaceTest, EnumerateWithoutUsesGivesTheSameAnswer) {
  SearchSpace pruned(space_, context());
  std::vector<MicroKernel> expected = pruned.enumerate().candidates;
  for (Constraint& c : space_.constraints) c.uses.clear();
  SearchSpace unpruned(space_, context());
  EXPECT_EQ(unpruned.enumerate().candidates, expected);
}

TEST_F(SearchSpaceTest, EnumerateStopsAtItsLimits) {
  SearchLimits few;
  few.max_candidates = 10;
  Enumeration e = SearchSpace(space_, context(), few).enumerate();
  EXPECT_FALSE(e.complete);
  EXPECT_EQ(e.candidates.size(), 10u);
  SearchLimits short_walk;
  short_walk.max_visits = 50;
  e = SearchSpace(space_, context(), short_walk).enumerate();
  EXPECT_FALSE(e.complete);
}

TEST_F(SearchSpaceTest, SamplesAreValidInBothModes) {
  SearchLimits rejection;
  rejection.enumerate_for_sampling = 0;  // force rejection sampling
  for (SearchLimits limits : {SearchLimits{}, rejection}) {
    SearchSpace search(space_, context(), limits);
    std::mt19937_64 rng(7);
    std::set<MicroKernel> seen;
    for (int i = 0; i < 2000; ++i) {
      std::optional<MicroKernel> mk = search.sample(rng);
      ASSERT_TRUE(mk.has_value());
      std::string why;
      ASSERT_TRUE(search.is_valid(*mk, &why)) << mk->key() << ": " << why;
      seen.insert(*mk);
    }
    EXPECT_GT(seen.size(), 200u);  // not stuck on a few candidates
  }
}

TEST_F(SearchSpaceTest, MutationsAreValidAndDifferent) {
  SearchSpace search(space_, context());
  std::mt19937_64 rng(11);
  int mutated = 0, same_tile = 0;
  for (int i = 0; i < 2000; ++i) {
    MicroKernel parent = *search.sample(rng);
    std::optional<MicroKernel> child = search.mutate(parent, rng);
    if (!child) continue;
    ++mutated;
    std::string why;
    ASSERT_TRUE(search.is_valid(*child, &why)) << child->key() << ": " << why;
    ASSERT_FALSE(*child == parent);
    // How many tunables changed: one (a step) or two (a factor moved along a chain).
    int changed = 0;
    for (const auto& [name, value] : child->params) changed += parent.get(name) != value;
    EXPECT_TRUE(changed == 1 || changed == 2) << parent.key() << " -> " << child->key();
    if (changed == 2) {
      EXPECT_EQ(space_.extent(*child, "BM") * space_.extent(*child, "BN"),
                space_.extent(parent, "BM") * space_.extent(parent, "BN"));
      ++same_tile;
    }
  }
  EXPECT_GT(mutated, 1900);
  EXPECT_GT(same_tile, 100);  // chain moves happen
}

TEST_F(SearchSpaceTest, MutateRepairsTowardValidity) {
  // From a kernel off the lists, a step lands on a listed neighbour.
  SearchSpace search(space_, context());
  std::mt19937_64 rng(3);
  MicroKernel off = valid_kernel();
  off.params["BK"] = 12;
  std::optional<MicroKernel> child = search.mutate(off, rng);
  ASSERT_TRUE(child.has_value());
  EXPECT_TRUE(search.is_valid(*child));
}

TEST_F(SearchSpaceTest, MutateGivesUpWhenNothingIsValid) {
  largest_.M = 1;  // BM = 1 forces WARPS_M = THREADS_M = TM = 1, so THREADS_N = 32: impossible
  SearchSpace search(space_, context());
  std::mt19937_64 rng(5);
  EXPECT_EQ(search.mutate(valid_kernel(), rng), std::nullopt);
  EXPECT_EQ(search.sample(rng), std::nullopt);
  EXPECT_TRUE(search.enumerate().candidates.empty());
}

TEST_F(SearchSpaceTest, SameSeedSameSequence) {
  SearchLimits rejection;
  rejection.enumerate_for_sampling = 0;
  for (SearchLimits limits : {SearchLimits{}, rejection}) {
    SearchSpace search(space_, context(), limits);
    auto run = [&](uint64_t seed) {
      std::mt19937_64 rng(seed);
      std::vector<MicroKernel> out;
      for (int i = 0; i < 50; ++i) {
        out.push_back(*search.sample(rng));
        std::optional<MicroKernel> child = search.mutate(out.back(), rng);
        if (child) out.push_back(*child);
      }
      return out;
    };
    EXPECT_EQ(run(42), run(42));
    EXPECT_NE(run(42), run(43));
  }
}

// A space of 12 combinations of which 9 are valid, small enough to count every draw.
TEST(SearchSpaceUniformity, SampleIsRoughlyUniform) {
  TemplateSpace s;
  s.tmpl = "tiny";
  s.tunables = {{"A", {1, 2, 3, 4}, 1, ""}, {"B", {1, 2, 3}, 1, ""}};
  s.constraints = {
      {"A + B != 5",
       [](const MicroKernel& mk, const SpaceContext&) { return mk.get("A") + mk.get("B") != 5; },
       {"A", "B"}}};
  GpuSpec gpu;
  OpSpec op;
  SpaceContext context{gpu, op, GemmShape{}};
  SearchLimits rejection;
  rejection.enumerate_for_sampling = 0;
  for (SearchLimits limits : {SearchLimits{}, rejection}) {
    SearchSpace search(s, context, limits);
    std::mt19937_64 rng(2024);
    std::map<MicroKernel, int> counts;
    const int draws = 18000;
    for (int i = 0; i < draws; ++i) ++counts[*search.sample(rng)];
    ASSERT_EQ(counts.size(), 9u);
    double expected = draws / 9.0, chi2 = 0;
    for (const auto& [mk, n] : counts) chi2 += (n - expected) * (n - expected) / expected;
    EXPECT_LT(chi2, 26.1);  // chi-square, 8 degrees of freedom, p = 0.001
  }
}

TEST(UniformIndex, CoversTheRangeAndNothingElse) {
  std::mt19937_64 rng(1);
  std::vector<int> seen(7, 0);
  for (int i = 0; i < 7000; ++i) {
    uint64_t x = uniform_index(rng, 7);
    ASSERT_LT(x, 7u);
    ++seen[x];
  }
  for (int n : seen) EXPECT_GT(n, 800);
  EXPECT_EQ(uniform_index(rng, 1), 0u);
}

TEST(FitsRegisters, RejectsSpillsAndTooManyRegisters) {
  GpuSpec gpu;
  gpu.max_regs_per_thread = 255;
  CompileResult r;
  r.ok = true;
  r.binaries = {{"sm_80", "", {{"gemm", 128, 0, 0, 8192, 0}}},
                {"sm_90", "", {{"gemm", 168, 0, 0, 8192, 0}}}};
  std::string why;
  EXPECT_TRUE(fits_registers(r, gpu, &why));
  r.binaries[1].resources[0].spill_stores = 24;
  r.binaries[1].resources[0].spill_loads = 32;
  EXPECT_FALSE(fits_registers(r, gpu, &why));
  EXPECT_EQ(why, "gemm on sm_90 spills registers (24 bytes stored, 32 loaded)");
  r.binaries[1].resources[0] = {"gemm", 168, 0, 0, 8192, 0};
  gpu.max_regs_per_thread = 128;
  EXPECT_FALSE(fits_registers(r, gpu, &why));
  EXPECT_EQ(why, "gemm on sm_90 uses 168 registers per thread, more than the GPU's 128");
  r.ok = false;
  EXPECT_FALSE(fits_registers(r, gpu, &why));
  EXPECT_EQ(why, "the compile failed");
}

}  // namespace
}  // namespace dietcode

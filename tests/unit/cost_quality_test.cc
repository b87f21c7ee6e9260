// Cost-model quality metrics against hand-computed values.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "cost/quality.h"

namespace dietcode {
namespace {

TEST(CostQuality, AverageRanksShareTies) {
  EXPECT_EQ(average_ranks({30, 10, 20}), (std::vector<double>{3, 1, 2}));
  EXPECT_EQ(average_ranks({5, 1, 5, 5}), (std::vector<double>{3, 1, 3, 3}));  // ranks 2,3,4
  EXPECT_EQ(average_ranks({2, 2, 1, 1}), (std::vector<double>{3.5, 3.5, 1.5, 1.5}));
  EXPECT_TRUE(average_ranks({}).empty());
}

TEST(CostQuality, SpearmanOfKnownRankings) {
  EXPECT_DOUBLE_EQ(spearman({1, 2, 3, 4}, {10, 20, 30, 40}), 1.0);
  EXPECT_DOUBLE_EQ(spearman({1, 2, 3, 4}, {40, 30, 20, 10}), -1.0);
  // Monotone but non-linear is still perfect rank agreement.
  EXPECT_DOUBLE_EQ(spearman({1, 2, 3, 4, 5}, {1, 4, 9, 16, 1000}), 1.0);
  // One swap of neighbours in 5: 1 - 6 * 2 / (5 * 24) = 0.9.
  EXPECT_NEAR(spearman({1, 2, 3, 4, 5}, {1, 2, 3, 5, 4}), 0.9, 1e-12);
}

TEST(CostQuality, SpearmanWithTies) {
  // Ranks a = (1, 2.5, 2.5, 4), b = (1, 2, 3, 4): deviations (-1.5, 0, 0, 1.5) and
  // (-1.5, -0.5, 0.5, 1.5); cov 4.5, var_a 4.5, var_b 5: rho = 4.5 / sqrt(22.5).
  EXPECT_NEAR(spearman({1, 2, 2, 3}, {1, 2, 3, 4}), 4.5 / std::sqrt(22.5), 1e-12);
}

TEST(CostQuality, SpearmanUndefinedCases) {
  EXPECT_TRUE(std::isnan(spearman({1}, {2})));
  EXPECT_TRUE(std::isnan(spearman({1, 1, 1}, {1, 2, 3})));
  try {
    spearman({1, 2}, {1});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "spearman: 2 values against 1");
  }
}

TEST(CostQuality, RegretOfPickingByPrediction) {
  std::vector<QualityRecord> records = {
      // T=1: the model picks b (predicted 1.0), measured 12 against the best 10: regret 0.2.
      {"T=1", "a", 2.0, 10.0, 1.0},
      {"T=1", "b", 1.0, 12.0, 1.0},
      {"T=1", "c", 3.0, 15.0, 1.0},
      // T=2: right pick, regret 0, perfect ranks.
      {"T=2", "a", 1.0, 20.0, 3.0},
      {"T=2", "b", 2.0, 21.0, 3.0},
      {"T=2", "c", 3.0, 30.0, 3.0},
      // T=3: a and b tie for the predicted best: expected pick (100 + 103) / 2, regret 0.015.
      {"T=3", "a", 5.0, 100.0, 4.0},
      {"T=3", "b", 5.0, 103.0, 4.0},
      {"T=3", "c", 9.0, 200.0, 4.0},
  };
  QualitySummary s = evaluate_quality(records, 0.05);
  ASSERT_EQ(s.instances, 3);
  ASSERT_EQ(s.per_instance.size(), 3u);
  EXPECT_EQ(s.per_instance[0].instance, "T=1");
  EXPECT_NEAR(s.per_instance[0].regret, 0.2, 1e-12);
  EXPECT_NEAR(s.per_instance[0].spearman, 0.5, 1e-12);  // ranks (2,1,3) vs (1,2,3)
  EXPECT_EQ(s.per_instance[1].regret, 0.0);
  EXPECT_DOUBLE_EQ(s.per_instance[1].spearman, 1.0);
  EXPECT_NEAR(s.per_instance[2].regret, 0.015, 1e-12);
  // Which kernel the model picked and which was the best: b over a at T=1, a at T=2, the first
  // of the tie at T=3.
  EXPECT_EQ(s.per_instance[0].picked, "b");
  EXPECT_EQ(s.per_instance[0].best, "a");
  EXPECT_EQ(s.per_instance[1].picked, "a");
  EXPECT_EQ(s.per_instance[1].best, "a");
  EXPECT_EQ(s.per_instance[2].picked, "a");
  EXPECT_EQ(s.ranked_instances, 3);
  // T=3: ranks (1.5, 1.5, 3) vs (1, 2, 3): cov 1.5, var 1.5 and 2: rho = 1.5 / sqrt(3).
  EXPECT_NEAR(s.mean_spearman, (0.5 + 1.0 + 1.5 / std::sqrt(3.0)) / 3, 1e-12);
  EXPECT_NEAR(s.fraction_within, 2.0 / 3.0, 1e-12);
  EXPECT_NEAR(s.weighted_mean_regret, (1 * 0.2 + 3 * 0.0 + 4 * 0.015) / 8, 1e-12);
  EXPECT_NEAR(s.max_regret, 0.2, 1e-12);
}

TEST(CostQuality, SingleCandidateHasNoRankButNoRegret) {
  QualitySummary s = evaluate_quality({{"T=7", "a", 1.0, 5.0, 1.0}});
  EXPECT_EQ(s.instances, 1);
  EXPECT_EQ(s.ranked_instances, 0);
  EXPECT_TRUE(std::isnan(s.mean_spearman));
  EXPECT_EQ(s.fraction_within, 1.0);
  EXPECT_TRUE(std::isnan(s.per_instance[0].spearman));
}

TEST(CostQuality, FoldsKeepAKernelTogether) {
  std::vector<std::string> rows;
  for (int kernel = 0; kernel < 10; ++kernel)
    for (int shape = 0; shape < 4; ++shape) rows.push_back("mk" + std::to_string(kernel));
  std::vector<int> fold = folds_by_group(rows, 3, 123);
  ASSERT_EQ(fold.size(), rows.size());
  std::map<std::string, std::set<int>> folds_of_kernel;
  std::map<int, std::set<std::string>> kernels_in_fold;
  for (size_t i = 0; i < rows.size(); ++i) {
    folds_of_kernel[rows[i]].insert(fold[i]);
    kernels_in_fold[fold[i]].insert(rows[i]);
  }
  for (const auto& [kernel, folds] : folds_of_kernel) EXPECT_EQ(folds.size(), 1u) << kernel;
  ASSERT_EQ(kernels_in_fold.size(), 3u);
  EXPECT_EQ(kernels_in_fold[0].size(), 4u);  // 10 kernels dealt round-robin: 4, 3, 3
  EXPECT_EQ(kernels_in_fold[1].size(), 3u);
  EXPECT_EQ(kernels_in_fold[2].size(), 3u);
  EXPECT_EQ(folds_by_group(rows, 3, 123), fold);  // same seed, same split
  EXPECT_NE(folds_by_group(rows, 3, 124), fold);
  EXPECT_THROW(folds_by_group(rows, 0, 1), std::invalid_argument);
}

}  // namespace
}  // namespace dietcode

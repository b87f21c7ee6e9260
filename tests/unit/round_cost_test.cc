#include "search/round_cost.h"

#include <gtest/gtest.h>

namespace dietcode {
namespace {

TEST(RoundCostFit, NothingKnownPricesNothing) {
  RoundCostFit fit;
  EXPECT_FALSE(fit.known());
  EXPECT_EQ(fit.seconds(8, 1e6), 0.0);
}

// Rounds that cost 0.5 s a kernel plus 4 s per second of the kernels' own time (warm-up and
// three timed runs of every pair) give both terms back.
TEST(RoundCostFit, SeparatesTheKernelsFixedCostFromTheirTiming) {
  RoundCostFit fit;
  const struct {
    int kernels;
    double timed_us;
  } rounds[] = {{8, 2e6}, {8, 6e6}, {4, 1e6}, {6, 5e6}};
  for (const auto& r : rounds) fit.add(r.kernels, r.timed_us, 0.5 * r.kernels + 4e-6 * r.timed_us);
  EXPECT_NEAR(fit.per_kernel_seconds(), 0.5, 1e-9);
  EXPECT_NEAR(fit.per_timed_us_seconds(), 4e-6, 1e-15);
  // Five slow kernels (an exploring round's) cost more than five at the rounds' average.
  EXPECT_NEAR(fit.seconds(5, 10e6), 42.5, 1e-6);
  EXPECT_GT(fit.seconds(5, 10e6), 5 * (0.5 + 4e-6 * 14e6 / 26));
}

// Rounds that cannot tell the terms apart (every round the same kernels' time per kernel) fall
// back to one term; so does a fit that would make a cost negative.
TEST(RoundCostFit, FallsBackToOneTermWhereTheRoundsCannotTellTwoApart) {
  RoundCostFit one;
  one.add(8, 4e6, 10.0);
  EXPECT_NEAR(one.seconds(8, 4e6), 10.0, 1e-9);
  RoundCostFit alike;
  alike.add(8, 4e6, 10.0);
  alike.add(4, 2e6, 5.0);
  EXPECT_NEAR(alike.seconds(2, 1e6), 2.5, 1e-9);
  RoundCostFit negative;  // more timing and less wall time: b would come out negative
  negative.add(8, 1e6, 10.0);
  negative.add(8, 3e6, 9.0);
  negative.add(4, 1e6, 5.5);
  EXPECT_GE(negative.per_kernel_seconds(), 0.0);
  EXPECT_GE(negative.per_timed_us_seconds(), 0.0);
  EXPECT_GT(negative.seconds(8, 2e6), 0.0);
}

TEST(RoundCostFit, IgnoresRoundsWithoutKernels) {
  RoundCostFit fit;
  fit.add(0, 0, 3.0);
  EXPECT_FALSE(fit.known());
}

}  // namespace
}  // namespace dietcode

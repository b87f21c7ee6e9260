// DriftAnchor (measure/drift_anchor.h): which of the anchor's shapes goes beside a batch, and
// the correction a batch's latencies get from the anchor's time in it.
#include "measure/drift_anchor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace dietcode {
namespace {

WorkerCandidate candidate_on(const std::vector<int64_t>& ms) {
  WorkerCandidate c;
  c.kernel.id = "anchor";
  c.op.name = "qkv";
  for (int64_t m : ms) c.shapes.push_back({1, m, 64, 64});
  c.check_shapes = {0};
  return c;
}

double flops_of(int64_t m) { return GemmShape{1, m, 64, 64}.flops(); }

TEST(DriftAnchor, NothingToPickBeforeAKernelIsAdopted) {
  DriftAnchor anchor;
  EXPECT_FALSE(anchor.adopted());
  EXPECT_FALSE(anchor.pick(1e12));
}

TEST(DriftAnchor, PicksTheLargestShapeWithinItsShareOfTheBatch) {
  DriftAnchor anchor(0.05);
  anchor.adopt(candidate_on({16, 64, 256}), {10, 40, 160});
  ASSERT_TRUE(anchor.adopted());
  // A batch of 20 x 256 rows: 5% is 256 rows.
  EXPECT_EQ(anchor.pick(20 * flops_of(256)), 2u);
  // Just under it: the next smaller shape.
  EXPECT_EQ(anchor.pick(20 * flops_of(256) - 1), 1u);
  EXPECT_EQ(anchor.pick(20 * flops_of(16)), 0u);
  EXPECT_FALSE(anchor.pick(20 * flops_of(16) - 1));

  const WorkerCandidate one = anchor.candidate(1);
  ASSERT_EQ(one.shapes.size(), 1u);
  EXPECT_EQ(one.shapes[0].M, 64);
  EXPECT_EQ(one.kernel.id, "anchor");
  EXPECT_TRUE(one.check_shapes.empty());  // timed, never checked again
}

TEST(DriftAnchor, OnlyTheFirstKernelAndItsMeasuredShapesCount) {
  DriftAnchor anchor(0.05);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  anchor.adopt(candidate_on({16, 64, 256}), {10, nan, 160});
  anchor.adopt(candidate_on({32}), {20});  // too late
  // The shapes kept: M=16 and M=256 (M=64 has no time to compare with).
  EXPECT_EQ(anchor.candidate(0).shapes[0].M, 16);
  EXPECT_EQ(anchor.candidate(1).shapes[0].M, 256);
  EXPECT_EQ(anchor.pick(20 * flops_of(255)), 0u);

  DriftAnchor none;
  none.adopt(candidate_on({16}), {nan});
  EXPECT_FALSE(none.adopted());
}

TEST(DriftAnchor, TheCorrectionIsTheTypicalTimeOverThisBatchs) {
  DriftAnchor anchor(0.05);
  anchor.adopt(candidate_on({16, 64}), {100, 400});
  // The machine ran 8% slow in this batch: its latencies are brought back by 100 / 108.
  EXPECT_DOUBLE_EQ(anchor.observe(0, 108), 100.0 / 108);  // median of {100}
  EXPECT_DOUBLE_EQ(anchor.observe(0, 100), 104.0 / 100);  // median of {100, 108}
  EXPECT_DOUBLE_EQ(anchor.observe(0, 95), 100.0 / 95);    // median of {100, 100, 108}
  EXPECT_DOUBLE_EQ(anchor.observe(0, 100), 100.0 / 100);  // median of {95, 100, 100, 108}
  // Each shape keeps its own history.
  EXPECT_DOUBLE_EQ(anchor.observe(1, 400), 1.0);
  // 25% slow, 20% fast: the anchor's own hiccup, not the machine's drift. No correction, and
  // the time is not kept (the next correction is against 400 still).
  EXPECT_DOUBLE_EQ(anchor.observe(1, 500), 1.0);
  EXPECT_DOUBLE_EQ(anchor.observe(1, 320), 1.0);
  EXPECT_DOUBLE_EQ(anchor.observe(1, 380), 400.0 / 380);  // median of {400, 400}
  // A time that is no time corrects nothing.
  EXPECT_DOUBLE_EQ(anchor.observe(0, std::numeric_limits<double>::quiet_NaN()), 1.0);
  EXPECT_DOUBLE_EQ(anchor.observe(7, 100), 1.0);
}

}  // namespace
}  // namespace dietcode

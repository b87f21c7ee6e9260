// Cluster shards (search/shard.h): for many workload shapes and shard counts, shards 1..n
// together cover every (op, instance) exactly once, the split is by whole ops when there are
// enough, and --shard's text is checked with exact messages.
#include "search/shard.h"

#include <gtest/gtest.h>

#include <map>
#include <utility>

#include "common/error.h"

namespace dietcode {
namespace {

// How many shards cover each (op, instance).
std::map<std::pair<size_t, size_t>, int> coverage(const std::vector<size_t>& counts, int n) {
  std::map<std::pair<size_t, size_t>, int> seen;
  for (int i = 1; i <= n; ++i)
    for (const ShardPiece& p : plan_shard(counts, {i, n})) {
      EXPECT_LT(p.begin, p.end);
      EXPECT_LE(p.end, counts.at(p.op));
      for (size_t k = p.begin; k < p.end; ++k) ++seen[{p.op, k}];
    }
  return seen;
}

TEST(Shard, EveryInstanceIsCoveredExactlyOnce) {
  const std::vector<std::vector<size_t>> workloads = {
      {16}, {16, 16}, {1}, {3, 1, 7}, {128, 64, 64, 32, 1}, {5, 5, 5, 5, 5, 5, 5, 5, 5}};
  for (const auto& counts : workloads) {
    for (int n = 1; n <= 20; ++n) {
      auto seen = coverage(counts, n);
      size_t total = 0;
      for (size_t c : counts) total += c;
      EXPECT_EQ(seen.size(), total) << "n=" << n;
      for (const auto& [key, times] : seen)
        EXPECT_EQ(times, 1) << "op " << key.first << " instance " << key.second << " n=" << n;
    }
  }
}

TEST(Shard, EnoughOpsAreDealtWholeRoundRobin) {
  const std::vector<size_t> counts = {16, 8, 4, 2, 1};
  EXPECT_EQ(plan_shard(counts, {1, 2}),
            (std::vector<ShardPiece>{{0, 0, 16}, {2, 0, 4}, {4, 0, 1}}));
  EXPECT_EQ(plan_shard(counts, {2, 2}), (std::vector<ShardPiece>{{1, 0, 8}, {3, 0, 2}}));
  EXPECT_EQ(plan_shard(counts, {5, 5}), (std::vector<ShardPiece>{{4, 0, 1}}));
}

TEST(Shard, FewOpsAreCutIntoContiguousRanges) {
  // 2 ops over 5 shards: op 0 gets shards 1-3, op 1 shards 4-5.
  const std::vector<size_t> counts = {16, 10};
  EXPECT_EQ(plan_shard(counts, {1, 5}), (std::vector<ShardPiece>{{0, 0, 5}}));
  EXPECT_EQ(plan_shard(counts, {2, 5}), (std::vector<ShardPiece>{{0, 5, 10}}));
  EXPECT_EQ(plan_shard(counts, {3, 5}), (std::vector<ShardPiece>{{0, 10, 16}}));
  EXPECT_EQ(plan_shard(counts, {4, 5}), (std::vector<ShardPiece>{{1, 0, 5}}));
  EXPECT_EQ(plan_shard(counts, {5, 5}), (std::vector<ShardPiece>{{1, 5, 10}}));
  // One instance, three shards: two have nothing to do.
  EXPECT_EQ(plan_shard({1}, {1, 3}), (std::vector<ShardPiece>{}));
  EXPECT_EQ(plan_shard({1}, {3, 3}), (std::vector<ShardPiece>{{0, 0, 1}}));
}

TEST(Shard, ParsesIOverN) {
  ShardSpec s = parse_shard("3/8");
  EXPECT_EQ(s.index, 3);
  EXPECT_EQ(s.count, 8);
  s = parse_shard("1/1");
  EXPECT_EQ(s.index, 1);
  EXPECT_EQ(s.count, 1);
}

TEST(Shard, RejectsBadTextWithItsMessage) {
  for (const std::string text : {"0/2", "3/2", "1/0", "2", "/2", "1/", "a/b", "-1/2", "1/2/3",
                                 " 1/2", "1/+2", "1/9999999999", ""}) {
    try {
      parse_shard(text);
      ADD_FAILURE() << "accepted \"" << text << "\"";
    } catch (const UserError& e) {
      EXPECT_EQ(std::string(e.what()),
                "--shard: expected I/N with 1 <= I <= N, such as 2/8, got \"" + text + "\"");
    }
  }
}

}  // namespace
}  // namespace dietcode

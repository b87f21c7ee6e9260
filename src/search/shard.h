// Splitting `dietcode tune` over a cluster: shard i of n tunes its share of the workload and
// writes its own log; `dietcode merge` combines the logs.
//
// The split is a pure function of (the ops to tune, their instance counts, i, n), so every
// shard computes the same plan without talking to the others, and shards 1..n together cover
// every (op, instance) exactly once:
//   - at least n ops: whole ops, dealt round-robin (op k goes to shard k mod n + 1). Each op
//     keeps one joint search over all its instances, which is what the method wants (kernels
//     shared across shapes).
//   - fewer ops than shards: every op gets n / ops shards (the first n % ops ops one more),
//     and its instances are cut into that many contiguous ranges of near-equal size; each
//     shard runs its own search over its range. An op with fewer instances than shards leaves
//     some shards without work for it.
// Contiguous ranges keep neighbouring shapes together, so each range's search still shares
// kernels among similar shapes.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace dietcode {

struct ShardSpec {
  int index = 1;  // 1-based
  int count = 1;
};

// Parses "I/N" with 1 <= I <= N. Throws UserError("--shard: expected I/N with 1 <= I <= N,
// such as 2/8, got \"TEXT\"").
ShardSpec parse_shard(const std::string& text);

// One piece of a shard's work: instances [begin, end) of op number `op`.
struct ShardPiece {
  size_t op = 0;
  size_t begin = 0, end = 0;
  bool operator==(const ShardPiece& o) const {
    return op == o.op && begin == o.begin && end == o.end;
  }
};

// The pieces shard `shard` tunes, given each op's instance count (in tuning order). Empty
// ranges are left out, so a shard may have no work.
std::vector<ShardPiece> plan_shard(const std::vector<size_t>& instance_counts, ShardSpec shard);

}  // namespace dietcode

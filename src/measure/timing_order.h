// The order in which a GPU timing request runs its (candidate, shape) pairs within one round:
// shape by shape, every candidate in turn, so that no kernel follows itself while another is
// left to run.
//
// Why: a kernel launched right after itself finds its code still in the SMs' instruction
// caches, which the L2 flush between timed launches does not touch. In a model, other kernels
// run between two launches of one layer's kernel, and in `bench` the vendor library's does.
// Run 6 on an H200 (docs/results/h200, section 9) found bench timing the same wgmma kernels
// 0.55-0.75 us longer than the tune, which then ran each candidate's shapes back to back
// (split-K, two kernels a launch: 1.17 us), while the flush method made no difference
// (0.99-1.02x): a per-launch cost that grows with the code, as a cold instruction fetch does.
#pragma once

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

namespace dietcode {

// shape_counts[i]: how many shapes candidate i has. Returns every (candidate, shape) pair once:
// the first shape of every candidate, then the second of every candidate that has one, and
// so on. Consecutive pairs share a candidate only when it is the last with shapes left.
inline std::vector<std::pair<size_t, size_t>> interleaved_timing_order(
    const std::vector<size_t>& shape_counts) {
  std::vector<std::pair<size_t, size_t>> order;
  size_t most = 0;
  for (size_t count : shape_counts) most = std::max(most, count);
  for (size_t s = 0; s < most; ++s)
    for (size_t i = 0; i < shape_counts.size(); ++i)
      if (s < shape_counts[i]) order.emplace_back(i, s);
  return order;
}

}  // namespace dietcode

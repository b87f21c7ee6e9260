// Shape facts the tensor-core spaces bound their tiles with: the value of a constant dimension,
// and DietCode's "a tile is at most 1.1x the largest extent" rule.
#pragma once

#include <cstdint>

#include "workload/workload.h"

namespace dietcode {

// The value of a dimension that is a constant, 0 when it depends on shape variables or the op
// has no such dimension.
int64_t constant_dimension(const OpSpec& op, const char* name);

// 1.1 x the largest extent rounded up to a power of two, and never below `floor` (the smallest
// tile the template has: a 16-row mma tile still serves M = 1).
int64_t tile_upper_bound(int64_t largest_extent, int64_t floor);

int64_t next_power_of_two(int64_t x);  // >= x, at least 1

}  // namespace dietcode

#include "space/tile_bounds.h"

#include <algorithm>
#include <cmath>

namespace dietcode {

int64_t constant_dimension(const OpSpec& op, const char* name) {
  auto it = op.dims.find(name);
  if (it == op.dims.end() || it->second.terms().empty()) return 0;
  int64_t value = 0;
  for (const auto& term : it->second.terms()) {
    if (!term.vars.empty()) return 0;
    value += term.coeff;
  }
  return value;
}

int64_t next_power_of_two(int64_t x) {
  int64_t p = 1;
  while (p < x) p *= 2;
  return p;
}

int64_t tile_upper_bound(int64_t largest_extent, int64_t floor) {
  const auto bound = int64_t(std::ceil(1.1 * double(std::max<int64_t>(largest_extent, 1))));
  return std::max(next_power_of_two(bound), floor);
}

}  // namespace dietcode

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

#include "codegen/generated_kernel.h"
#include "common/error.h"

namespace dietcode {

namespace {

// CUDA's grid limits: x up to 2^31 - 1, y and z up to 65535. Kernels loop over M tiles, so
// only y may be clamped; the other two must fit.
constexpr int64_t kMaxGridX = 2147483647;
constexpr int64_t kMaxGridYZ = 65535;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

void check_shape(const GemmShape& s) {
  if (s.batch < 1 || s.M < 1 || s.N < 1 || s.K < 1)
    throw UserError(fmt::format("shape batch={} M={} N={} K={}: every extent must be >= 1", s.batch,
                                s.M, s.N, s.K));
}

}  // namespace

std::string LaunchPlan::host_key() const {
  return entry + "\nm_tiles_per_block " + std::to_string(m_tiles_per_block);
}

int64_t LaunchPlan::workspace_bytes(const GemmShape& shape) const {
  if (split_k <= 1) return 0;
  return shape.batch * int64_t(split_k) * shape.M * shape.N * int64_t(sizeof(float));
}

void LaunchPlan::grid(const GemmShape& shape, unsigned dims[3]) const {
  check_shape(shape);
  const int64_t x = ceil_div(shape.N, tile_n);
  const int64_t y =
      std::min(ceil_div(ceil_div(shape.M, tile_m), std::max(1, m_tiles_per_block)), kMaxGridYZ);
  const int64_t z = shape.batch * split_k;
  if (x > kMaxGridX || z > kMaxGridYZ)
    throw UserError(
        fmt::format("shape batch={} M={} N={} K={} needs a grid of {} x {} blocks, "
                    "more than one launch allows",
                    shape.batch, shape.M, shape.N, shape.K, x, z));
  dims[0] = unsigned(x), dims[1] = unsigned(y), dims[2] = unsigned(z);
}

void LaunchPlan::reduce_grid(const GemmShape& shape, unsigned dims[3]) const {
  check_shape(shape);
  const int64_t x = ceil_div(shape.batch * shape.M * shape.N, 4 * int64_t(reduce_threads));
  if (x > kMaxGridX)
    throw UserError(fmt::format("shape batch={} M={} N={}: too many outputs for one reduction",
                                shape.batch, shape.M, shape.N));
  dims[0] = unsigned(x), dims[1] = 1, dims[2] = 1;
}

}  // namespace dietcode

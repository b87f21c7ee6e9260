// What the tensor-core spaces (dense_tc, dense_wgmma; dense_tc_space.h) have in common: the
// SPLITK tunable and its rule, the limits every block geometry is checked against, and which
// ops they serve. Each space lists these among its own rules, in its own order, because the
// order decides which rule a rejected candidate is reported under.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "space/template_space.h"

namespace dietcode {

// SPLITK in 1..16 (the templates' #error range), summed by the deterministic reduction entry.
Tunable split_k_tunable();

// "SPLITK == 1 or largest K / SPLITK >= BK": every slice holds a full K tile.
Constraint split_k_slice_constraint();

// float16 and bfloat16 GEMMs whose operands are both K-contiguous, the layout both templates
// read: dense layers (X[M,K], W[N,K]: weight_layout NK) and batch_matmul with A stored [M,K] and B stored [N,K]
// (transpose_a false, transpose_b true: attention scores Q.K^T), with their batch strides.
// dense_tc adds B stored [K,N] (dense_tc_space.cc).
bool supports_16bit_k_contiguous(const OpSpec& op);

// Threads per block and shared memory per block of a geometry (DenseTcGeometry,
// DenseWgmmaGeometry) against the GPU's limits; `uses` are the tunables the geometry reads.
template <typename Geometry>
Constraint threads_per_block_constraint(std::string description, std::vector<std::string> uses) {
  return {std::move(description),
          [](const MicroKernel& mk, const SpaceContext& c) {
            return Geometry::of(mk).threads <= c.gpu.max_threads_per_block;
          },
          std::move(uses)};
}

template <typename Geometry>
Constraint smem_per_block_constraint(std::vector<std::string> uses) {
  return {"shared memory per block <= opt-in shared memory per block",
          [](const MicroKernel& mk, const SpaceContext& c) {
            return Geometry::of(mk).smem_bytes <= c.gpu.smem_per_block_optin;
          },
          std::move(uses)};
}

// The launch resources of a geometry: its threads and dynamic shared memory.
template <typename Geometry>
LaunchResources geometry_resources(const MicroKernel& mk) {
  const Geometry g = Geometry::of(mk);
  return LaunchResources{g.threads, g.smem_bytes};
}

}  // namespace dietcode

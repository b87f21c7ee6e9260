#include "space/x86_space_rules.h"

#include <algorithm>

namespace dietcode {

std::vector<Constraint> x86_blis_core_constraints(int vector_floats, int registers,
                                                  const std::string& packed_vectors) {
  const int w = vector_floats, r = registers;
  return {
      {"MR x NR/W accumulators + NR/W " + packed_vectors +
           " + 1 broadcast fit the vector registers",
       [w, r](const MicroKernel& mk, const SpaceContext&) {
         const int nv = mk.get("NR") / w;
         return mk.get("MR") * nv + nv + 1 <= r;
       },
       {"MR", "NR"}},
      {"MC is a multiple of MR",
       [](const MicroKernel& mk, const SpaceContext&) { return mk.get("MC") % mk.get("MR") == 0; },
       {"MR", "MC"}},
      {"NC is a multiple of NR",
       [](const MicroKernel& mk, const SpaceContext&) { return mk.get("NC") % mk.get("NR") == 0; },
       {"NR", "NC"}},
  };
}

Tunable x86_workers_tunable() {
  return {"WORKERS", {0, 1}, 0, "workers: 0 every one of the runtime's, 1 the caller alone"};
}

Constraint x86_one_worker_has_no_thread_grid() {
  return {"one worker (WORKERS = 1) has no thread grid (THREADS_M = 0)",
          [](const MicroKernel& mk, const SpaceContext&) {
            return mk.get("WORKERS") != 1 || mk.get("THREADS_M") == 0;
          },
          {"THREADS_M", "WORKERS"}};
}

Tunable x86_shared_b_tunable(const std::string& name, const std::string& operand) {
  return {name, {0, 1}, 0,
          "1: " + operand + " packed once for all workers, blocks handed out (0: bands)"};
}

std::vector<Constraint> x86_shared_b_constraints(const std::string& name,
                                                 const std::string& operand) {
  return {{operand + " shared by the workers has no thread bands (THREADS_M = 0)",
           [name](const MicroKernel& mk, const SpaceContext&) {
             return mk.get(name) == 0 || mk.get("THREADS_M") == 0;
           },
           {name, "THREADS_M"}},
          {"one worker (WORKERS = 1) shares nothing (" + name + " = 0)",
           [name](const MicroKernel& mk, const SpaceContext&) {
             return mk.get("WORKERS") != 1 || mk.get(name) == 0;
           },
           {name, "WORKERS"}}};
}

int x86_kernel_workers(const MicroKernel& mk, int threads) {
  threads = std::max(1, threads);
  const int workers = mk.get_or("WORKERS", 0);
  return workers > 0 && workers < threads ? workers : threads;
}

bool x86_b_rows_are_k_contiguous(const OpSpec& op) {
  if (op.dtype != DType::kFloat32) return false;
  return op.b_k_contiguous() &&
         (op.kind == OpKind::kDense || (op.kind == OpKind::kBatchMatmul && !op.transpose_a));
}

}  // namespace dietcode

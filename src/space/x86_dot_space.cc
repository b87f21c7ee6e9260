// The CPU's dot-product templates (templates/x86/dot_x86.h, run_dot): B read in place as
// K-contiguous rows, vectors along K, MR x NR vector accumulators of partial dot products.
// They compute the ops whose A is [M][K] and B is [N][K] — dense and batch_matmul with
// transpose_b — and beat the BLIS form (x86_gemm_space.cc) where M is small, because they
// never repack W. What bounds them is the register file: MR x NR accumulators, MR vectors of A
// and one of B.
#include "space/templates.h"
#include "space/x86_space_rules.h"

namespace dietcode {

namespace {

TemplateSpace make_x86_dot_space(const char* tmpl, int vector_floats, int registers) {
  TemplateSpace s;
  s.tmpl = tmpl;
  s.target = Target::kCpu;
  s.tunables = {
      {"MR", {1, 2, 3, 4, 5, 6, 8}, 4, "rows of A in the register tile"},
      {"NR", {1, 2, 3, 4, 5, 6, 8, 12}, vector_floats == 8 ? 2 : 6,
       "rows of B (columns of C) in the register tile"},
      {"KC", {256, 512, 768, 1024, 2048, 4096}, 768, "K block between partial sums in C"},
      {"THREADS_M", {0, 1, 2, 4}, 1, "row bands of the thread grid (0: chosen per shape)"},
      x86_workers_tunable(),
      {"UNROLL", {1, 2, 4}, 2, "K steps of a vector each per loop iteration"},
  };
  s.constraints = {
      {"MR x NR accumulators + MR vectors of A + 1 of B fit the vector registers",
       [registers](const MicroKernel& mk, const SpaceContext&) {
         return mk.get("MR") * mk.get("NR") + mk.get("MR") + 1 <= registers;
       },
       {"MR", "NR"}},
      x86_one_worker_has_no_thread_grid(),
  };
  // B must be K-contiguous ([N][K]) to be read in place along K.
  s.supports = x86_b_rows_are_k_contiguous;
  return s;
}

}  // namespace

const TemplateSpace& x86_avx2_dot_f32_space() {
  static const TemplateSpace space = make_x86_dot_space("x86_avx2_dot_f32", 8, 16);
  return space;
}

const TemplateSpace& x86_avx512_dot_f32_space() {
  static const TemplateSpace space = make_x86_dot_space("x86_avx512_dot_f32", 16, 32);
  return space;
}

}  // namespace dietcode

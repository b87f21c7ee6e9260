// The search space every fp32 SIMT GEMM template shares (templates/gemm_core_f32.cuh):
// dense_f32, batch_matmul_f32 and conv2d_f32 have the same tunables, tile geometry, factor
// chains and GPU limits. A variant says what differs: which ops the template computes, which
// static row pitches its vector loads walk (VEC must divide them), and how many registers its
// A loader keeps per row it loads (conv2d's gather keeps an address and a window origin).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "space/template_space.h"
#include "space/tile_bounds.h"  // constant_dimension

namespace dietcode {

struct SimtGemmF32Variant {
  std::string tmpl;                             // "batch_matmul_f32": templates/<tmpl>.cu
  std::function<bool(const OpSpec&)> supports;  // kind and dtype (fp32 only)
  // The constraint on VEC from the op's layout: its description, and the row pitches that
  // vector loads walk as constants of the op (0 for a dynamic one, which the kernel checks at
  // run time instead).
  std::string vec_description;
  std::function<std::vector<int64_t>(const OpSpec&)> vector_pitches;
  int registers_per_a_row = 0;  // beyond the dense loader's, per A row a thread loads
  std::vector<Constraint> extra_constraints = {};  // the template's own limits
};

TemplateSpace make_simt_gemm_f32_space(const SimtGemmF32Variant& variant);

}  // namespace dietcode

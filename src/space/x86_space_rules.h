// Rules the x86 template spaces share (x86_gemm_space.cc, x86_dot_space.cc,
// x86_wbcast_space.cc), so a form added beside them states only what is its own.
#pragma once

#include <string>
#include <vector>

#include "space/template_space.h"

namespace dietcode {

// The BLIS core's register tile (templates/x86/gemm_x86.h), in the frame the core computes:
// MR x NR/W accumulators, NR/W vectors of the packed operand (named by `packed_vectors`, as in
// "B vectors") and one broadcast fit the `registers` vector registers of W = `vector_floats`
// lanes; MC is whole MR panels and NC whole NR panels.
std::vector<Constraint> x86_blis_core_constraints(int vector_floats, int registers,
                                                  const std::string& packed_vectors);

// The ops whose A is [M][K] and B is [N][K] in fp32 — dense with W [N,K] and batch_matmul
// with transpose_b alone — which the forms that read B's K-contiguous rows in place compute.
bool x86_b_rows_are_k_contiguous(const OpSpec& op);

}  // namespace dietcode

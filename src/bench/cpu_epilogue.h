// The OpenBLAS baseline's separate epilogue pass (cblas_sgemm has no epilogue): bias, then relu
// or GELU (tanh form, as the pack and the CPU reference compute it), over rows of a row-major
// output, vectorised for the machine it runs on.
#pragma once

#include <cstdint>

#include "workload/workload.h"

namespace dietcode {

// Applies `epilogue` in place to rows [begin, end) of y [rows][n]; `bias` [n] is read only when
// the epilogue has one. One sweep over each row. Cloned for x86-64-v4 and x86-64-v3 (GCC's
// target_clones, picked by cpuid at load), since dietcode itself is built for the baseline ISA.
void cpu_epilogue_rows(float* y, const float* bias, int64_t begin, int64_t end, int64_t n,
                       Epilogue epilogue);

}  // namespace dietcode

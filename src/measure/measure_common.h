// What every Measurer implementation (the GPU's, the CPU's) does alike with a candidate before
// and after the device sees it: the shapes a result is checked on, and the one-line texts of
// compile logs and binaries in its errors.
#pragma once

#include <string>
#include <vector>

#include "codegen/generated_kernel.h"
#include "nvrtc/compiler.h"
#include "workload/workload.h"

namespace dietcode {

// The first non-blank line of a log, or `fallback` when there is none.
std::string first_line(const std::string& text, const char* fallback);

// "sm_80, sm_90" / "x86-64-v3": the archs a compile produced, "none" when it produced nothing.
std::string archs_of(const CompileResult& compiled);

// The first shape, the last, and the first with a partial tile (plan.tile_m / tile_n): where
// indexing bugs show.
std::vector<int> pick_check_shapes(const std::vector<GemmShape>& shapes, const LaunchPlan& plan);

}  // namespace dietcode

// Code generation rules of the tensor-core templates (dense_tc, dense_wgmma), kept apart from
// generate_kernel.cc's shared path: the element type becomes -DDTYPE, static N and K become
// constants, and the plan records the pointer alignment the 16-byte copies need.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "codegen/generated_kernel.h"
#include "space/micro_kernel.h"
#include "workload/workload.h"

namespace dietcode {

// Whether `tmpl` is a tensor-core template whose rules are below.
bool is_tensor_core_template(const std::string& tmpl);

// The DTYPE value the templates take: 1 float16, 2 bfloat16. Throws UserError for other types.
int tensor_core_dtype_code(const OpSpec& op);

// Adds -DDTYPE, -DSTATIC_N / -DSTATIC_K for constant dimensions, sets the plan's alignment
// (16 bytes for the cp.async path; 4 when a static K that is not a multiple of 8 selects the
// scalar loads, for the packed 32-bit stores) and the kernel's arch suffix ("a" for wgmma).
void apply_tensor_core_rules(const OpSpec& op, const std::map<std::string, int>& params,
                             std::vector<std::string>& options, GeneratedKernel& kernel);

}  // namespace dietcode

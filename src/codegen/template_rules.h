// What code generation knows about each template beyond its search space: which facts of the
// op become compile-time constants (static dimensions, operand layouts, conv geometry), when a
// vector width must fall back to scalar loads, and what alignment the kernel's pointers need.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "codegen/generated_kernel.h"

namespace dietcode {

// Adjusts params (the micro-kernel's tunables, defaults filled in), appends the op-derived
// -D options and sets plan.min_alignment_bytes for templates that have rules; a template
// without any is left alone. Throws UserError when the op lacks a dimension the template reads.
// The value of a constant dimension of the op, 0 when it depends on shape variables; a
// dimension the op lacks is a UserError naming the op (a template applied to the wrong op).
int64_t static_dim(const OpSpec& op, const char* name);

void apply_template_rules(const OpSpec& op, const MicroKernel& mk,
                          std::map<std::string, int>& params, std::vector<std::string>& options,
                          LaunchPlan& plan);

}  // namespace dietcode

// The name tables behind to_string(OpKind/DType/Epilogue), in the order the SPEC lists them,
// so the parser can offer the valid spellings when a workload names an unknown one.
#pragma once

#include <utility>
#include <vector>

#include "workload/workload.h"

namespace dietcode {

const std::vector<std::pair<OpKind, const char*>>& op_kind_names();
const std::vector<std::pair<DType, const char*>>& dtype_names();
const std::vector<std::pair<Epilogue, const char*>>& epilogue_names();
const std::vector<std::pair<WeightLayout, const char*>>& weight_layout_names();

}  // namespace dietcode

// C identifiers in a pack's header and code: the typed wrapper of each op (NAME_OP) and the
// names of its parameters. Workload names are free text, so they are made into identifiers
// here, and clashes (two ops with one wrapper name, a shape variable called like a tensor
// argument) are resolved or reported.
#pragma once

#include <string>
#include <vector>

#include "workload/names.h"  // c_identifier
#include "workload/workload.h"

namespace dietcode {

// "bert_dense_qkv". Throws UserError when two ops of the workload get the same name or a name
// that a pack already exports (dietcode_*).
std::string wrapper_name(const Workload& workload, const OpSpec& op);

// The C parameter names of an op's shape variables (parallel to op.vars): the variable's name
// unless it clashes with a tensor argument, "stream", a C keyword or a name the generated code
// uses, in which case "_value" is appended ("B" -> "B_value" for batch_matmul's B).
std::vector<std::string> shape_parameter_names(const OpSpec& op);

// A C pointer type for the op's tensors: "float" for float32, "uint16_t" (the raw bits) for
// float16 and bfloat16.
const char* c_element_type(DType dtype);

}  // namespace dietcode

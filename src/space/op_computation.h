// The words that name what an op computes, as far as choosing a template goes: its element
// type, its kind and, for dense and batch_matmul, how its operands are stored (templates serve some
// layouts and not others). Used where dietcode says that no template computes an op.
#pragma once

#include <string>

#include "workload/workload.h"

namespace dietcode {

// "float16 dense", "float32 dense with W stored [K,N]", "float32 conv2d",
// "bfloat16 batch_matmul with A stored [K,M] (transpose_a) and B stored [N,K] (transpose_b)".
std::string op_computation_text(const OpSpec& op);

}  // namespace dietcode

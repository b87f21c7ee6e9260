// One-line human descriptions of workload parts, shared by every command that prints a
// workload (validate, inspect, build's summary) so they read the same everywhere.
#pragma once

#include <string>

#include "workload/workload.h"

namespace dietcode {

// "1..128", "8..128 step 8", "{1, 2, 4, 8}", "{1, 2, 3, 5, 8, 13, ..., 987} (16 values)".
std::string describe_values(const ShapeVar& var);
// "uniform" or "weighted".
std::string describe_weights(const ShapeVar& var);
// The dimensions in the kind's order and its options, as written in canonical form:
// "M=16*T N=2304 K=768", "M=T N=768 K=768 weight_layout=KN", "B=192 M=T N=T K=64 transpose_b",
// "N=N H=56 W=56 C=64 K=64 R=3 S=3 stride=2 pad=1".
std::string describe_dims(const OpSpec& op);

}  // namespace dietcode

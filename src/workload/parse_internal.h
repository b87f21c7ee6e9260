// The pieces of the workload parser (workload_parser.cc drives them) and the limits they
// enforce. The limits are not tuning knobs: each marks where a workload stops being a
// plausible model and becomes a typo or an attack on the tool's memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "workload/json_fields.h"
#include "workload/workload.h"

namespace dietcode {

// Workload files are a few KB; this bounds what a mistaken path (a dataset, /dev/zero) costs.
constexpr size_t kMaxWorkloadBytes = 16u << 20;
// Names become C identifiers and file names (lib<name>.so, <name>_<op>).
constexpr size_t kMaxNameLength = 64;
// Each value of a variable is a shape to tune and dispatch; a million is far past any model.
constexpr int64_t kMaxValuesPerVar = 1'000'000;
// Same bound for an op's cross product; it also keeps validation (which visits every
// instance) well under a second.
constexpr int64_t kMaxInstancesPerOp = 1'000'000;
// Tensors are indexed with 64-bit offsets, so 2^31 elements is fine; 2^40 elements (4 TiB of
// float32) is no real layer and only guards the arithmetic downstream against overflow.
constexpr int64_t kMaxTensorElements = int64_t{1} << 40;
constexpr int kMaxTensorElementsLog2 = 40;
// Stride, pad and dilation stay far below this in any network; the bound keeps them small
// enough that generated kernels can hold them, and products with them, in 32-bit ints.
constexpr int64_t kMaxConvParam = 1 << 16;
// An op weight is a relative share of time; a ratio past a million is a typo, and the bound
// keeps flops x weight finite.
constexpr double kMaxOpWeight = 1e6;

// "must be a C identifier of at most 64 characters" check for names; `what` is e.g.
// "workload name" or "op name".
std::string check_name(const JsonFields& fields, const ordered_json& value, const JsonPath& path,
                       const std::string& what);

ShapeVar parse_shape_var(const JsonFields& fields, const std::string& name,
                         const ordered_json& value, const JsonPath& path);

// Parses one op; `vars` are the declared shape variables (for expressions).
OpSpec parse_op(const JsonFields& fields, const ordered_json& value, const JsonPath& path,
                const std::vector<ShapeVar>& vars);

// Visits every instance of a parsed op: each dimension at least 1 without overflow, conv
// outputs not empty, every tensor within kMaxTensorElements. Throws at the first failure,
// naming the instance.
void check_op_instances(const JsonFields& fields, const JsonPath& path, const OpSpec& op,
                        const std::vector<ShapeVar>& vars);

}  // namespace dietcode

// What bench needs to know about a kernel pack, read from its manifest (pack_abi.h): the
// operators with their dtype, epilogue and argument order, the shape variables with their
// tuned values, how shape values become tensor dimensions, and the instance weights.
//
// Dimensions: a manifest that carries "dims" per op ({"M": "16*T", "N": "2304", ...}, as the
// pack generator writes them) is self-contained. For one that does not, the workload the pack
// was built from says it (`--workload W.json`); when both are there, the workload wins and must
// agree with the manifest on every op's kind, dtype, epilogue and arguments.
//
// Weights: the manifest's per-instance weights ("instances": {"values", "weight"}) when
// present, else the workload's (shape-variable weights times the op's weight), else the op's
// weight spread uniformly over the variables' values.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "workload/workload.h"

namespace dietcode {

struct BenchOp {
  OpSpec spec;                    // kind, dtype, epilogue, weight, dims, vars, conv geometry
  std::vector<std::string> args;  // the pack's argument order, as dietcode_launch takes them
  std::map<std::vector<int64_t>, double> instance_weights;  // from the manifest; may be empty
};

struct BenchPack {
  std::string file;  // as the user named it, for messages
  std::string name;
  std::vector<std::string> archs;
  // What the pack runs on, from the manifest's "target": "cuda" (also when absent: packs from
  // before the CPU target) or "cpu" (host pointers, the pack's own thread pool).
  std::string target = "cuda";
  std::vector<ShapeVar> vars;  // tuned values, with the workload's weights where known
  std::vector<BenchOp> ops;
  std::string dims_from;  // "the pack's manifest" or the workload file
  const ShapeVar* find_var(const std::string& name) const;
};

// Parses a manifest; `workload` (may be null) supplies dimensions and weights as above.
// Errors are UserErrors "FILE: manifest: JSON.PATH: what is wrong", or name the workload.
BenchPack parse_bench_pack(const std::string& manifest_text, const std::string& file,
                           const Workload* workload);

// One concrete shape of one op, as bench runs it.
struct BenchInstance {
  std::vector<int64_t> values;  // parallel to op.spec.vars
  std::string shape;            // "T=37", "B=2 T=37"
  double weight = 0;
  GemmShape gemm;
  std::map<std::string, int64_t> dims;  // evaluated, with P and Q for conv2d
};

// Values to run a shape variable at instead of its tuned values, from `--shapes`.
struct ShapeOverride {
  std::string var;
  std::vector<int64_t> values;  // ascending, distinct, >= 1
};

// Parses one --shapes value: "T=1:128" (every integer), "T=1:128:8" (with a step),
// "T=1,2,4" (a list). Throws UserError "--shapes TEXT: what is wrong".
ShapeOverride parse_shape_override(const std::string& text);

// The instances of `op`: the cross product of its variables' values (overridden ones replaced),
// first variable slowest. Throws UserError when an override names a variable the pack lacks.
std::vector<BenchInstance> bench_instances(const BenchPack& pack, const BenchOp& op,
                                           const std::vector<ShapeOverride>& overrides);

// The ops named in `--ops a,b` in the pack's order (all when `names` is empty). Throws
// UserError "--ops: the pack has no op 'x' (it has qkv, proj)".
std::vector<const BenchOp*> select_ops(const BenchPack& pack,
                                       const std::vector<std::string>& names);

// Element count of each argument of `op` at `dims`, in argument order.
std::vector<int64_t> argument_elements(const BenchOp& op,
                                       const std::map<std::string, int64_t>& dims);

}  // namespace dietcode

// From the ops found in a model to a workload file: shape variables from the model's symbolic
// dimensions and the user's --dynamic ranges, identical ops merged into one whose weight counts
// them, names that say where each op came from, and the summary `dietcode import` prints.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "import/imported_op.h"

namespace dietcode::onnx_import {

// One --dynamic NAME=MIN:MAX[:STEP] or NAME=V1,V2,...
struct DynamicRange {
  std::string name;
  int64_t min = 0, max = 0, step = 1;
  std::vector<int64_t> values;  // when given as a list
};
// Parses the text after "--dynamic "; throws UserError naming the flag.
DynamicRange parse_dynamic(const std::string& text);

// How dense weights reach the pack (--weight-layout).
enum class WeightPassing {
  kAsStored,        // as the model stores them: weight_layout KN where that is [K,N]
  kTransposeToNK,   // always [N,K]: a [K,N] weight is transposed once by the user at load
};

struct BuildOptions {
  std::string name;                              // the workload's name
  std::vector<DynamicRange> dynamic;             // ranges of the symbolic dimensions
  std::map<std::string, nlohmann::json> weights;  // --weights NAME=JSON (workload syntax)
  WeightPassing weight_passing = WeightPassing::kAsStored;
};

struct MergedOp {
  std::string name;
  ImportedOp op;               // the first node's
  std::vector<std::string> nodes;  // every node merged into it, in graph order
};

struct ImportReport {
  nlohmann::ordered_json workload;  // the file's content
  std::vector<MergedOp> ops;
  std::vector<NotCovered> not_covered;        // GEMM-like nodes left out, with reasons
  std::map<std::string, int> other_op_types;  // other nodes not folded into an epilogue
  std::map<std::string, int64_t> maxima;      // each shape variable's largest value
  double covered_flops = 0, total_flops = 0;  // at the maxima; total over every GEMM-like
                                              // node whose shapes are known
  int unknown_flop_nodes = 0;                 // GEMM-like nodes whose FLOPs are unknown
};

// Throws UserError "MODEL: ..." when no op can be compiled, a symbolic dimension an op uses
// has no range, or a --dynamic names a dimension the model does not have.
ImportReport build_workload(const MatchResult& found, const BuildOptions& options,
                            const std::string& model_path);

// The summary printed by `dietcode import` (several lines, each ending in '\n'); `json` is the
// same as data.
std::string summary_text(const ImportReport& report);
nlohmann::ordered_json summary_json(const ImportReport& report);

}  // namespace dietcode::onnx_import

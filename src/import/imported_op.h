// What the importer finds in a model: each ONNX node dietcode compiles (MatMul, Gemm, Conv),
// mapped onto a workload operator with symbolic dimensions and the followers folded into its
// epilogue, and each node it could not map, with the reason.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "import/graph.h"
#include "import/sym_dim.h"
#include "workload/workload.h"

namespace dietcode::onnx_import {

struct ImportedOp {
  std::string node_name;  // the GEMM node's name, or its output's when it has none
  std::string op_type;    // "MatMul", "Gemm" or "Conv"
  OpKind kind = OpKind::kDense;
  DType dtype = DType::kFloat32;
  Epilogue epilogue = Epilogue::kNone;
  // The workload's dimensions: dense M, N, K; batch_matmul B, M, N, K; conv2d N, H, W, C, K,
  // R, S (the output extents P, Q follow from them).
  std::map<std::string, SymDim> dims;
  bool transpose_a = false, transpose_b = false;  // batch_matmul
  // dense: how the model stores W, and the initializer that holds it (workload_builder.h
  // decides whether the workload takes it as stored or transposed once at load).
  WeightLayout weight_layout = WeightLayout::kNK;
  std::string weight_initializer;
  int stride[2] = {1, 1}, pad[2] = {0, 0}, dilation[2] = {1, 1};  // conv2d
  // How the model's tensors map onto the op's arguments where they differ in layout (NCHW
  // activations, a batch viewed as rows); dense's weight note is added by the builder.
  std::string note;
  std::vector<std::string> folded;  // op types folded into the epilogue, in order
  SymDim flops;                     // 2 x multiply-adds
};

struct NotCovered {
  std::string node_name, op_type, reason;
  std::optional<SymDim> flops;  // when the node's shapes are known
};

struct MatchResult {
  std::vector<ImportedOp> ops;                // in graph order, one per node (not merged)
  std::vector<NotCovered> gemms_not_covered;  // MatMul, Gemm and Conv nodes left out
  std::map<std::string, int> other_op_types;  // every other node not folded: type -> count
};

// Maps every MatMul, Gemm and 2-D Conv of the graph (after propagate_shapes).
MatchResult match_operators(const Graph& graph);

// The activation / bias followers of `value` that fold into the epilogue of the op producing
// it (epilogue_match.cc). `allow_bias`: the op has a bias argument (dense; conv2d without a
// bias input of its own); `bias_extent`: the length a bias vector must have (N, or K filters).
struct FoldedEpilogue {
  Epilogue epilogue = Epilogue::kNone;
  std::vector<const onnx::NodeProto*> nodes;  // every node folded
  std::vector<std::string> folded;            // what was folded, e.g. {"Add (bias)", "GELU (Erf)"}
};
FoldedEpilogue fold_epilogue(const Graph& graph, const std::string& value, bool allow_bias,
                             const std::optional<SymDim>& bias_extent);

}  // namespace dietcode::onnx_import

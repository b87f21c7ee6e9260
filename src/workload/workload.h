// The workload: what the user asked dietcode to compile (SPEC §3), parsed and checked.
//
// A Workload holds shape variables (each a finite list of integer values with normalised
// weights) and operators whose dimensions are affine expressions of those variables. Every
// operator maps onto a GEMM problem (batch, M, N, K): dense directly, batch_matmul per batch,
// conv2d NHWC as an implicit GEMM (M = N*P*Q, N = K, K = R*S*C). The rest of the pipeline
// reasons about GemmShape and never about operator kinds where it can avoid it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "workload/expr.h"

namespace dietcode {

enum class OpKind { kDense, kBatchMatmul, kConv2d };
enum class DType { kFloat32, kFloat16, kBFloat16 };
enum class Epilogue { kNone, kBias, kRelu, kBiasRelu, kGelu, kBiasGelu };
// How a dense op's weight W is stored: [N,K] (the default: torch.nn.Linear's weight, ONNX Gemm
// with transB=1) or [K,N] (ONNX MatMul's weight initializer, Gemm with transB=0).
enum class WeightLayout { kNK, kKN };

const char* to_string(OpKind kind);        // "dense", "batch_matmul", "conv2d"
const char* to_string(DType dtype);        // "float32", "float16", "bfloat16"
const char* to_string(Epilogue epilogue);  // "none", "bias", ...
const char* to_string(WeightLayout layout);  // "NK", "KN"
int dtype_bytes(DType dtype);
bool epilogue_has_bias(Epilogue epilogue);

struct ShapeVar {
  std::string name;
  std::vector<int64_t> values;  // ascending, distinct
  std::vector<double> weights;  // parallel to values, sum to 1
  int64_t min() const { return values.front(); }
  int64_t max() const { return values.back(); }
};

// One operator as written in the workload. Dimension fields not used by its kind are unset.
struct OpSpec {
  std::string name;
  OpKind kind = OpKind::kDense;
  DType dtype = DType::kFloat32;
  Epilogue epilogue = Epilogue::kNone;
  double weight = 1.0;  // the operator's share of the user's time, relative to the others
  std::string note;     // free text for people ("note"), e.g. how a model's tensors map

  // dense: M, N, K.  batch_matmul: B, M, N, K.  conv2d: N, H, W, C, K, R, S.
  std::map<std::string, Expr> dims;
  bool transpose_a = false;  // batch_matmul only
  bool transpose_b = false;
  WeightLayout weight_layout = WeightLayout::kNK;  // dense only
  int stride[2] = {1, 1};  // conv2d only: (h, w)
  int pad[2] = {0, 0};
  int dilation[2] = {1, 1};

  // Names of the shape variables this op's dimensions use, in workload order.
  std::vector<std::string> vars;

  // Kernel arguments in ABI order, e.g. {"X", "W", "bias", "Y"}.
  std::vector<std::string> arg_names() const;

  // Whether the GEMM's B operand is stored K-contiguous, [N,K] per batch element: dense W in
  // its default layout, batch_matmul B with transpose_b, conv2d's KRSC weights.
  bool b_k_contiguous() const;
};

// The GEMM an operator instance computes: batch independent problems of M x N x K.
struct GemmShape {
  int64_t batch = 1, M = 1, N = 1, K = 1;
  double flops() const { return 2.0 * double(batch) * double(M) * double(N) * double(K); }
  bool operator==(const GemmShape&) const = default;
};

// One concrete shape of one op: a value for each variable the op uses.
struct Instance {
  std::vector<int64_t> values;  // parallel to OpSpec::vars
  double weight = 0;            // product of the variables' weights times the op's weight
  GemmShape gemm;
  double flops = 0;
  double priority = 0;  // flops * weight: how much this instance matters to the search
};

struct Workload {
  std::string name;
  std::string source;          // the file it came from, for messages
  std::vector<ShapeVar> vars;  // in file order
  std::vector<OpSpec> ops;

  const ShapeVar* find_var(const std::string& name) const;
  const OpSpec* find_op(const std::string& name) const;
};

// Parses and validates a workload. Throws UserError with "FILE: JSON.PATH: what is wrong".
Workload load_workload(const std::string& path);
Workload parse_workload(const std::string& text, const std::string& source_name);

// The op's dimensions evaluated at one assignment of its variables (parallel to op.vars);
// for conv2d also the output extents P and Q. Throws UserError on overflow or an empty conv
// output (possible for values outside the validated ranges).
std::map<std::string, int64_t> evaluate_dims(const OpSpec& op, const std::vector<int64_t>& values);
GemmShape gemm_shape(const OpSpec& op, const std::vector<int64_t>& values);

// Every instance of an op: the cross product of its variables' values, in lexicographic
// order of op.vars (the first variable varies slowest).
std::vector<Instance> expand_instances(const Workload& workload, const OpSpec& op);

}  // namespace dietcode

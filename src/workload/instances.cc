// From a parsed op to concrete shapes: dimension values, the GEMM each instance computes, and
// the instance list the search works through.
#include <stdexcept>

#include "common/error.h"
#include "workload/checked_math.h"
#include "workload/op_layout.h"
#include "workload/workload.h"

namespace dietcode {

const ShapeVar* Workload::find_var(const std::string& var_name) const {
  for (const auto& var : vars)
    if (var.name == var_name) return &var;
  return nullptr;
}

const OpSpec* Workload::find_op(const std::string& op_name) const {
  for (const auto& op : ops)
    if (op.name == op_name) return &op;
  return nullptr;
}

namespace {

std::string where(const OpSpec& op, const std::vector<int64_t>& values) {
  std::string out;
  for (size_t i = 0; i < values.size(); ++i)
    out += (i == 0 ? " at " : ", ") + op.vars[i] + "=" + std::to_string(values[i]);
  return out;
}

int64_t product(const OpSpec& op, const std::vector<int64_t>& values,
                std::initializer_list<int64_t> factors, const char* what) {
  int64_t out = 1;
  for (int64_t f : factors)
    if (!checked_mul(out, f, &out))
      throw UserError("op " + op.name + ": " + what + " overflows 64-bit integers" +
                      where(op, values));
  return out;
}

}  // namespace

std::map<std::string, int64_t> evaluate_dims(const OpSpec& op, const std::vector<int64_t>& values) {
  if (values.size() != op.vars.size())
    throw std::invalid_argument("evaluate_dims: op " + op.name + " takes " +
                                std::to_string(op.vars.size()) + " shape values, got " +
                                std::to_string(values.size()));
  std::map<std::string, int64_t> env;
  for (size_t i = 0; i < values.size(); ++i) env[op.vars[i]] = values[i];
  std::map<std::string, int64_t> dims;
  for (const auto& [name, expr] : op.dims) {
    try {
      dims[name] = expr.evaluate(env);
    } catch (const UserError& e) {
      throw UserError("op " + op.name + ": " + name + " = " + e.what() + where(op, values));
    }
  }
  if (op.kind == OpKind::kConv2d) {
    // The output extents travel with the dimensions: printers and the implicit GEMM need them.
    const char* out_names[2] = {"P", "Q"};
    const char* in_names[2] = {"H", "W"};
    const char* filter_names[2] = {"R", "S"};
    for (int axis = 0; axis < 2; ++axis) {
      int64_t out = 0;
      if (!conv_output_extent(dims.at(in_names[axis]), op.pad[axis], op.dilation[axis],
                              dims.at(filter_names[axis]), op.stride[axis], &out))
        throw UserError("op " + op.name + ": the convolution output " + out_names[axis] +
                        " is empty" + where(op, values));
      dims[out_names[axis]] = out;
    }
  }
  return dims;
}

GemmShape gemm_shape(const OpSpec& op, const std::vector<int64_t>& values) {
  auto dims = evaluate_dims(op, values);
  GemmShape g;
  switch (op.kind) {
    case OpKind::kDense:
      g.M = dims.at("M"), g.N = dims.at("N"), g.K = dims.at("K");
      break;
    case OpKind::kBatchMatmul:
      g.batch = dims.at("B"), g.M = dims.at("M"), g.N = dims.at("N"), g.K = dims.at("K");
      break;
    case OpKind::kConv2d:
      // Implicit GEMM over NHWC: one row per output pixel, one column per filter, and the
      // reduction runs over the filter window and the input channels (weights are KRSC).
      g.M = product(op, values, {dims.at("N"), dims.at("P"), dims.at("Q")}, "M = N*P*Q");
      g.N = dims.at("K");
      g.K = product(op, values, {dims.at("R"), dims.at("S"), dims.at("C")}, "K = R*S*C");
      break;
  }
  return g;
}

std::vector<Instance> expand_instances(const Workload& workload, const OpSpec& op) {
  std::vector<const ShapeVar*> vars;
  for (const auto& name : op.vars) {
    const ShapeVar* var = workload.find_var(name);
    if (!var) throw std::invalid_argument("expand_instances: no shape variable " + name);
    vars.push_back(var);
  }
  std::vector<Instance> instances;
  std::vector<size_t> position(vars.size(), 0);
  for (;;) {
    Instance inst;
    inst.weight = op.weight;
    for (size_t i = 0; i < vars.size(); ++i) {
      inst.values.push_back(vars[i]->values[position[i]]);
      inst.weight *= vars[i]->weights[position[i]];
    }
    inst.gemm = gemm_shape(op, inst.values);
    inst.flops = inst.gemm.flops();
    inst.priority = inst.flops * inst.weight;
    instances.push_back(std::move(inst));

    // Odometer, last variable fastest: the first variable varies slowest.
    size_t i = position.size();
    while (i > 0 && ++position[i - 1] == vars[i - 1]->values.size()) position[--i] = 0;
    if (i == 0) break;
  }
  return instances;
}

}  // namespace dietcode

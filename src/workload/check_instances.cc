// Whole-range validation of an op. Rather than reasoning about expressions symbolically
// (which breaks down with negative coefficients and products of variables), every instance
// is visited: the instance count is bounded (kMaxInstancesPerOp) and each visit is a few
// multiply-adds over precompiled terms, so this is exact and cheap.
#include "common/error.h"
#include "workload/checked_math.h"
#include "workload/names.h"
#include "workload/op_layout.h"
#include "workload/parse_internal.h"

namespace dietcode {

namespace {

// An expression with its variables resolved to positions in the instance's value vector.
struct CompiledTerm {
  int64_t coeff;
  int a = -1, b = -1;  // indices into the values, -1 when absent
};

struct CompiledDim {
  std::string name;
  const Expr* expr;
  std::vector<CompiledTerm> terms;
};

int var_index(const OpSpec& op, const std::string& name) {
  for (size_t i = 0; i < op.vars.size(); ++i)
    if (op.vars[i] == name) return static_cast<int>(i);
  throw std::logic_error("check_op_instances: " + name + " is not a variable of " + op.name);
}

bool evaluate(const CompiledDim& dim, const std::vector<int64_t>& values, int64_t* out) {
  int64_t sum = 0;
  for (const auto& t : dim.terms) {
    int64_t product = t.coeff;
    if (t.a >= 0 && !checked_mul(product, values[t.a], &product)) return false;
    if (t.b >= 0 && !checked_mul(product, values[t.b], &product)) return false;
    if (!checked_add(sum, product, &sum)) return false;
  }
  *out = sum;
  return true;
}

// " at B=2, T=17", or nothing for an op without variables.
std::string where(const OpSpec& op, const std::vector<int64_t>& values) {
  std::string out;
  for (size_t i = 0; i < values.size(); ++i)
    out += (i == 0 ? " at " : ", ") + op.vars[i] + "=" + std::to_string(values[i]);
  return out;
}

}  // namespace

void check_op_instances(const JsonFields& fields, const JsonPath& path, const OpSpec& op,
                        const std::vector<ShapeVar>& vars) {
  std::vector<const ShapeVar*> specs;
  int64_t count = 1;
  for (const auto& name : op.vars) {
    for (const auto& var : vars)
      if (var.name == name) specs.push_back(&var);
    // Both factors are at most kMaxValuesPerVar (1e6), so the product cannot overflow.
    count *= static_cast<int64_t>(specs.back()->values.size());
    if (count > kMaxInstancesPerOp)
      fields.fail(path, "more than " + std::to_string(kMaxInstancesPerOp) +
                            " instances (the cross product of " +
                            join_alternatives(std::vector<std::string>(
                                                  op.vars.begin(), op.vars.begin() + specs.size()),
                                              "and") +
                            "); at most " + std::to_string(kMaxInstancesPerOp) + " are supported");
  }

  std::vector<CompiledDim> dims;
  for (const auto& name : dim_names(op.kind)) {
    CompiledDim dim{name, &op.dims.at(name), {}};
    for (const auto& term : dim.expr->terms()) {
      CompiledTerm t{term.coeff};
      if (term.vars.size() > 0) t.a = var_index(op, term.vars[0]);
      if (term.vars.size() > 1) t.b = var_index(op, term.vars[1]);
      dim.terms.push_back(t);
    }
    dims.push_back(std::move(dim));
  }
  // Tensor shapes as indices into the evaluated dims; conv2d's P and Q go after the others.
  std::vector<std::string> extent_names = dim_names(op.kind);
  if (op.kind == OpKind::kConv2d) extent_names.insert(extent_names.end(), {"P", "Q"});
  auto extent_index = [&](const std::string& name) {
    for (size_t i = 0; i < extent_names.size(); ++i)
      if (extent_names[i] == name) return i;
    throw std::logic_error("check_op_instances: unknown extent " + name);
  };
  auto tensors = tensor_layouts(op);
  std::vector<std::vector<size_t>> tensor_extents;
  for (const auto& tensor : tensors) {
    tensor_extents.emplace_back();
    for (const auto& d : tensor.dims) tensor_extents.back().push_back(extent_index(d));
  }

  struct ConvAxis {
    const char* axis;
    const char* in_name;
    const char* filter_name;
    size_t in, filter, out;
  };
  ConvAxis conv_axes[2] = {{"height", "H", "R", 0, 0, 0}, {"width", "W", "S", 0, 0, 0}};
  if (op.kind == OpKind::kConv2d) {
    for (int axis = 0; axis < 2; ++axis) {
      conv_axes[axis].in = extent_index(conv_axes[axis].in_name);
      conv_axes[axis].filter = extent_index(conv_axes[axis].filter_name);
      conv_axes[axis].out = extent_index(axis == 0 ? "P" : "Q");
    }
  }

  std::vector<size_t> position(op.vars.size(), 0);
  std::vector<int64_t> values(op.vars.size());
  std::vector<int64_t> extent(extent_names.size());
  for (int64_t n = 0; n < count; ++n) {
    for (size_t i = 0; i < values.size(); ++i) values[i] = specs[i]->values[position[i]];

    for (size_t d = 0; d < dims.size(); ++d) {
      bool fits = evaluate(dims[d], values, &extent[d]);
      if (fits && extent[d] >= 1) continue;
      std::string shown = quote(dims[d].expr->to_string());
      if (!fits)
        fields.fail(path.key(dims[d].name),
                    shown + " overflows 64-bit integers" + where(op, values));
      fields.fail(path.key(dims[d].name), shown + " is " + std::to_string(extent[d]) +
                                              where(op, values) +
                                              "; a dimension must be at least 1");
    }

    if (op.kind == OpKind::kConv2d) {
      for (int axis = 0; axis < 2; ++axis) {
        const ConvAxis& a = conv_axes[axis];
        int64_t in = extent[a.in], filter = extent[a.filter];
        if (conv_output_extent(in, op.pad[axis], op.dilation[axis], filter, op.stride[axis],
                               &extent[a.out]))
          continue;
        fields.fail(path, std::string("output ") + a.axis + " is empty" + where(op, values) +
                              ": the filter (" + a.filter_name + "=" + std::to_string(filter) +
                              ", dilation " + std::to_string(op.dilation[axis]) +
                              ") is larger than the padded input (" + a.in_name + "=" +
                              std::to_string(in) + ", pad " + std::to_string(op.pad[axis]) + ")");
      }
    }

    for (size_t t = 0; t < tensors.size(); ++t) {
      int64_t elements = 1;
      bool fits = true;
      for (size_t e : tensor_extents[t]) fits = fits && checked_mul(elements, extent[e], &elements);
      if (fits && elements <= kMaxTensorElements) continue;
      std::string shape;
      for (size_t e : tensor_extents[t])
        shape += (shape.empty() ? "" : ", ") + std::to_string(extent[e]);
      fields.fail(path, "tensor " + tensors[t].name + " [" + shape + "] has more than 2^" +
                            std::to_string(kMaxTensorElementsLog2) + " elements" +
                            where(op, values));
    }

    // Odometer: the last variable varies fastest, matching expand_instances.
    for (size_t i = position.size(); i-- > 0;) {
      if (++position[i] < specs[i]->values.size()) break;
      position[i] = 0;
    }
  }
}

}  // namespace dietcode

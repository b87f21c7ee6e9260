/* The argument checks of a kernel pack's loader runtime, and its error buffer: everything
 * dietcode_select and dietcode_launch verify before any kernel runs, so a bad call costs nothing
 * and touches no device state. Part of each target's runtime (pack_runtime.cc for a GPU,
 * pack_runtime_cpu.cc for a CPU: included by them, and only by them), so both check a call
 * the same way; kept apart to keep each file about one thing. */
#ifndef DIETCODE_PACK_RUNTIME_CHECKS_H_
#define DIETCODE_PACK_RUNTIME_CHECKS_H_

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <string>

#include "pack_desc.h"

namespace dietcode_pack {
namespace {

// ---- errors --------------------------------------------------------------------------------

// A fixed buffer rather than a std::string: trivially destructible thread-locals are safe in a
// library that may be dlclose'd.
thread_local char g_last_error[1024] = "";

int fail(int code, const char* format, ...) __attribute__((format(printf, 2, 3)));
int fail(int code, const char* format, ...) {
  va_list ap;
  va_start(ap, format);
  std::vsnprintf(g_last_error, sizeof g_last_error, format, ap);
  va_end(ap);
  return code;
}

// ---- checks --------------------------------------------------------------------------------

// The largest shape value accepted: conv2d's geometry is 32-bit, and below it the shape
// functions' products (a dimension times a dimension) stay far from int64 overflow.
constexpr int64_t kMaxShapeValue = 2147483647;

const OpDesc* find_op(const char* name) {
  for (int i = 0; i < kPack.n_ops; ++i)
    if (std::strcmp(kPack.ops[i].name, name) == 0) return &kPack.ops[i];
  return nullptr;
}

int unknown_op(const char* name) {
  std::string known;
  for (int i = 0; i < kPack.n_ops; ++i) known += std::string(i ? ", " : "") + kPack.ops[i].name;
  return fail(DIETCODE_ERR_UNKNOWN_OP, "unknown op '%s' (pack %s has: %s)", name, kPack.name,
              known.c_str());
}

int check_values(const OpDesc& op, const int64_t* values, int n_values) {
  if (n_values != op.n_vars) {
    std::string names;
    for (int i = 0; i < op.n_vars; ++i) names += std::string(i ? ", " : "") + op.var_names[i];
    return fail(DIETCODE_ERR_INVALID_ARGUMENT, "op %s takes %d shape value(s) (%s), got %d",
                op.name, op.n_vars, names.c_str(), n_values);
  }
  if (op.n_vars > 0 && !values)
    return fail(DIETCODE_ERR_INVALID_ARGUMENT, "op %s: shape_values is NULL", op.name);
  for (int i = 0; i < op.n_vars; ++i) {
    if (values[i] < 1)
      return fail(DIETCODE_ERR_INVALID_ARGUMENT, "op %s: shape value %s = %lld is below 1", op.name,
                  op.var_names[i], (long long)values[i]);
    if (values[i] > kMaxShapeValue)
      return fail(DIETCODE_ERR_INVALID_ARGUMENT, "op %s: shape value %s = %lld is above %lld",
                  op.name, op.var_names[i], (long long)values[i], (long long)kMaxShapeValue);
  }
  return DIETCODE_OK;
}

// A tensor's extent in bytes (-1: past int64), from the GEMM view fill_shape produced: dense
// and batch_matmul tensors are batch * stride elements, conv2d's input is NHWC and its filter
// KRSC (conv2d is the only op that sets stride_h), a bias is [N].
int64_t tensor_bytes(const OpDesc& op, const DietcodeArgs& a, int arg) {
  int64_t elements;
  bool conv = a.stride_h != 0;
  if (arg == op.bias_arg)
    elements = a.n;
  else if (arg == op.n_args - 1)
    elements = checked_mul(a.batch, a.stride_c);
  else if (conv)
    elements = checked_mul(
        checked_mul(checked_mul(arg == 0 ? a.conv_n : a.conv_k, arg == 0 ? a.conv_h : a.conv_r),
                    arg == 0 ? a.conv_w : a.conv_s),
        a.conv_c);
  else
    elements = checked_mul(a.batch, arg == 0 ? a.stride_a : a.stride_b);
  return checked_mul(elements, op.elem_bytes);
}

// conv2d's geometry fields are 32-bit: the GEMM view must be exactly what they describe, or a
// shape value was too large for them (or the filter is larger than the padded input).
int check_conv_geometry(const OpDesc& op, const DietcodeArgs& a) {
  if (a.stride_h == 0) return DIETCODE_OK;
  if (a.conv_p < 0 || a.conv_q < 0)
    return fail(DIETCODE_ERR_INVALID_ARGUMENT,
                "op %s: these shape values give a negative output size (P %d, Q %d)", op.name,
                a.conv_p, a.conv_q);
  bool exact = a.conv_n >= 0 && a.conv_h >= 0 && a.conv_w >= 0 && a.conv_c >= 0 && a.conv_k >= 0 &&
               a.conv_r >= 0 && a.conv_s >= 0 &&
               checked_mul(checked_mul(a.conv_n, a.conv_p), a.conv_q) == a.m && a.conv_k == a.n &&
               checked_mul(checked_mul(a.conv_r, a.conv_s), a.conv_c) == a.k;
  if (!exact)
    return fail(DIETCODE_ERR_INVALID_ARGUMENT,
                "op %s: these shape values give a conv2d dimension past 32 bits", op.name);
  return DIETCODE_OK;
}

// Every tensor's extent fits int64 bytes, and the output shares no byte with an input: the
// kernels read inputs while other blocks already write the output.
int check_extents(const OpDesc& op, void* const* args, const DietcodeArgs& a) {
  int out = op.n_args - 1;
  int64_t out_bytes = tensor_bytes(op, a, out);
  for (int i = 0; i <= out; ++i) {
    int64_t bytes = i == out ? out_bytes : tensor_bytes(op, a, i);
    if (bytes < 0)
      return fail(DIETCODE_ERR_INVALID_ARGUMENT,
                  "op %s: argument %s would hold more than 2^63 bytes at these shape values",
                  op.name, op.arg_names[i]);
    if (uintptr_t(args[i]) > UINTPTR_MAX - uint64_t(bytes))
      return fail(DIETCODE_ERR_INVALID_ARGUMENT,
                  "op %s: argument %s (%p, %lld bytes) runs past the end of the address space",
                  op.name, op.arg_names[i], args[i], (long long)bytes);
    if (i == out || bytes == 0 || out_bytes == 0) continue;
    uintptr_t in = uintptr_t(args[i]), o = uintptr_t(args[out]);
    if (o < in + uint64_t(bytes) && in < o + uint64_t(out_bytes))
      return fail(DIETCODE_ERR_INVALID_ARGUMENT,
                  "op %s: output %s (%p, %lld bytes) overlaps input %s (%p, %lld bytes)", op.name,
                  op.arg_names[out], args[out], (long long)out_bytes, op.arg_names[i], args[i],
                  (long long)bytes);
  }
  return DIETCODE_OK;
}

// The checks every launch starts with, whatever the target: the pointers and their count, the
// shape values, and the GEMM they give, filled into *a (zeroed first). *empty: the output has
// no element, so the call is done once the checks pass.
int check_call(const OpDesc& op, void* const* args, int n_args, const int64_t* values, int n_values,
               DietcodeArgs* a, bool* empty) {
  *empty = false;
  if (!args) return fail(DIETCODE_ERR_INVALID_ARGUMENT, "op %s: args is NULL", op.name);
  if (n_args != op.n_args)
    return fail(DIETCODE_ERR_INVALID_ARGUMENT, "op %s takes %d arguments, got %d", op.name,
                op.n_args, n_args);
  for (int i = 0; i < n_args; ++i)
    if (!args[i])
      return fail(DIETCODE_ERR_INVALID_ARGUMENT, "op %s: argument %s is NULL", op.name,
                  op.arg_names[i]);
  if (int status = check_values(op, values, n_values)) return status;
  std::memset(a, 0, sizeof *a);
  if (!op.fill_shape(values, a))
    return fail(DIETCODE_ERR_INVALID_ARGUMENT,
                "op %s: these shape values give a dimension or stride past 64 bits (32 for "
                "convolution geometry)",
                op.name);
  if (a->batch < 0 || a->m < 0 || a->n < 0 || a->k < 0)
    return fail(DIETCODE_ERR_INVALID_ARGUMENT,
                "op %s: these shape values give a negative "
                "dimension (batch %lld, M %lld, N %lld, K %lld)",
                op.name, a->batch, a->m, a->n, a->k);
  *empty = a->batch == 0 || a->m == 0 || a->n == 0;
  return DIETCODE_OK;
}

// Alignments are powers of two (a mask, not a division: this runs for every argument of every
// launch); any other value is still answered exactly.
bool aligned(const void* p, int bytes) {
  if (bytes <= 1) return true;
  uintptr_t b = uintptr_t(bytes);
  return (b & (b - 1)) == 0 ? (uintptr_t(p) & (b - 1)) == 0 : uintptr_t(p) % b == 0;
}

}  // namespace
}  // namespace dietcode_pack

#endif /* DIETCODE_PACK_RUNTIME_CHECKS_H_ */

// The exported C functions every pack has in the same form, whatever its target: the ABI
// version, the manifest, the last error, the portable dispatcher and the launch entry that
// checks the op's name and hands over to the runtime's launch_op, and the declarations of
// constant weights (which only the CPU runtime uses, through constants()). Each runtime
// (pack_runtime.cc for a GPU, pack_runtime_cpu.cc for a CPU) includes this once, at file scope
// after its own definitions of kPack, fail, find_op, unknown_op, check_values and launch_op,
// and defines the exports that differ by target (dietcode_select_arch, the thread count) itself.
#pragma once

#include "pack_constants.h"

DIETCODE_PACK_EXPORT int dietcode_abi_version(void) { return DIETCODE_ABI_VERSION; }

DIETCODE_PACK_EXPORT const char* dietcode_manifest(void) { return dietcode_pack::kPack.manifest; }

DIETCODE_PACK_EXPORT const char* dietcode_last_error(void) { return dietcode_pack::g_last_error; }

DIETCODE_PACK_EXPORT int dietcode_select(const char* op, const int64_t* shape_values,
                                         int n_values) {
  if (!op) return -dietcode_pack::fail(DIETCODE_ERR_INVALID_ARGUMENT, "op is NULL");
  const dietcode_pack::OpDesc* d = dietcode_pack::find_op(op);
  if (!d) return -dietcode_pack::unknown_op(op);
  if (int status = dietcode_pack::check_values(*d, shape_values, n_values)) return -status;
  return d->selects[0].select(shape_values);
}

DIETCODE_PACK_EXPORT int dietcode_launch(const char* op, void* const* args, int n_args,
                                         const int64_t* shape_values, int n_values, void* stream) {
  if (!op) return dietcode_pack::fail(DIETCODE_ERR_INVALID_ARGUMENT, "op is NULL");
  const dietcode_pack::OpDesc* d = dietcode_pack::find_op(op);
  if (!d) return dietcode_pack::unknown_op(op);
  return dietcode_pack::launch_op(*d, args, n_args, shape_values, n_values, stream);
}

// ---- constant weights (ABI 4): the declarations, kept by every pack (pack_constants.h) ------

namespace dietcode_pack {

// The op and check shared by declare and forget: 0 and *d set, or the status of a failure.
inline int constant_target(const char* fn, const char* op, int arg, const void* data,
                           const OpDesc** d) {
  if (!op) return fail(DIETCODE_ERR_INVALID_ARGUMENT, "%s: op is NULL", fn);
  *d = find_op(op);
  if (!*d) return unknown_op(op);
  const OpDesc& o = **d;
  if (o.weights_arg < 0)
    return fail(DIETCODE_ERR_INVALID_ARGUMENT,
                "%s: op %s has no weights to declare constant (only dense and conv2d ops have)",
                fn, o.name);
  if (arg != o.weights_arg)
    return fail(DIETCODE_ERR_INVALID_ARGUMENT,
                "%s: op %s: argument %d is not its weights; only argument %d (%s) can be "
                "declared constant",
                fn, o.name, arg, o.weights_arg, o.arg_names[o.weights_arg]);
  if (!data)
    return fail(DIETCODE_ERR_INVALID_ARGUMENT, "%s: op %s: data (%s) is NULL", fn, o.name,
                o.arg_names[arg]);
  return DIETCODE_OK;
}

}  // namespace dietcode_pack

DIETCODE_PACK_EXPORT int dietcode_declare_constant(const char* op, int arg, const void* data) {
  const dietcode_pack::OpDesc* d = nullptr;
  if (int status = dietcode_pack::constant_target("dietcode_declare_constant", op, arg, data, &d))
    return status;
  try {
    dietcode_pack::constants().declare(*d, data);
    return DIETCODE_OK;
  } catch (...) {
    return dietcode_pack::fail(DIETCODE_ERR_CUDA, "dietcode_declare_constant: out of host memory");
  }
}

DIETCODE_PACK_EXPORT int dietcode_forget_constant(const char* op, int arg, const void* data) {
  const dietcode_pack::OpDesc* d = nullptr;
  if (int status = dietcode_pack::constant_target("dietcode_forget_constant", op, arg, data, &d))
    return status;
  if (!dietcode_pack::constants().forget(*d, data))
    return dietcode_pack::fail(DIETCODE_ERR_INVALID_ARGUMENT,
                               "dietcode_forget_constant: op %s: %p was not declared constant",
                               d->name, data);
  return DIETCODE_OK;
}

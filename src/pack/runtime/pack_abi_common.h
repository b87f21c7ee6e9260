// The exported C functions every pack has in the same form, whatever its target: the ABI
// version, the manifest, the last error, the portable dispatcher and the launch entry that
// checks the op's name and hands over to the runtime's launch_op. Each runtime
// (pack_runtime.cc for a GPU, pack_runtime_cpu.cc for a CPU) includes this once, at file scope
// after its own definitions of kPack, fail, find_op, unknown_op, check_values and launch_op,
// and defines the exports that differ by target (dietcode_select_arch, the thread count) itself.
#pragma once

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

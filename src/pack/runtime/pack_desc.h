/* The description of a kernel pack that its generated translation unit fills in, as far as it
 * is the same for every target: each operator's signature, its dispatchers and how its shape
 * values become a GEMM. What a kernel is differs by target, so KernelDesc is only declared
 * here; the target's runtime header defines it (pack_runtime.h: CUBINs and a launch plan for a
 * GPU; pack_runtime_cpu.h: an entry point and an ISA level for a CPU). A pack compiles one
 * runtime, so each pack has exactly one KernelDesc.
 *
 * Built into each libNAME.so, never into dietcode itself (see pack_runtime.h). */
#ifndef DIETCODE_PACK_DESC_H_
#define DIETCODE_PACK_DESC_H_

#include <cstddef>
#include <cstdint>

#include "dietcode/pack_abi.h"
#include "dietcode_args.h"

/* The pack is compiled with -fvisibility=hidden; the ABI and the typed wrappers opt back in
 * (and a version script keeps everything else out of the dynamic symbol table). */
#define DIETCODE_PACK_EXPORT extern "C" __attribute__((visibility("default")))

namespace dietcode_pack {

struct KernelDesc; /* the target's own: pack_runtime.h or pack_runtime_cpu.h */

/* The dispatcher of an op for one target arch (several archs may share one select). cc is the
 * arch's number: the compute capability for a GPU (90 for sm_90), the x86-64 level for a CPU
 * (4 for x86-64-v4). arch_specific: a GPU arch with a suffix (sm_90a); always false on a CPU. */
struct ArchSelect {
  int cc;
  bool arch_specific;
  int (*select)(const int64_t* values); /* kernel index */
};

/* One operator: its signature, its dispatchers, and how its shape values become a GEMM. */
struct OpDesc {
  const char* name;
  const char* const* arg_names; /* in argument order: X, W, [bias], Y */
  int n_args;
  int bias_arg;   /* index of the bias argument, -1 when none */
  int weights_arg; /* the argument dietcode_declare_constant takes (dense's W, conv2d's
                      filters); -1 when none (batch_matmul) */
  int elem_bytes; /* of every tensor */
  const char* const* var_names;
  int n_vars;
  const ArchSelect* selects; /* one per target arch; [0] is the newest arch's */
  int n_selects;
  /* batch, m, n, k, strides, conv; 0 when a dimension or stride does not fit its field */
  int (*fill_shape)(const int64_t* values, DietcodeArgs* args);
  const KernelDesc* kernels;
  int n_kernels;
};

struct PackDesc {
  const char* name;
  const char* manifest;
  const OpDesc* ops;
  int n_ops;
};

/* Defined by the generated translation unit. */
extern const PackDesc kPack;

/* dietcode_launch for an op already found: what the typed wrappers call, so a wrapper never
 * goes through an exported symbol another library could interpose. Defined by the runtime. */
int launch_op(const OpDesc& op, void* const* args, int n_args, const int64_t* values, int n_values,
              void* stream);

/* For a >= 0, b >= 1; never overflows, unlike (a + b - 1) / b near INT64_MAX. */
inline int64_t ceil_div(int64_t a, int64_t b) { return a / b + (a % b != 0); }

/* a * b, or -1 when the product does not fit int64 or a factor is -1 (an earlier overflow). */
inline int64_t checked_mul(int64_t a, int64_t b) {
  int64_t out;
  return a < 0 || b < 0 || __builtin_mul_overflow(a, b, &out) ? -1 : out;
}

}  // namespace dietcode_pack

#endif /* DIETCODE_PACK_DESC_H_ */

/* The loader runtime compiled into every CPU (x86-64) kernel pack: what a kernel is on a CPU
 * and which dispatcher serves a CPU; the rest of the pack's description is the same for every
 * target (pack_desc.h).
 *
 * This file and pack_runtime_cpu.cc are built into each CPU libNAME.so, never into dietcode
 * itself (dietcode embeds their text, like the GPU runtime's). They depend on nothing but libc,
 * libstdc++, pthreads and the plain-C headers every pack ships with (dietcode/pack_abi.h,
 * dietcode_args.h, x86/dietcode_cpu.h), plus the thread pool, cpu_thread_pool.h. */
#ifndef DIETCODE_PACK_RUNTIME_CPU_H_
#define DIETCODE_PACK_RUNTIME_CPU_H_

#include "pack_desc.h"
#include "x86/dietcode_cpu.h"

namespace dietcode_pack {

/* One kernel of a CPU pack (pack_desc.h declares it for every target): its entry point, linked
 * into the pack from an object compiled for its template's ISA level. */
struct KernelDesc {
  DietcodeCpuKernelFn entry;
  int level;               /* the x86-64 level it was compiled for: 3 (AVX2) or 4 (AVX-512) */
  int min_alignment_bytes; /* pointers a, b, c must be aligned to this (at least the element) */
  /* Constant weights (templates/x86/ops_x86.h: prepack, run_prepacked), or NULL for a kernel
   * that reads B in place anyway: prepack writes the weights' panels of width panel_nr per
   * K block of panel_kc into dst (64-byte aligned) and returns their float count (dst NULL:
   * the count alone; <= 0: nothing to pack); run_prepacked runs the kernel on them. */
  long long (*prepack)(const DietcodeArgs* args, float* dst);
  int (*run_prepacked)(const DietcodeArgs* args, const DietcodeCpuRuntime* rt,
                       const float* b_panels);
  int panel_nr, panel_kc;
};

/* Which dispatcher serves a CPU of x86-64 level `level`: the one of the highest level not above
 * it (its kernels all run there); -1 when every dispatcher needs a newer CPU. ArchSelect::cc
 * holds the dispatcher's level. */
inline int pick_level_dispatcher(const OpDesc& op, int level) {
  int best = -1;
  for (int i = 0; i < op.n_selects; ++i)
    if (op.selects[i].cc <= level && (best < 0 || op.selects[i].cc > op.selects[best].cc)) best = i;
  return best;
}

}  // namespace dietcode_pack

#endif /* DIETCODE_PACK_RUNTIME_CPU_H_ */

// Everything about building a pack that depends on the machines it is for, behind one seam so
// that choosing kernels, fitting dispatchers, the manifest and the generated wrappers are the
// same code for every target. One implementation per Target:
//   pack_target_cuda.cc  NVIDIA GPUs: CUBINs per sm_XX arch + PTX, the driver-loading runtime
//   pack_target_cpu.cc   x86-64 CPUs: kernels compiled for their ISA level and linked into the
//                        pack, the thread-pool runtime that picks its level by cpuid
#pragma once

#include <string>
#include <vector>

#include "codegen/generated_kernel.h"
#include "nvrtc/compiler.h"
#include "pack/pack_request.h"
#include "pack/pack_source.h"
#include "space/micro_kernel.h"
#include "space/target.h"

namespace dietcode {

class PackTarget {
 public:
  virtual ~PackTarget() = default;
  virtual Target target() const = 0;

  // ---- building: which archs, which kernels run where, what to compile

  // An arch as the number the runtime orders and picks by: the compute capability for a GPU
  // ("sm_90a" -> 90, *specific = true), the x86-64 level for a CPU ("x86-64-v4" -> 4). Throws
  // UserError naming the arch and the form expected.
  virtual int arch_number(const std::string& arch, bool* specific = nullptr) const = 0;
  // The archs a pack gets when none are asked for, given every candidate kernel of its ops and
  // the arch of the machine it is built for ("" when unknown; see PackBuildOptions).
  virtual std::vector<std::string> default_archs(const std::vector<MicroKernel>& candidates,
                                                 const std::string& home_arch) const = 0;
  // The one arch of a pack that can run this candidate's kernels, or "" when every arch of the
  // pack can: "sm_90a" for a wgmma kernel, "x86-64-v4" for an AVX-512 one (a pack's archs go
  // up to v4). Dispatchers of other archs never pick it.
  virtual std::string bound_arch(const MicroKernel& mk) const = 0;
  // How much faster, as a fraction of its time, a kernel every arch of the pack runs must have
  // been measured than the kernels bound to an arch before that arch's dispatcher serves it
  // (PackBuildOptions::portable_margin). 0: the measured times decide alone.
  virtual double portable_kernel_margin() const { return 0; }
  // How much slower than timed this kernel counts where the pack chooses between it and kernels
  // bound to an arch, at the default margin: 1 + portable_kernel_margin() for a kernel every
  // arch runs, 1 for a bound one (what `tune` picks the runoff's finalists by).
  double serving_factor(const MicroKernel& mk) const {
    return bound_arch(mk).empty() ? 1 + portable_kernel_margin() : 1.0;
  }
  // What to compile to check a kernel and get its binaries, for a pack of these archs.
  virtual CompileRequest compile_request(const GeneratedKernel& kernel, const MicroKernel& mk,
                                         const std::vector<std::string>& pack_archs) const = 0;

  // ---- the pack's sources (pack_source.cc calls these)

  // The runtime the pack compiles and links with, and what it needs.
  virtual PackRuntime runtime() const = 0;
  // What NAME.h says about pointers and the stream, as comment lines (" * ..." each).
  virtual std::string header_note() const = 0;
  // C++ (inside namespace dietcode_pack, anonymous namespace) that defines
  // `const KernelDesc kernels_<id>[]`, one row per kernel of op `p`, in kernel order; blobs
  // and kernel units it needs are added to `out`. Code needed at file scope (declarations of
  // extern "C" entries) is appended to `file_scope`.
  virtual std::string kernel_table(const PackRequest& request, const PackOp& p,
                                   const std::string& id, PackSources& out,
                                   std::string& file_scope) const = 0;
};

// The implementation for a target; lives for the whole program.
const PackTarget& pack_target(Target target);

}  // namespace dietcode

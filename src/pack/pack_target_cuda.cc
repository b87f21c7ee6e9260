// The GPU side of a pack (pack_target.h): archs are sm_XX (sm_90a for kernels bound to one
// compute capability), each kernel is a CUBIN per arch plus PTX for newer GPUs, embedded with
// .incbin, and the runtime (pack_runtime.cc) loads them through the driver it dlopens.
#include <algorithm>

#include "common/error.h"
#include "pack/manifest.h"
#include "pack/pack_target.h"

namespace dietcode {
namespace {

class CudaPackTarget : public PackTarget {
 public:
  Target target() const override { return Target::kCuda; }

  int arch_number(const std::string& arch, bool* specific) const override {
    return dietcode::arch_number(arch, specific);
  }

  // The home GPU's arch (else sm_90), plus its arch-specific twin when a candidate needs it:
  // tuned on an H100 or H200, the wgmma kernels that won are sm_90a kernels, and a pack of
  // sm_90 alone would leave every one of them out and dispatch to the slower mma.sync ones.
  std::vector<std::string> default_archs(const std::vector<MicroKernel>& candidates,
                                         const std::string& home_arch) const override {
    std::vector<std::string> archs = {home_arch.empty() ? "sm_90" : home_arch};
    bool specific = false;
    const int home = dietcode::arch_number(archs[0], &specific);
    if (specific) return archs;
    for (const MicroKernel& mk : candidates) {
      const std::string bound = bound_arch(mk);
      if (bound.empty() || dietcode::arch_number(bound) != home) continue;
      if (std::find(archs.begin(), archs.end(), bound) == archs.end()) archs.push_back(bound);
    }
    return archs;
  }

  std::string bound_arch(const MicroKernel& mk) const override {
    std::string suffix = template_arch_suffix(mk.tmpl);
    return suffix.empty() ? "" : "sm_90" + suffix;
  }

  CompileRequest compile_request(const GeneratedKernel& g, const MicroKernel& mk,
                                 const std::vector<std::string>& archs) const override {
    CompileRequest r;
    r.name = mk.tmpl + ".cu";
    r.source = g.source;
    r.options = g.options;
    r.archs = archs;
    r.want_ptx = true;
    if (!g.arch_suffix.empty()) {
      // An arch-specific kernel (wgmma: sm_90a) runs on exactly one compute capability and has
      // no PTX fallback: it is built for that arch alone, and only dispatchers of that arch
      // pick it (bound_arch).
      r.archs = {"sm_90" + g.arch_suffix};
      r.want_ptx = false;
    }
    return r;
  }

  PackRuntime runtime() const override {
    return {"pack_runtime.h", "pack_runtime.cc", true, {"-ldl"}};
  }

  std::string header_note() const override {
    return " * Pointers are device pointers in the current CUDA context; stream is a\n"
           " * CUstream/cudaStream_t (NULL: the default stream).\n";
  }

  std::string kernel_table(const PackRequest& request, const PackOp& p, const std::string& id,
                           PackSources& out, std::string&) const override {
    const OpSpec& op = *p.op;
    auto add_blob = [&](std::string file, const std::string& bytes, bool nul) {
      out.blobs.push_back({std::move(file), bytes, nul});
      return out.blobs.size() - 1;
    };
    std::string code, rows;
    for (size_t k = 0; k < p.kernels.size(); ++k) {
      const PackKernel& kernel = p.kernels[k];
      const LaunchPlan& plan = kernel.generated.plan;
      std::string kid = id + "_" + std::to_string(k);
      std::string images;
      int n_images = 0;
      for (const std::string& arch : request.archs) {
        const ArchBinary* bin = kernel.compiled.binary(arch);
        // An arch-specific kernel (wgmma) has its one CUBIN; only that arch's dispatcher
        // picks it.
        if ((!bin || bin->cubin.empty()) && !kernel.generated.arch_suffix.empty()) continue;
        if (!bin || bin->cubin.empty())
          throw std::logic_error("op " + op.name + " kernel " + std::to_string(k) +
                                 ": no CUBIN for " + arch);
        ++n_images;
        bool specific = false;
        int cc = arch_number(arch, &specific);
        size_t blob = add_blob("k" + kid + "_" + arch + ".cubin", bin->cubin, false);
        images += "    {" + std::to_string(cc) + ", " + (specific ? "true" : "false") + ", " +
                  pack_blob_symbol(blob) + ", " + std::to_string(bin->cubin.size()) + "},\n";
      }
      if (n_images == 0)
        throw std::logic_error("op " + op.name + " kernel " + std::to_string(k) +
                               ": no CUBIN for any arch of the pack");
      code += "const CubinImage cubins_" + kid + "[] = {\n" + images + "};\n";
      std::string ptx = "nullptr", ptx_cc = "0";
      if (!kernel.compiled.ptx.empty()) {
        size_t blob = add_blob("k" + kid + ".ptx", kernel.compiled.ptx, true);
        ptx = "reinterpret_cast<const char*>(" + pack_blob_symbol(blob) + ")";
        ptx_cc = std::to_string(dietcode::arch_number(kernel.compiled.ptx_arch));
      }
      rows += "    {" + c_string_literal(plan.entry) + ", " + c_string_literal(plan.reduce_entry) +
              ", " + std::to_string(plan.threads) + ", " + std::to_string(plan.dynamic_smem_bytes) +
              ", " + std::to_string(plan.tile_m) + ", " + std::to_string(plan.tile_n) + ", " +
              std::to_string(plan.m_tiles_per_block) + ", " + std::to_string(plan.split_k) + ", " +
              std::to_string(plan.reduce_threads) + ", " +
              std::to_string(plan.min_alignment_bytes) + ", " + std::to_string(plan.tma_box_k) +
              ", cubins_" + kid + ", " + std::to_string(n_images) + ", " + ptx + ", " + ptx_cc +
              "},\n";
    }
    return code + "const KernelDesc kernels_" + id + "[] = {\n" + rows + "};\n";
  }
};

}  // namespace

const PackTarget& cuda_pack_target() {
  static const CudaPackTarget target;
  return target;
}

}  // namespace dietcode

// The CPU side of a pack (pack_target.h): archs are x86-64 ISA levels, each kernel is compiled
// from its generated source for its own template's level (AVX2: x86-64-v3, AVX-512: x86-64-v4)
// into an object linked into the pack (kernel units), and the runtime (pack_runtime_cpu.cc)
// runs them on its thread pool, with the dispatcher of the highest level the CPU has.
#include <algorithm>
#include <set>

#include "common/error.h"
#include "pack/pack_kernel_units.h"
#include "pack/pack_target.h"
#include "space/template_space.h"
#include "space/templates.h"

namespace dietcode {
namespace {

constexpr const char* kTopLevel = "x86-64-v4";  // the newest level any template needs

// The unit a kernel becomes, named by its entry (ops that chose the same instantiation share
// it): its source with the constant-weights entries after it, compiled for its template's level.
KernelUnit kernel_unit(const GeneratedKernel& g, const MicroKernel& mk) {
  KernelUnit unit;
  unit.file = "kernel_" + g.plan.entry + ".cc";
  unit.source = g.source;
  unit.flags = kernel_unit_flags(x86_isa_level(mk.tmpl), g.options);
  unit.entries = {g.plan.entry};
  const ConstantWeightsEntries& cw = g.constant_weights;
  if (!cw.prepack.empty()) {
    unit.source += cw.source;
    unit.entries.push_back(cw.prepack);
    unit.entries.push_back(cw.run_prepacked);
  }
  return unit;
}

// Whether `image` is a relocatable ELF object (e_type ET_REL), which the pack can link: what
// PackObjectCompiler makes. Another Compiler's shared object is only the check's.
bool is_relocatable_object(const std::string& image) {
  constexpr char kElfMagic[] = {0x7f, 'E', 'L', 'F'};
  return image.size() > 17 && image.compare(0, 4, kElfMagic, 4) == 0 && image[16] == 1 &&
         image[17] == 0;
}

class CpuPackTarget : public PackTarget {
 public:
  Target target() const override { return Target::kCpu; }

  int arch_number(const std::string& arch, bool* specific) const override {
    if (specific) *specific = false;
    if (arch == "x86-64-v3") return 3;
    if (arch == "x86-64-v4") return 4;
    throw UserError("'" + arch + "' is not an x86-64 level a CPU pack can have (expected " +
                    "x86-64-v3 or x86-64-v4)");
  }

  // Every level a candidate needs (so v3 whenever there is an AVX2 kernel), oldest first.
  // The CPU's levels come from the kernels alone: a pack built on an AVX-512 host may well be
  // meant for AVX2 servers too.
  std::vector<std::string> default_archs(const std::vector<MicroKernel>& candidates,
                                         const std::string&) const override {
    std::set<std::string> levels;
    for (const MicroKernel& mk : candidates) levels.insert(x86_isa_level(mk.tmpl));
    if (levels.empty()) levels.insert("x86-64-v3");
    return {levels.begin(), levels.end()};
  }

  // An AVX2 kernel in the x86-64-v4 dispatcher, only for a gain beyond 10%. Where an AVX-512
  // core's vector units are no wider than two AVX2 ones (Zen 4), the two templates' kernels
  // can time level, but the AVX2 one issues twice the instructions per FLOP, and on a shared
  // Zen 4 host it ran 1.2-1.4x slower than its AVX-512 twin through whole bench runs and level
  // in other phases (docs/results/cpu/README.md, AT): AVX2 kernels a tune had timed in a
  // level phase were the packs' slowest instances in the bench. Where an AVX2 kernel wins
  // for real (T = 1 of BERT, a 16-row problem, by up to 50%) the margin leaves it.
  double portable_kernel_margin() const override { return 0.10; }

  // An AVX-512 kernel runs on x86-64-v4 alone; an AVX2 one on v3 and on v4.
  std::string bound_arch(const MicroKernel& mk) const override {
    std::string level = x86_isa_level(mk.tmpl);
    return level == kTopLevel ? level : "";
  }

  // Compiled for the template's level only, whatever levels the pack has: an AVX2 kernel in a
  // v4 dispatcher is the same AVX2 code that was tuned. The request is the kernel's whole unit,
  // so that PackObjectCompiler's object is what the pack links (kernel_table).
  CompileRequest compile_request(const GeneratedKernel& g, const MicroKernel& mk,
                                 const std::vector<std::string>&) const override {
    const KernelUnit unit = kernel_unit(g, mk);
    CompileRequest r;
    r.name = unit.file;
    r.source = unit.source;
    r.options = g.options;
    r.archs = {x86_isa_level(mk.tmpl)};
    r.want_ptx = false;
    r.entries = unit.entries;
    return r;
  }

  PackRuntime runtime() const override {
    return {"pack_runtime_cpu.h", "pack_runtime_cpu.cc", false, {"-pthread", "-ldl"}};
  }

  std::string header_note() const override {
    return " * This is a CPU pack: pointers are host pointers and stream must be NULL; each\n"
           " * call runs the op on the pack's thread pool (dietcode_set_num_threads) and\n"
           " * returns when it is done.\n";
  }

  std::string kernel_table(const PackRequest&, const PackOp& p, const std::string& id,
                           PackSources& out, std::string& file_scope) const override {
    std::string rows;
    for (const PackKernel& kernel : p.kernels) {
      const std::string& entry = kernel.generated.plan.entry;
      const ConstantWeightsEntries& cw = kernel.generated.constant_weights;
      const std::string level = x86_isa_level(kernel.mk.tmpl);
      // Ops that chose the same instantiation share its entry (named by a hash of it).
      bool known = std::any_of(out.kernel_units.begin(), out.kernel_units.end(),
                               [&](const KernelUnit& u) { return u.entries[0] == entry; });
      if (!known) {
        KernelUnit unit = kernel_unit(kernel.generated, kernel.mk);
        if (const ArchBinary* built = kernel.compiled.binary(level))
          if (is_relocatable_object(built->cubin)) unit.object = built->cubin;
        file_scope += "int " + entry + "(const DietcodeArgs*, const DietcodeCpuRuntime*);\n";
        if (!cw.prepack.empty())
          file_scope += "long long " + cw.prepack + "(const DietcodeArgs*, float*);\n" + "int " +
                        cw.run_prepacked +
                        "(const DietcodeArgs*, const DietcodeCpuRuntime*, const float*);\n";
        out.kernel_units.push_back(std::move(unit));
      }
      const bool has_cw = !cw.prepack.empty();
      rows += "    {" + entry + ", " + std::to_string(arch_number(level, nullptr)) + ", " +
              std::to_string(std::max(kernel.generated.plan.min_alignment_bytes, 1)) + ", " +
              (has_cw ? cw.prepack : "nullptr") + ", " +
              (has_cw ? cw.run_prepacked : "nullptr") + ", " + std::to_string(cw.panel_nr) +
              ", " + std::to_string(cw.panel_kc) + "},\n";
    }
    return "const KernelDesc kernels_" + id + "[] = {\n" + rows + "};\n";
  }
};

}  // namespace

const PackTarget& cpu_pack_target() {
  static const CpuPackTarget target;
  return target;
}

}  // namespace dietcode

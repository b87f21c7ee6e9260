// The CPU side of a pack (pack_target.h): archs are x86-64 ISA levels, each kernel is compiled
// from its generated source for its own template's level (AVX2: x86-64-v3, AVX-512: x86-64-v4)
// into an object linked into the pack (kernel units), and the runtime (pack_runtime_cpu.cc)
// runs them on its thread pool, with the dispatcher of the highest level the CPU has.
#include <algorithm>
#include <set>

#include "common/error.h"
#include "pack/pack_target.h"
#include "space/template_space.h"
#include "space/templates.h"
#include "x86/cxx_compiler.h"

namespace dietcode {
namespace {

constexpr const char* kTopLevel = "x86-64-v4";  // the newest level any template needs

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

  // An AVX-512 kernel runs on x86-64-v4 alone; an AVX2 one on v3 and on v4.
  std::string bound_arch(const MicroKernel& mk) const override {
    std::string level = x86_isa_level(mk.tmpl);
    return level == kTopLevel ? level : "";
  }

  // Compiled for the template's level only, whatever levels the pack has: an AVX2 kernel in a
  // v4 dispatcher is the same AVX2 code that was tuned.
  CompileRequest compile_request(const GeneratedKernel& g, const MicroKernel& mk,
                                 const std::vector<std::string>&) const override {
    CompileRequest r;
    r.name = mk.tmpl + ".cc";
    r.source = g.source;
    r.options = g.options;
    r.archs = {x86_isa_level(mk.tmpl)};
    r.want_ptx = false;
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
        KernelUnit unit;
        unit.file = "kernel_" + entry + ".cc";
        unit.source = kernel.generated.source;
        // The tuner's flags (CxxCompiler), for an object rather than a shared object.
        for (const std::string& flag : CxxCompiler::flags(level))
          if (flag != "-shared") unit.flags.push_back(flag);
        unit.flags.insert(unit.flags.end(), kernel.generated.options.begin(),
                          kernel.generated.options.end());
        unit.entries = {entry};
        file_scope += "int " + entry + "(const DietcodeArgs*, const DietcodeCpuRuntime*);\n";
        if (!cw.prepack.empty()) {
          unit.source += cw.source;
          unit.entries.push_back(cw.prepack);
          unit.entries.push_back(cw.run_prepacked);
          file_scope += "long long " + cw.prepack + "(const DietcodeArgs*, float*);\n" + "int " +
                        cw.run_prepacked +
                        "(const DietcodeArgs*, const DietcodeCpuRuntime*, const float*);\n";
        }
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

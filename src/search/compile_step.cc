#include "search/compile_step.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <sstream>

#include "nvrtc/stable_hash.h"
#include "space/space.h"

namespace dietcode {

namespace {

constexpr size_t kMaxErrorLength = 200;

// Threads x registers and static + dynamic shared memory against one block's share of the SM.
bool fits_block(const KernelResources& r, const LaunchPlan& plan, const GpuSpec& gpu,
                std::string* why) {
  const int64_t registers = int64_t(r.registers) * plan.threads;
  if (registers > gpu.regs_per_block) {
    *why = fmt::format("{} registers per block ({} per thread x {} threads) exceed the GPU's {}",
                       registers, r.registers, plan.threads, gpu.regs_per_block);
    return false;
  }
  const int64_t smem = int64_t(r.static_smem) + plan.dynamic_smem_bytes;
  if (smem > gpu.smem_per_block_optin) {
    *why = fmt::format("{} bytes of shared memory per block exceed the GPU's {}", smem,
                       gpu.smem_per_block_optin);
    return false;
  }
  return true;
}

}  // namespace

std::string BinarySet::check_and_add(const std::string& key, const std::string& binary) {
  const uint64_t hash = stable_hash(binary);
  auto range = seen_.equal_range(hash);
  for (auto it = range.first; it != range.second; ++it)
    if (it->second.second == binary) return it->second.first;  // FNV is not collision-free
  seen_.emplace(hash, std::make_pair(key, binary));
  return "";
}

std::string first_error_line(const std::string& log) {
  std::istringstream in(log);
  std::string line, first;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (first.empty()) first = line;
    if (line.find("error") != std::string::npos) {
      first = line;
      break;
    }
  }
  first.erase(std::remove(first.begin(), first.end(), '\r'), first.end());
  if (first.size() > kMaxErrorLength) first = first.substr(0, kMaxErrorLength - 3) + "...";
  return first.empty() ? "the compiler produced no binary" : first;
}

const KernelResources* main_entry_resources(const CompileResult& result, const LaunchPlan& plan,
                                            const std::string& arch) {
  const ArchBinary* binary = result.binary(arch);
  if (!binary) return nullptr;
  for (const KernelResources& r : binary->resources)
    if (r.entry == plan.entry) return &r;
  return nullptr;
}

std::vector<CompiledCandidate> compile_candidates(Compiler& compiler, const OpSpec& op,
                                                  const std::vector<MicroKernel>& mks,
                                                  const GpuSpec& gpu,
                                                  const CompileStepOptions& options,
                                                  BinarySet& binaries, CompileStats* stats) {
  std::vector<CompiledCandidate> out(mks.size());
  std::vector<CompileRequest> requests;
  for (size_t i = 0; i < mks.size(); ++i) {
    out[i].mk = mks[i];
    out[i].kernel = generate_kernel(op, mks[i]);
    CompileRequest request;
    request.name = out[i].kernel.name + ".cu";
    request.source = out[i].kernel.source;
    const ConstantWeightsEntries& cw = out[i].kernel.constant_weights;
    if (options.constant_weights && !cw.prepack.empty()) {
      // Only the prepacked entries are timed in this regime (the worker loads no other).
      request.source = cw.standalone_source;
      LaunchPlan& plan = out[i].kernel.plan;
      plan.prepack_entry = cw.prepack;
      plan.prepacked_entry = cw.run_prepacked;
      plan.panel_nr = cw.panel_nr;
      plan.panel_kc = cw.panel_kc;
    }
    request.options = out[i].kernel.options;
    // Arch-specific kernels (wgmma) build for e.g. sm_90a; the space only offers them there.
    request.archs = {compile_arch(out[i].kernel, options.arch)};
    request.want_ptx = false;  // tuning times the device's own CUBIN; packs add PTX later
    requests.push_back(std::move(request));
  }
  ParallelCompileOptions parallel;
  parallel.jobs = options.jobs;
  std::vector<CompileResult> results = compile_all(compiler, requests, parallel, stats);

  for (size_t i = 0; i < out.size(); ++i) {
    CompiledCandidate& c = out[i];
    c.compiled = std::move(results[i]);
    // The arch it was built for, suffix included: a wgmma kernel's CUBIN is sm_90a's.
    const std::string arch = compile_arch(c.kernel, options.arch);
    const ArchBinary* binary = c.compiled.binary(arch);
    if (!c.compiled.ok || !binary || binary->cubin.empty()) {
      c.status = MeasureStatus::kCompileError;
      c.error = c.compiled.ok ? "no " + arch + " binary" : first_error_line(c.compiled.log);
      continue;
    }
    std::string why;
    if (!fits_registers(c.compiled, gpu, &why)) {
      c.status = MeasureStatus::kDeviceLimitsExceeded;
      c.error = why;
      continue;
    }
    if (const KernelResources* r = main_entry_resources(c.compiled, c.kernel.plan, arch))
      if (!fits_block(*r, c.kernel.plan, gpu, &why)) {
        c.status = MeasureStatus::kDeviceLimitsExceeded;
        c.error = why;
        continue;
      }
    // What the host decides is part of what is run: candidates compiled in one batch share one
    // shared object (the C++ compiler's), each with an entry of its own, and dense_wgmma's
    // M_TILES changes the grid alone, never the binary.
    c.duplicate_of =
        binaries.check_and_add(c.mk.key(), c.kernel.plan.host_key() + '\n' + binary->cubin);
  }
  return out;
}

}  // namespace dietcode

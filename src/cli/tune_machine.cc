#include "cli/tune_machine.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/error.h"
#include "nvrtc/nvrtc_compiler.h"
#include "space/templates.h"
#include "x86/cpu_measurer.h"
#include "x86/cxx_compiler.h"
#include "x86/host_cpu.h"
#include "x86/host_cpu_spec.h"

namespace dietcode::cli {

namespace {

// Every CPU template needs AVX2 and FMA at least.
constexpr int kMinCpuLevel = 3;
// Timing on a CPU costs the kernel's own run time (milliseconds for BERT's larger shapes, not
// microseconds): a kernel is timed on at most 24 instances (beyond, half where it is predicted
// to gain most, half by priority), one warm-up and three timed runs each, the median of three
// being steady enough to rank candidates (bench times with more); rounds of 8 kernels. A pack
// is built from kernels timed on every instance, so CPU workloads list up to 24 instances
// (configs/workloads/bert_base_dense_cpu.json: every 8th T); the pack dispatches any value.
constexpr size_t kCpuInstancesPerKernel = 24;
constexpr int kCpuKernelsPerRound = 8;
constexpr int kCpuWarmup = 1;
constexpr int kCpuRepeats = 3;

TuneMachine open_gpus(const TuneMachineRequest& request) {
  TuneMachine m;
  m.target = Target::kCuda;
  auto nvrtc = std::make_unique<NvrtcCompiler>();
  const std::string fingerprint = nvrtc->fingerprint();
  m.backend = std::move(nvrtc);
  m.compiler =
      std::make_unique<CachingCompiler>(*m.backend, fingerprint, default_kernel_cache_dir());
  m.devices = open_tune_devices(request.gpu, *m.compiler);
  m.regime = request.gpu.flush_l2 ? "L2 flushed before every timing" : "L2 warm";
  const std::vector<int>& ordinals = m.devices.ordinals;
  if (ordinals.size() > 1)
    m.where = "GPUs " + ordinals_text(ordinals);
  else if (ordinals.size() == 1 && ordinals[0] != 0)
    m.where = "GPU " + ordinals_text(ordinals);
  return m;
}

TuneMachine open_cpu(const TuneMachineRequest& request) {
  const HostCpu host = detect_host_cpu();
  if (host.isa_level_number < kMinCpuLevel)
    throw EnvironmentError(fmt::format(
        "dietcode tune --target cpu: {} is {}; every CPU template needs x86-64-v3 (AVX2 and "
        "FMA) or newer",
        host.model_name, host.isa_level));
  if (request.threads < 0)
    throw UserError(
        fmt::format("dietcode tune: --threads: expected a positive integer, got {}",
                    request.threads));
  // --arch: the highest level whose templates are tuned; at most the host's, as they run here.
  const int level = request.cpu_arch.empty()
                        ? host.isa_level_number
                        : cpu_template_level(request.cpu_arch, host, "dietcode tune: --arch");
  TuneMachine m;
  m.target = Target::kCpu;
  // Probe the peak and bandwidth before the worker's pinned threads exist.
  m.cpu = host_cpu_spec(host, request.threads);
  m.cpu.weights_prepacked = request.constant_weights;
  // The search offers the templates up to this level (spaces_for); the worker still names
  // the host's own level, as the records are measurements on this CPU.
  m.cpu.isa_level = isa_level_name(level);
  auto cxx = std::make_unique<CxxCompiler>(CxxCompilerOptions{request.cxx});
  const std::string fingerprint = cxx->fingerprint();
  m.backend = std::move(cxx);
  m.compiler =
      std::make_unique<CachingCompiler>(*m.backend, fingerprint, default_kernel_cache_dir());

  CpuMeasurerOptions options;
  options.threads = m.cpu.threads;
  options.arch = host.isa_level;
  options.measure.flush_l2 = request.gpu.flush_l2;
  options.measure.seed = request.gpu.seed;
  options.measure.warmup = kCpuWarmup;
  options.measure.repeats = kCpuRepeats;
  options.constant_weights = request.constant_weights;
  m.max_instances_per_kernel = kCpuInstancesPerKernel;
  m.kernels_per_round = kCpuKernelsPerRound;
  m.devices.measurers.push_back(
      std::make_unique<CpuMeasurer>(std::make_unique<WorkerProcess>(cpu_worker_command()),
                                    options));
  m.devices.ordinals = {0};
  m.regime = request.gpu.flush_l2 ? "caches evicted before every timing" : "caches warm";
  if (request.constant_weights) m.regime += ", weights packed once (constant)";
  m.where = fmt::format("{} thread{}", m.cpu.threads, m.cpu.threads == 1 ? "" : "s");
  if (level < host.isa_level_number) m.where += ", kernels up to " + m.cpu.isa_level;
  return m;
}

}  // namespace

std::vector<const TemplateSpace*> TuneMachine::spaces_for(const OpSpec& op) const {
  std::vector<const TemplateSpace*> spaces = template_spaces_for(op, target);
  if (target == Target::kCpu)
    std::erase_if(spaces, [this](const TemplateSpace* t) {
      return isa_level_number(x86_isa_level(t->tmpl)) > isa_level_number(cpu.isa_level);
    });
  return spaces;
}

TuneMachine open_tune_machine(const TuneMachineRequest& request) {
  return request.target == Target::kCpu ? open_cpu(request) : open_gpus(request);
}

}  // namespace dietcode::cli

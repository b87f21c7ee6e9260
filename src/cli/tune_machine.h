// What `dietcode tune` compiles with and measures on, for either target, so the tune command
// itself never asks which:
//   cuda  NVRTC through the kernel cache, one GPU or several (tune_devices.h), or a simulated
//         one (a TEST DOUBLE);
//   cpu   the system C++ compiler through the same cache, and this host's cores in a measuring
//         worker (x86/cpu_measurer.h), with the CPU's figures (caches, FMA peak, bandwidth)
//         probed once before the worker starts, so its pinned threads do not disturb them.
#pragma once

#include <memory>
#include <string>

#include "cli/tune_devices.h"
#include "nvrtc/compiler.h"
#include "nvrtc/kernel_cache.h"
#include "space/cpu_spec.h"
#include "space/target.h"
#include "space/template_space.h"

namespace dietcode::cli {

struct TuneMachineRequest {
  Target target = Target::kCuda;
  DeviceRequest gpu;  // cuda: which GPUs, or which to simulate; flush_l2 counts for both
  int threads = 0;    // cpu: workers a kernel gets; 0: every CPU of the affinity mask
  std::string cxx;    // cpu: --cxx, the C++ compiler; empty: $CXX, g++, clang++
  // cpu: --arch, the highest x86-64 level whose templates are tuned ("x86-64-v3" on an
  // AVX-512 host tunes the AVX2 kernels alone, for AVX2 servers); empty: the host's level.
  std::string cpu_arch;
  // cpu: --constant-weights, the weights regime of the timings (DeviceIdentity).
  bool constant_weights = false;
};

struct TuneMachine {
  Target target = Target::kCuda;
  std::unique_ptr<Compiler> backend;  // NVRTC or the C++ compiler
  std::unique_ptr<CachingCompiler> compiler;
  TuneDevices devices;  // the measurers; for the CPU one, and a default GpuSpec
  CpuSpec cpu;          // cpu: the host's figures
  std::string regime;   // for the header line: "L2 flushed before every timing", ...
  std::string where;    // for the header line: "2 threads", "GPUs 0,1", or ""
  // The search's pace where the machine's differs from a GPU's (0 keeps the default): a GPU
  // times a kernel on all 128 BERT instances in well under a second; two CPU cores need ~20 s
  // for fc1 alone. So the CPU times each kernel on a sample of the instances and lets the
  // cost model carry the rest, and takes smaller rounds so the model is retrained as often.
  size_t max_instances_per_kernel = 0;  // JointSearchOptions::max_instances_per_kernel
  int kernels_per_round = 0;            // JointSearchOptions::kernels_per_round

  // The templates an op may use here: the target's, and on a CPU only ISA levels it runs.
  std::vector<const TemplateSpace*> spaces_for(const OpSpec& op) const;
};

// Throws EnvironmentError when there is nothing to tune on (no GPU, no NVRTC, no C++ compiler,
// a CPU below x86-64-v3), UserError for bad requests.
TuneMachine open_tune_machine(const TuneMachineRequest& request);

}  // namespace dietcode::cli

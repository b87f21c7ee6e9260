// `dietcode build` without the command line: choices -> dispatcher -> kernels -> pack.
//
//   1. per op, ask the ChoicesProvider for candidates and timings (the fallback provider when
//      it has none: an untuned op);
//   2. fit the regret-minimising tree (at most max_kernels kernels) and keep the kernels it uses:
//      one tree per group of target archs that can run the same kernels (an sm_80,sm_90a
//      pack dispatches over its sm_90a-only wgmma kernels on sm_90a alone; a
//      x86-64-v3,x86-64-v4 CPU pack over its AVX-512 kernels on v4 alone);
//   3. generate and compile those kernels for every arch, all ops in one parallel batch; a
//      kernel that no longer compiles is dropped and its op refitted without it;
//   4. write libNAME.so and NAME.h (pack_writer.h).
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "dispatch/decision_tree.h"
#include "nvrtc/compiler.h"
#include "pack/choices.h"
#include "pack/pack_writer.h"
#include "space/target.h"
#include "workload/workload.h"

namespace dietcode {

struct PackBuildOptions {
  Target target = Target::kCuda;  // every candidate must be of this target's templates
  // Empty: the target's default for the candidates and home_arch (a GPU pack: home_arch and,
  // when tuned kernels need it, its arch-specific twin such as sm_90a; a CPU pack: the ISA
  // levels the kernels need).
  std::vector<std::string> archs = {"sm_90"};
  std::string home_arch;  // the GPU the pack is built for, when archs is empty: "sm_80", "sm_90"
  TreeFitOptions tree = {8, 10, 0.0};  // at most 8 kernels per op by default
  // A dispatcher of an arch that has kernels of its own (x86-64-v4: the AVX-512 ones) is fitted
  // with the times of the kernels every arch runs (the AVX2 ones) taken this fraction longer:
  // it serves one of those only where it was measured more than that much faster. The regret
  // the report shows is still against the times as measured. None: the target's
  // (PackTarget::portable_kernel_margin).
  std::optional<double> portable_margin;
  int jobs = 0;                        // parallel compiles; 0 = one per core
  PackWriteOptions write;
  std::function<void(const std::string&)> log;  // progress lines for people
};

// One dispatcher of an op (see PackDispatcher): its archs, its tree, and the time it loses
// over the tuned instances against the best kernel measured there that runs on its archs.
struct DispatcherReport {
  std::vector<std::string> archs;
  int kernels = 0;  // distinct kernels in its leaves
  int leaves = 0, depth = 0;
  TreeQuality quality;
};

struct OpBuildReport {
  std::string op;
  bool tuned = false;  // false: the fallback's choice
  int candidates = 0;  // kernels with timings
  int instances = 0;   // tuned instances with any timing
  int kernels = 0;     // in the pack, over all dispatchers
  std::vector<DispatcherReport> dispatchers;  // [0] serves the newest arch
  std::vector<std::string> dropped;  // kernels that did not compile: "KEY: first log line"
};

struct PackBuildReport {
  std::string choices;  // the manifest's "choices"
  std::vector<std::string> archs;  // the pack's
  // What the build decided on its own that the user should hear: a default arch left out.
  std::vector<std::string> warnings;
  std::vector<OpBuildReport> ops;
  int kernels_compiled = 0;
  int kernels_cached = 0;      // of them, taken from a cache (the kernel cache, CPU objects')
  double compile_seconds = 0;  // wall time of the kernel compiles (NVRTC, or a CPU's objects)
  PackFiles files;
  double total_seconds = 0;
  // The timing noise the trees were fitted with (TreeFitOptions::timing_noise) and where that
  // figure came from, for the caller to fill in and print.
  double timing_noise = 0;
  std::string timing_noise_from;
  double portable_margin = 0;  // the margin the dispatchers were fitted with (PackBuildOptions)
  // Some dispatcher chose between kernels of its own arch and kernels every arch runs, so the
  // margin took part (a pack of one ISA level has none such).
  bool portable_margin_applied = false;
};

PackBuildReport build_pack(const Workload& workload, ChoicesProvider& choices,
                           ChoicesProvider& fallback, Compiler& compiler,
                           const std::filesystem::path& library, const PackBuildOptions& options);

}  // namespace dietcode

// Everything a kernel pack is generated from: per op the chosen kernels (micro-kernel,
// generated source and launch plan, compiled binaries), the dispatcher over them, and the
// tuning results that explain its choices. The pack generator (pack_source.h) turns this into
// C++ and a header; the pack writer (pack_writer.h) compiles them into libNAME.so.
#pragma once

#include <string>
#include <vector>

#include "codegen/generated_kernel.h"
#include "dispatch/decision_tree.h"
#include "nvrtc/compiler.h"
#include "space/target.h"
#include "space/micro_kernel.h"
#include "workload/workload.h"

namespace dietcode {

struct PackKernel {
  MicroKernel mk;
  GeneratedKernel generated;
  // GPU: a CUBIN per pack arch, and PTX. CPU: a shared object for the template's ISA level,
  // proof that it compiles; the pack compiles the generated source again, into an object.
  CompileResult compiled;
};

// The tuned instances of an op as the pack's kernels see them, kept in the manifest so that
// `inspect --shape` can show the measured time of the chosen kernel and of the runner-up.
struct PackInstances {
  std::vector<std::vector<int64_t>> values;  // parallel to the op's vars
  std::vector<double> weight;
  std::vector<double> best_us;                    // best measured over every kernel tuned
  std::vector<std::vector<double>> latency_us;    // [instance][pack kernel], NaN = unknown
  std::vector<std::vector<double>> predicted_us;  // empty, or like latency_us
};

// A dispatcher and the target archs it serves. Most packs have one for all their archs; a
// pack whose kernels include arch-specific ones (wgmma, sm_90a only) has one tree over every
// kernel for that arch and one without them for the others (sm_80 in a sm_80,sm_90a pack).
struct PackDispatcher {
  std::vector<std::string> archs;  // "sm_80", "sm_90a"; "x86-64-v3"
  DecisionTree tree;               // leaves are kernel ids
};

struct PackOp {
  const OpSpec* op = nullptr;
  std::vector<PackKernel> kernels;  // kernel id = index, the manifest's order
  // At least one. dispatchers[0] serves the newest arch of the pack and answers
  // dietcode_select; dietcode_select_arch and dietcode_launch pick by the GPU's arch.
  std::vector<PackDispatcher> dispatchers;
  PackInstances instances;  // may be empty (an untuned pack)
};

struct PackRequest {
  const Workload* workload = nullptr;
  Target target = Target::kCuda;   // which machines the kernels run on (pack_target.h)
  std::vector<PackOp> ops;         // in workload order
  std::vector<std::string> archs;  // "sm_80", "sm_90", "sm_90a"; "x86-64-v3", "x86-64-v4"
  // Where the choices came from, for the manifest and for people: "measured", or
  // "template defaults (untuned)", "cost model (predicted)".
  std::string choices;
  // The timing noise the dispatchers were fitted for (TreeFitOptions::timing_noise); 0: the
  // times were taken as exact.
  double timing_noise = 0;
  // The margin the dispatchers of archs with kernels of their own were fitted with
  // (PackBuildOptions::portable_margin); 0: none, or no dispatcher had both kinds to choose
  // from.
  double portable_margin = 0;
};

}  // namespace dietcode

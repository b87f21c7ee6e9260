// The machine a search compiles, measures and models for: a target and that target's figures.
// Stages that are not the target's own carry it whole and hand it to the target's code (the
// cost model's features and analytic terms), instead of asking which it is.
#pragma once

#include "space/cpu_spec.h"
#include "space/gpu_spec.h"
#include "space/target.h"

namespace dietcode {

struct MachineSpec {
  Target target = Target::kCuda;
  GpuSpec gpu;  // when target is kCuda
  CpuSpec cpu;  // when target is kCpu

  MachineSpec() = default;
  // A GPU: what every stage meant before the CPU target, so GPU callers read as they did.
  MachineSpec(GpuSpec g) : gpu(std::move(g)) {}  // NOLINT: implicit on purpose
  static MachineSpec of_cpu(CpuSpec c) {
    MachineSpec m;
    m.target = Target::kCpu;
    m.cpu = std::move(c);
    return m;
  }
};

}  // namespace dietcode

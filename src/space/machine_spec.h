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
  // The most a launch can cost: the ceiling of the launch overhead the cost model fits. A GPU
  // launch costs a few microseconds; a CPU kernel's launch wakes the pool's sleeping threads,
  // tens of microseconds on a virtual machine.
  double max_launch_overhead_us = 5.0;

  MachineSpec() = default;
  // A GPU: what every stage meant before the CPU target, so GPU callers read as they did.
  MachineSpec(GpuSpec g) : gpu(std::move(g)) {}  // NOLINT: implicit on purpose
  static MachineSpec of_cpu(CpuSpec c) {
    MachineSpec m;
    m.target = Target::kCpu;
    m.cpu = std::move(c);
    m.max_launch_overhead_us = 100.0;
    return m;
  }
};

}  // namespace dietcode

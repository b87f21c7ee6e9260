// The host CPU as the CPU target's search and cost model see it (space/cpu_spec.h): its caches
// and ISA from detect_host_cpu, plus two short probes run here, because a cost model built on
// a datasheet's numbers would be wrong on every VM and every turbo setting: the fp32 FMA peak of
// one thread at each vector width it has, and the bandwidth all threads together stream from
// memory. About 0.3 s in all.
#pragma once

#include "space/cpu_spec.h"
#include "x86/host_cpu.h"

namespace dietcode {

// `threads` workers a kernel gets (0: every CPU of the affinity mask).
CpuSpec host_cpu_spec(const HostCpu& cpu, int threads);

// GB/s that `threads` pinned threads reach summing a buffer of `bytes` (far larger than the
// last-level cache), best of 3 passes.
double memory_read_gbs(int threads, int64_t bytes);

}  // namespace dietcode

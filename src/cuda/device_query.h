// The GPUs on this machine, described as GpuSpecs: the limits the search enumerates
// micro-kernels within, read from the driver, so a present GPU's own limits win over any
// shipped config (SPEC §6).
#pragma once

#include <cstddef>
#include <vector>

#include "space/gpu_spec.h"

namespace dietcode {

// Every GPU the driver sees, in ordinal order, with queried = true and id "device<N>".
// Throws EnvironmentError when there is no driver or no GPU.
std::vector<GpuSpec> query_devices();

// One GPU; throws EnvironmentError when there is no such device.
GpuSpec query_device(int ordinal);

// Its global memory in bytes.
size_t device_total_memory(int ordinal);

// Peak DRAM bandwidth from the memory clock (kHz) and bus width (bits): two transfers a clock,
// as NVIDIA's figures count them for HBM and GDDR alike (H100 SXM: 2619 MHz x 5120 bit -> 3352
// GB/s). 0 when either is unknown.
double memory_bandwidth_gbs(int memory_clock_khz, int bus_width_bits);

}  // namespace dietcode

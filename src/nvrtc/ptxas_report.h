// Reads the resource report ptxas prints with --ptxas-options=-v (NVRTC appends it to the program
// log, GPU or no GPU). The report is how a candidate's registers and spills are known before it
// ever runs: a candidate that spills is discarded by the search.
//
// The lines this parser understands (CUDA 12-13; fields may be missing or reordered):
//   ptxas info    : Compiling entry function 'NAME' for 'sm_90'
//   ptxas info    : Function properties for NAME
//   ptxas         .     1264 bytes stack frame, 2376 bytes spill stores, 2492 bytes spill loads
//   ptxas info    : Used 32 registers, used 1 barriers, 8192 bytes smem, 368 bytes cmem[0]
// Every other line (warnings, compile times, "Overriding maximum register limit") is ignored.
#pragma once

#include <string>
#include <vector>

#include "nvrtc/compiler.h"

namespace dietcode {

struct PtxasReport {
  std::vector<KernelResources> entries;    // __global__ functions, in report order
  std::vector<KernelResources> functions;  // non-inlined __device__ functions (registers 0)
};

// Parses one compile's log. Lines it does not recognise are skipped, so a log with no ptxas
// report (a compile error, a compute_XX target) gives an empty report.
PtxasReport parse_ptxas_report(const std::string& log);

// The per-entry resources a search should judge a kernel by. ptxas does not say which entry
// calls which __device__ function, so the spill bytes of every non-inlined function are added to
// every entry: a spill anywhere in the program disqualifies it either way.
std::vector<KernelResources> entry_resources(const PtxasReport& report);

}  // namespace dietcode

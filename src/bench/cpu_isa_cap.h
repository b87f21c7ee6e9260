// `dietcode bench --arch LEVEL` on a CPU pack: every contender held to the instructions of one
// x86-64 level, so that an AVX-512 host measures what an AVX2 (x86-64-v3) server would run,
// the pack and both baselines alike. Each library reads its cap from the environment when it
// first loads or runs, so the cap is set before any of them does:
//   the pack  DIETCODE_CPU_LEVEL=N (pack_abi.h): its dispatcher of the highest level <= N
//   oneDNN    ONEDNN_MAX_CPU_ISA (DNNL_MAX_CPU_ISA too, which 2.x also reads): AVX2, AVX512_CORE
//   OpenBLAS  OPENBLAS_CORETYPE: Haswell, SkylakeX (a DYNAMIC_ARCH build, as Debian's is)
// What each then runs is read back (CpuBaseline::instruction_set) and reported, so a library
// that ignored its cap shows in the report rather than skewing it silently.
#pragma once

#include <string>
#include <vector>

namespace dietcode {

// Sets the variables above for `level` (3: x86-64-v3, 4: x86-64-v4), overwriting any already
// set. std::invalid_argument for another level.
void apply_cpu_isa_cap(int level);

// The level a pack with kernels for `pack_levels` ("x86-64-v3", ...) runs at on a CPU of
// `host_level` capped at `cap` (0: no cap): the highest of its levels not above either; 0 when
// none is.
int pack_run_level(const std::vector<std::string>& pack_levels, int host_level, int cap);

}  // namespace dietcode

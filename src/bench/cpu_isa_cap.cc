#include "bench/cpu_isa_cap.h"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "x86/host_cpu.h"

namespace dietcode {

namespace {

struct LibraryNames {
  const char* onednn;    // a ONEDNN_MAX_CPU_ISA value
  const char* openblas;  // an OPENBLAS_CORETYPE value
};

LibraryNames library_names(int level) {
  // The oldest core of each level whose kernels the libraries ship: Haswell introduced AVX2
  // and FMA, Skylake-SP the AVX-512 subset x86-64-v4 names.
  if (level == 3) return {"AVX2", "Haswell"};
  if (level == 4) return {"AVX512_CORE", "SkylakeX"};
  throw std::invalid_argument("apply_cpu_isa_cap: level " + std::to_string(level) +
                              " (expected 3 or 4)");
}

}  // namespace

void apply_cpu_isa_cap(int level) {
  const LibraryNames names = library_names(level);
  setenv("DIETCODE_CPU_LEVEL", std::to_string(level).c_str(), 1);
  setenv("ONEDNN_MAX_CPU_ISA", names.onednn, 1);
  setenv("DNNL_MAX_CPU_ISA", names.onednn, 1);
  setenv("OPENBLAS_CORETYPE", names.openblas, 1);
}

int pack_run_level(const std::vector<std::string>& pack_levels, int host_level, int cap) {
  const int limit = cap > 0 ? std::min(host_level, cap) : host_level;
  int best = 0;
  for (const std::string& name : pack_levels) {
    int level = 0;
    try {
      level = isa_level_number(name);
    } catch (const std::exception&) {
      continue;  // not an x86-64 level (a GPU arch): never this CPU's
    }
    if (level <= limit) best = std::max(best, level);
  }
  return best;
}

}  // namespace dietcode

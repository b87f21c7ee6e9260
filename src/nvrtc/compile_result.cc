#include "nvrtc/compiler.h"

namespace dietcode {

bool CompileResult::spills() const {
  for (const ArchBinary& binary : binaries)
    for (const KernelResources& r : binary.resources)
      if (r.spill_stores > 0 || r.spill_loads > 0) return true;
  return false;
}

const ArchBinary* CompileResult::binary(const std::string& arch) const {
  for (const ArchBinary& b : binaries)
    if (b.arch == arch) return &b;
  return nullptr;
}

}  // namespace dietcode

// One dense_f32 kernel through the project's NvrtcCompiler for one arch, with the ptxas report
// per entry; shared by the nvrtc and gpu test layers (header-only, so neither links the
// other's helpers).
#pragma once

#include <string>
#include <vector>

#include "nvrtc/compiler.h"
#include "nvrtc/nvrtc_compiler.h"

namespace dietcode::testing {

struct NvrtcBuild {
  bool ok = false;
  std::string log;
  std::string cubin;
  double seconds = 0;
  std::vector<KernelResources> resources;  // one per entry, from the ptxas report

  const KernelResources* entry(const std::string& name) const {
    for (const auto& r : resources)
      if (r.entry == name) return &r;
    return nullptr;
  }
};

inline NvrtcBuild nvrtc_build(const std::string& name, const std::string& source,
                              const std::vector<std::string>& options, const std::string& arch) {
  static NvrtcCompiler compiler;  // thread-safe: compile() keeps no state between calls
  CompileRequest request;
  request.name = name;
  request.source = source;
  request.options = options;
  request.archs = {arch};
  request.want_ptx = false;
  const CompileResult result = compiler.compile(request);
  NvrtcBuild build;
  build.log = result.log;
  build.seconds = result.seconds;
  if (const ArchBinary* bin = result.binary(arch)) {
    build.cubin = bin->cubin;
    build.resources = bin->resources;
  }
  build.ok = result.ok && !build.cubin.empty();
  return build;
}

}  // namespace dietcode::testing

// A minimal NVRTC front end for the dense_f32 template tests: compile one generated kernel for
// one arch with the ptxas report on, and read registers and spills out of that report.
// Header-only so the gpu layer can share it without linking another test's helpers.
#pragma once

#include <nvrtc.h>

#include <chrono>
#include <regex>
#include <string>
#include <vector>

#include "nvrtc/compiler.h"

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

// Parses ptxas -v lines:
//   ptxas info    : Compiling entry function 'NAME' for 'sm_90'
//   N bytes stack frame, N bytes spill stores, N bytes spill loads
//   ptxas info    : Used N registers, ... N bytes smem ...
inline std::vector<KernelResources> parse_ptxas_report(const std::string& log) {
  std::vector<KernelResources> out;
  static const std::regex entry_re(R"(Compiling entry function '([^']+)')");
  static const std::regex frame_re(
      R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex regs_re(R"(Used (\d+) registers)");
  static const std::regex smem_re(R"((\d+) bytes smem)");
  size_t start = 0;
  while (start < log.size()) {
    size_t end = log.find('\n', start);
    if (end == std::string::npos) end = log.size();
    const std::string line = log.substr(start, end - start);
    start = end + 1;
    std::smatch m;
    if (std::regex_search(line, m, entry_re)) {
      out.push_back(KernelResources{});
      out.back().entry = m[1];
    } else if (out.empty()) {
      continue;
    } else if (std::regex_search(line, m, frame_re)) {
      out.back().stack_frame = std::stoi(m[1]);
      out.back().spill_stores = std::stoi(m[2]);
      out.back().spill_loads = std::stoi(m[3]);
    } else if (std::regex_search(line, m, regs_re)) {
      out.back().registers = std::stoi(m[1]);
      if (std::regex_search(line, m, smem_re)) out.back().static_smem = std::stoi(m[1]);
    }
  }
  return out;
}

inline NvrtcBuild nvrtc_build(const std::string& name, const std::string& source,
                              const std::vector<std::string>& options, const std::string& arch) {
  NvrtcBuild build;
  const auto t0 = std::chrono::steady_clock::now();
  nvrtcProgram prog;
  if (nvrtcCreateProgram(&prog, source.c_str(), name.c_str(), 0, nullptr, nullptr) !=
      NVRTC_SUCCESS) {
    build.log = "nvrtcCreateProgram failed";
    return build;
  }
  std::vector<std::string> all = options;
  all.push_back("--gpu-architecture=" + arch);
  all.push_back("--ptxas-options=-v");
  std::vector<const char*> argv;
  for (const auto& o : all) argv.push_back(o.c_str());
  const nvrtcResult rc = nvrtcCompileProgram(prog, int(argv.size()), argv.data());
  size_t log_size = 0;
  nvrtcGetProgramLogSize(prog, &log_size);
  build.log.resize(log_size);
  if (log_size) nvrtcGetProgramLog(prog, build.log.data());
  if (rc == NVRTC_SUCCESS) {
    size_t size = 0;
    nvrtcGetCUBINSize(prog, &size);
    build.cubin.resize(size);
    if (size) nvrtcGetCUBIN(prog, build.cubin.data());
    build.ok = size > 0;
  }
  nvrtcDestroyProgram(&prog);
  build.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  build.resources = parse_ptxas_report(build.log);
  return build;
}

}  // namespace dietcode::testing

// The machines dietcode compiles for. A template belongs to one target; everything that is
// not the target's own (workload, search, cost model, decision tree, log, manifest) learns of
// targets through this one field, and each stage picks its target's implementation behind its
// seam (Compiler, Measurer, code generation, pack runtime) instead of branching on it.
//   cuda  NVIDIA GPUs: templates/*.cu through NVRTC, timed by the CUDA driver
//   cpu   x86-64 CPUs: templates/x86/ through the system C++ compiler, timed on the host
#pragma once

#include <optional>
#include <string>

namespace dietcode {

enum class Target { kCuda, kCpu };

const char* to_string(Target target);                       // "cuda", "cpu"
std::optional<Target> parse_target(const std::string& text);  // the inverse; nullopt otherwise

}  // namespace dietcode

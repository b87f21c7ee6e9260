// The compile half of a round: generate each selected micro-kernel's source, compile them all
// in parallel (through the caching compiler, so a resumed or repeated run pays nothing for
// kernels it has compiled before), and sort the results:
//   ready                  compiled, fits the GPU, a binary not seen before: measure it;
//   compile_error          NVRTC rejected it (recorded, never retried);
//   device_limits_exceeded it spills registers, or its registers or shared memory exceed what
//                          one block may have (recorded, never retried);
//   duplicate              the same CUBIN as a kernel already compiled for this op (different
//                          tunables can yield the same code): measuring it again would teach
//                          nothing, so it is skipped without a record.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "codegen/generated_kernel.h"
#include "measure/measurer.h"
#include "nvrtc/compiler.h"
#include "nvrtc/parallel_compile.h"
#include "space/gpu_spec.h"
#include "workload/workload.h"

namespace dietcode {

struct CompiledCandidate {
  MicroKernel mk;
  GeneratedKernel kernel;
  CompileResult compiled;
  MeasureStatus status = MeasureStatus::kOk;  // kOk: ready to measure
  std::string error;                          // one line, when status is not kOk
  std::string duplicate_of;                   // key of the kernel with the same binary
  bool ready() const { return status == MeasureStatus::kOk && duplicate_of.empty(); }
};

// Binaries already compiled for one op, by content.
class BinarySet {
 public:
  // The key of a kernel seen before with the same bytes, else "" after remembering this one.
  std::string check_and_add(const std::string& key, const std::string& binary);

 private:
  std::multimap<uint64_t, std::pair<std::string, std::string>> seen_;  // hash -> (key, bytes)
};

// The first error line of an NVRTC log, trimmed to one line of at most 200 characters.
std::string first_error_line(const std::string& log);

// The main entry's ptxas report for `arch`, or null.
const KernelResources* main_entry_resources(const CompileResult& result, const LaunchPlan& plan,
                                            const std::string& arch);

struct CompileStepOptions {
  std::string arch;  // the measuring device's, "sm_90"
  int jobs = 0;
  // DeviceIdentity::constant_weights: CPU kernels that pack B also get their constant-weights
  // entries, and their plans name them, so the measurer times them reading prepacked weights.
  bool constant_weights = false;
};

std::vector<CompiledCandidate> compile_candidates(Compiler& compiler, const OpSpec& op,
                                                  const std::vector<MicroKernel>& mks,
                                                  const GpuSpec& gpu,
                                                  const CompileStepOptions& options,
                                                  BinarySet& binaries, CompileStats* stats);

}  // namespace dietcode
